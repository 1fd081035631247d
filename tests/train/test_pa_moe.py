"""PA-MoE: switch gate, load balance, experts as LoRA adapters, router training, save/load, agent."""

from __future__ import annotations

import pytest
import torch

import agentgym
from agentgym.agents import pa_moe as pm
from agentgym.agents.pa_moe import train as pmt
from agentgym.rollout import rollout
from agentgym.task import TaskSuite
from agentgym.train.policy import load_model, load_tokenizer

pytest.importorskip("peft")
CFG = pm.PAMoEConfig(num_experts=3, lora_r=4, lora_dropout=0.0, router_dim=16, window=3)


@pytest.fixture
def policy(tiny_model):
    torch.manual_seed(0)
    return pm.PAMoEPolicy(load_model(tiny_model), load_tokenizer(tiny_model), CFG)


def _set_transition(policy, bias: float) -> None:
    with torch.no_grad():
        last = policy.router.transition[-1]
        last.weight.zero_()
        last.bias.fill_(bias)


def test_switch_gate():
    assert pm.switch_gate(None, 2, 0.0, 0.5) == 2  # the first step takes the argmax
    assert pm.switch_gate(1, 2, 0.6, 0.5) == 2
    assert pm.switch_gate(1, 2, 0.5, 0.5) == 1  # not above the threshold
    assert pm.switch_gate(1, 1, 0.9, 0.5) == 1


def test_load_balance_loss_exact():
    assert float(pm.load_balance_loss(torch.full((5, 4), 0.25))) == 0.0
    one_hot = torch.tensor([[1.0, 0, 0, 0]] * 3)
    expected = 0.01 * ((0.75**2) + 3 * 0.25**2) / 4
    assert float(pm.load_balance_loss(one_hot)) == pytest.approx(expected)


def test_temperature_anneals_to_its_floor():
    cfg = pm.PAMoEConfig(tau_start=1.0, tau_end=0.2, tau_decay=0.5)
    assert [pm.temperature(cfg, n) for n in range(4)] == [1.0, 0.5, 0.25, 0.2]


def test_experts_are_separate_adapters_on_a_frozen_base(policy):
    trainable = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    x = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        for n, p in policy.model.named_parameters():
            if "lora_B" in n and "expert_1" in n:
                p.normal_(0, 0.5)
        outs = []
        for k in range(3):
            policy.use(k)
            outs.append(policy.model(input_ids=x).logits)
    assert torch.equal(outs[0], outs[2])  # untouched adapters (B = 0) leave the base as is
    assert not torch.allclose(outs[0], outs[1])


def test_greedy_routing_switches_only_through_the_gate(policy):
    state = policy.start("put a hot apple in fridge.")
    _set_transition(policy, -50.0)  # transition ~ 0: the gate stays shut
    routes = [policy.route(state, f"You see cabinet {i}.") for i in range(6)]
    assert len({r.expert for r in routes}) == 1 and not any(r.switched for r in routes)
    assert len(state.observations) == CFG.window
    _set_transition(policy, 50.0)  # transition ~ 1: the expert follows the argmax
    routes = [policy.route(state, text) for text in ["a", "You pick up the apple 1.", "b c d"]]
    for r in routes:
        assert r.expert == r.proposed == max(range(3), key=lambda k: r.probs[k])
        assert r.switched == (r.prev is not None and r.expert != r.prev)


def test_observation_only_router_ignores_the_goal(tiny_model):
    torch.manual_seed(0)
    cfg = CFG.model_copy(update={"goal_aware": False})
    p = pm.PAMoEPolicy(load_model(tiny_model), load_tokenizer(tiny_model), cfg)
    a = p.route(p.start("heat an apple"), "You see a fridge 1.")
    b = p.route(p.start("examine a book"), "You see a fridge 1.")
    assert a.probs == b.probs
    torch.manual_seed(0)
    q = pm.PAMoEPolicy(load_model(tiny_model), load_tokenizer(tiny_model), CFG)
    c = q.route(q.start("heat an apple"), "You see a fridge 1.")
    d = q.route(q.start("examine a book"), "You see a fridge 1.")
    assert c.probs != d.probs


def test_router_loss_trains_every_router_part_and_penalises_switches(policy):
    torch.manual_seed(1)
    state = policy.start("cool a mug")
    routes = [policy.route(state, t, sample_tau=1.0) for t in ["x", "y", "z", "w"]]
    for r in routes[1:]:
        r.switched, r.prev = True, (r.proposed + 1) % 3
    loss, parts = pmt.router_loss(policy.router, routes, [0.0] * 4, CFG, tau=1.0)
    loss.backward()
    for name, p in policy.router.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    assert parts["load_balance"] >= 0.0
    # REINFORCE direction: the penalty alone lowers a switched proposal; an advantage raises it
    cfg = CFG.model_copy(update={"lb_coef": 0.0, "switch_penalty": 1.0})
    r = routes[1]
    for adv, switched, falls in [(0.0, True, True), (1.0, False, False)]:
        r.switched = switched
        opt = torch.optim.SGD(policy.router.parameters(), lr=0.5)
        before = policy.router.decide(r.observations, r.goal)[0].softmax(-1)[r.proposed].item()
        for _ in range(3):
            opt.zero_grad()
            pmt.router_loss(policy.router, [r], [adv], cfg, tau=1.0)[0].backward()
            opt.step()
        after = policy.router.decide(r.observations, r.goal)[0].softmax(-1)[r.proposed].item()
        assert (after < before) == falls
    with pytest.raises(ValueError, match="advantages"):
        pmt.router_loss(policy.router, routes, [0.0], CFG, tau=1.0)


def test_expert_loss_moves_only_the_experts_that_acted(policy):
    ids = policy.tokenizer("go to fridge 1", add_special_tokens=False)["input_ids"]
    loss = pmt.expert_loss(policy, [(ids, 2, 1, 1.0), (ids, 3, 1, -0.5)])
    loss.backward()
    grads = {
        k: sum(
            float(p.grad.abs().sum())
            for n, p in policy.model.named_parameters()
            if f".expert_{k}." in n and p.grad is not None
        )
        for k in range(3)
    }
    assert grads[1] > 0 and grads[0] == 0 and grads[2] == 0


def test_save_load_and_agent_spec(policy, tmp_path):
    with torch.no_grad():
        for n, p in policy.model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.1)
    path = policy.save(tmp_path / "moe")
    loaded = pm.PAMoEPolicy.load(path)
    s1, s2 = policy.start("find a pen"), loaded.start("find a pen")
    for text in ["You see a desk 1.", "You open the drawer 1."]:
        a, b = policy.route(s1, text), loaded.route(s2, text)
        assert a.probs == pytest.approx(b.probs, abs=1e-6) and a.expert == b.expert
    x = torch.tensor([[5, 6, 7]])
    for k in range(3):
        policy.use(k)
        loaded.use(k)
        with torch.no_grad():
            assert torch.allclose(
                policy.model(input_ids=x).logits, loaded.model(input_ids=x).logits, atol=1e-6
            )
    env = agentgym.make("Clarify-v0")
    agent = pm.pa_moe_agent(str(path), env)
    agent.max_tokens = 6
    ep = rollout(env, agent, TaskSuite.load("clarify/test").tasks[0], seed=0, max_steps=3)
    assert len(ep.steps) == len(agent.routes) == 3
    with pytest.raises(FileNotFoundError, match="PA-MoE"):
        pm.PAMoEPolicy.load(tmp_path)
