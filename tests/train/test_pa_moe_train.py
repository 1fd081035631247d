"""PA-MoE through the trainer: routed rollouts are token-exact under each step's expert, the
router's loss is as documented, 2-step runs train router and adapters, checkpoints reload as the
``pa_moe:PATH`` agent and resume."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("peft")

import agentgym  # noqa: E402
from agentgym.agents import pa_moe as pm  # noqa: E402
from agentgym.agents.pa_moe import train as pmt  # noqa: E402  (registers model.policy: pa_moe)
from agentgym.llm.engine import load_engine  # noqa: E402
from agentgym.llm.sampling import SamplingSpec  # noqa: E402
from agentgym.rollout import rollout  # noqa: E402
from agentgym.task import TaskSuite, write_tasks  # noqa: E402
from agentgym.testing.noop import noop_suite  # noqa: E402
from agentgym.train.batch import build_batch  # noqa: E402
from agentgym.train.chat import ChatFormat  # noqa: E402
from agentgym.train.config import (  # noqa: E402
    RolloutConfig,  # noqa: E402
    TrainConfig,
    load_config,
    set_dotted,
)
from agentgym.train.envpool import LocalEnvPool  # noqa: E402
from agentgym.train.policy import load_tokenizer, token_logprobs  # noqa: E402
from agentgym.train.rollout import Job, collect  # noqa: E402
from agentgym.train.trainer import Trainer  # noqa: E402

OPTIONS = {"num_experts": 3, "lora_r": 4, "lora_dropout": 0.0, "router_dim": 16, "window": 3}


def _cfg(model, out, **over) -> TrainConfig:
    base = {
        "model": {"path": str(model), "policy": "pa_moe", "policy_options": OPTIONS},
        "env": {"id": "Household-v0", "suite": "household/train", "limit": 12},
        "rollout": {"tasks_per_step": 2, "group_size": 2, "max_turns": 3, "max_tokens": 6},
        "algo": {"name": "grpo", "layout": "step"},
        "optim": {"lr": 3e-3},
        "steps": 2,
        "out_dir": str(out),
        "threads": 1,
    }
    for key, value in over.items():
        set_dotted(base, key, value)
    return TrainConfig.model_validate(base)


def _experts(model, k: int) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if f".expert_{k}." in n}


def _router(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in trainer.policy.policy.router.state_dict().items()}


def _changed(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return any(not torch.equal(a[k], b[k]) for k in a)


# ============================================================================ routed rollouts
@pytest.fixture(scope="module")
def routed(tiny_model):
    """Household episodes rolled out with sampled routes over 3 experts that really differ."""
    torch.set_num_threads(1)  # as the trainer runs (cfg.threads); small ops crawl on a busy box
    torch.manual_seed(0)
    tok = load_tokenizer(tiny_model)
    hook = pmt.trainer_policy(tiny_model, "cpu", OPTIONS, tok)
    with torch.no_grad():
        for n, p in hook.model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.2)
    tasks = TaskSuite.load("household/train").tasks[:3]
    jobs = [Job(t, t.id, k, k) for t in tasks for k in range(2)]
    hook.model.eval()
    episodes, _ = collect(
        load_engine("local", hook.model, 8, tokenizer=tok),
        ChatFormat(tok, system_prompt=False),
        LocalEnvPool("Household-v0"),
        jobs,
        RolloutConfig(max_turns=4),
        SamplingSpec(max_tokens=6, temperature=1.0),
        seed=1,
        picker=hook.adapter_picker(0, explore=True, seed=2),
    )
    return hook, episodes


def test_every_turn_records_its_expert_and_route(routed):
    hook, episodes = routed
    turns = [t for ep in episodes for t in ep.turns]
    assert all(ep.ok for ep in episodes) and len(turns) == 6 * 4
    assert all(t.adapter == t.adapter_record.expert and t.adapter_record.tau == 1.0 for t in turns)
    assert len({t.adapter for t in turns}) == 3, "sampled routes should use every expert"
    assert any(t.adapter_record.switched for t in turns)
    metrics = pmt.routing_metrics(episodes, 3)
    assert sum(metrics[f"expert_share_{k}"] for k in range(3)) == pytest.approx(1.0)
    per_episode = [sum(t.adapter_record.switched for t in ep.turns) for ep in episodes]
    assert metrics["switches"] == pytest.approx(sum(per_episode) / len(episodes))
    # the router's record replays: the logprob of each choice under the same router and tau
    replay = pm.route_logprobs(hook.policy.router, [t.adapter_record for t in turns], 1.0)[0]
    assert torch.allclose(
        replay, torch.tensor([t.adapter_record.logprob for t in turns]), atol=1e-5
    )


@pytest.mark.parametrize("layout", ["step", "episode"])
def test_rollout_logprobs_equal_teacher_forcing_under_the_routed_expert(routed, layout):
    hook, episodes = routed
    batch = build_batch(episodes, None, layout)
    mask = batch.loss_mask.bool()
    hook.bind(episodes, [])
    with torch.no_grad():
        logp = token_logprobs(hook.model, batch)[0]
    assert torch.allclose(logp[mask], batch.old_logprobs[mask], atol=1e-4)
    # the control: the same tokens under the wrong experts are not the recorded logprobs
    hook.model.bind([(e >= 0) * ((e + 1) % 3) - (e < 0) for e in hook.model._experts])
    with torch.no_grad():
        wrong = token_logprobs(hook.model, batch)[0]
    assert not torch.allclose(wrong[mask], batch.old_logprobs[mask], atol=1e-2)
    # with the adapters off (the KL reference) every row is the base model's, whatever the route
    with torch.no_grad(), hook.model.disable_adapter():
        off = token_logprobs(hook.model, batch)[0]
        base = token_logprobs(hook.model.get_base_model(), batch)[0]
    assert torch.allclose(off, base, atol=1e-6) and not torch.allclose(off[mask], logp[mask])


def test_switch_penalty_and_load_balance_change_the_loss_as_stated(routed):
    hook, episodes = routed
    routes = [t.adapter_record for ep in episodes for t in ep.turns]
    advantages = [0.5 * ((i % 3) - 1) for i in range(len(routes))]
    cfg = pm.PAMoEConfig.model_validate(OPTIONS)
    plain = cfg.model_copy(update={"switch_penalty": 0.0, "lb_coef": 0.0})
    tau = 0.7

    def loss(c):
        return float(pmt.router_loss(hook.policy.router, routes, advantages, c, tau)[0])

    with torch.no_grad():
        logp, probs = pm.route_logprobs(hook.policy.router, routes, tau)
        switched = torch.tensor([float(r.switched) for r in routes])
        adv = torch.tensor(advantages)
        assert loss(plain) == pytest.approx(float(-(adv * logp).mean()), abs=1e-6)
        # lambda * 1[e_t != e_t-1] comes off each step's advantage
        penalised = loss(plain.model_copy(update={"switch_penalty": 0.3}))
        stated = loss(plain) + float(0.3 * (switched * logp).mean())
        assert penalised == pytest.approx(stated, abs=1e-6) and penalised != loss(plain)
        # 0.01 * mean((mean_batch p - 1/K)^2), p the phase distributions the router gave
        recorded = torch.tensor([r.probs for r in routes])
        assert torch.allclose(probs, recorded, atol=1e-6)
        lb = 0.01 * ((recorded.mean(0) - 1 / 3) ** 2).mean()
        with_lb = plain.model_copy(update={"lb_coef": 0.01})
        total, parts = pmt.router_loss(hook.policy.router, routes, advantages, with_lb, tau)
        assert parts["load_balance"] == pytest.approx(float(lb), rel=1e-5) and float(lb) > 0
        assert float(total) == pytest.approx(loss(plain) + float(lb), abs=1e-6)
    # the trainer hook feeds each route the mean advantage over its step's action tokens
    arrays = []
    for i, ep in enumerate(episodes):
        a = torch.zeros(len(ep.ids)).numpy()
        for j, t in enumerate(ep.turns):
            a[t.action_start : t.action_end] = i + j / 10
        arrays.append(a)
    hook.bind(episodes, arrays)
    expected = [i + j / 10 for i, ep in enumerate(episodes) for j in range(len(ep.turns))]
    assert hook.step_advantages == pytest.approx(expected)


def test_gumbel_sampling_follows_the_temperature():
    logits = torch.tensor([1.0, 0.0, -1.0])
    gen = torch.Generator().manual_seed(0)
    draws = torch.tensor([pm._gumbel_argmax(logits, 1.0, gen) for _ in range(3000)])
    freq = torch.bincount(draws, minlength=3).float() / len(draws)
    assert torch.allclose(freq, torch.softmax(logits, -1), atol=0.03)
    hot = torch.tensor([pm._gumbel_argmax(logits, 4.0, gen) for _ in range(3000)])
    freq_hot = torch.bincount(hot, minlength=3).float() / len(hot)
    assert torch.allclose(freq_hot, torch.softmax(logits / 4.0, -1), atol=0.03)
    assert all(pm._gumbel_argmax(logits, 0.05, gen) == 0 for _ in range(200))


# ============================================================================ trainer runs
@pytest.fixture(scope="module")
def household_run(tiny_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("pa_moe_household")
    cfg = _cfg(tiny_model, out, **{"env.eval_suite": "household/valid_unseen", "env.eval_limit": 2})
    trainer = Trainer(cfg)
    router, experts = _router(trainer), [_experts(trainer.model, k) for k in range(3)]
    metrics = trainer.run()
    return trainer, router, experts, metrics, out / "final"


def test_two_household_steps_train_the_router(household_run):
    trainer, router, experts, metrics, final = household_run
    assert _changed(router, _router(trainer))
    assert metrics["router_tau"] == pm.temperature(trainer.policy.cfg, 1)
    assert sum(metrics[f"expert_share_{k}"] for k in range(3)) == pytest.approx(1.0)
    assert "switches" in metrics and "load_balance" in metrics and "router_pg" in metrics
    # every episode of the tiny random policy fails: tied groups, zero advantages, so the
    # adapters get no policy gradient (the router still learns its switching penalty)
    assert metrics["acr"] == 1.0
    assert not any(_changed(experts[k], _experts(trainer.model, k)) for k in range(3))
    for name in [
        "router.safetensors",
        "pa_moe.json",
        "trainer_state.json",
        "expert_0/adapter_config.json",
    ]:
        assert (final / name).is_file(), name


def test_checkpoint_reloads_and_evaluates_via_the_agent_spec(household_run):
    trainer, _, _, _, final = household_run
    evaluated = trainer.evaluate()  # greedy routes through the trainer
    assert evaluated["eval_n"] == 2.0 and evaluated["eval_errors"] == 0.0
    env = agentgym.make("Household-v0")
    agent = pm.pa_moe_agent(str(final), env)
    loaded = agent.policy
    from agentgym.chat_agent import hf_agent

    assert isinstance(hf_agent(str(final), env), type(agent))  # hf:PATH finds the router too
    assert not _changed(_router(trainer), loaded.router.state_dict())
    x = torch.tensor([[5, 6, 7, 8]])
    for k in range(3):
        trainer.policy.policy.use(k)
        loaded.use(k)
        with torch.no_grad():
            assert torch.allclose(
                trainer.model(input_ids=x).logits, loaded.model(input_ids=x).logits, atol=1e-6
            )
    a, b = trainer.policy.policy.start("put a mug in desk."), loaded.start("put a mug in desk.")
    for text in ["You arrive at desk 1.", "You pick up the mug 1 from the shelf 2."]:
        ra, rb = trainer.policy.policy.route(a, text), loaded.route(b, text)
        assert ra.expert == rb.expert and ra.probs == pytest.approx(rb.probs, abs=1e-6)
    agent.max_tokens = 6
    task = TaskSuite.load("household/valid_unseen").tasks[0]
    ep = rollout(env, agent, task, seed=0, max_steps=3)
    assert len(ep.steps) == len(agent.routes) == 3 and all(r.tau is None for r in agent.routes)


@pytest.fixture(scope="module")
def noop_sft(tiny_model, tmp_path_factory):
    """The tiny model after SFT on NoOp's expert: it says noop some of the time, not always."""
    root = tmp_path_factory.mktemp("pa_moe_noop")
    suite = root / "noop.jsonl"
    write_tasks(suite, noop_suite(6, length=2).tasks)
    cfg = TrainConfig.model_validate(
        {
            "model": {"path": str(tiny_model)},
            "env": {"id": "NoOp-v0", "suite": str(suite), "system_prompt": False},
            "algo": {"name": "sft"},
            "optim": {"lr": 1e-2},
            "sft": {"batch_size": 6},
            "steps": 21,
            "out_dir": str(root / "sft"),
            "threads": 1,
        }
    )
    Trainer(cfg).run()
    return root / "sft" / "final", str(suite)


def _noop_cfg(noop_sft, out, **over) -> TrainConfig:
    model, suite = noop_sft
    env = {"id": "NoOp-v0", "suite": suite, "system_prompt": False}
    rollout_cfg = {"tasks_per_step": 3, "group_size": 4, "max_turns": 2, "max_tokens": 4}
    return _cfg(model, out, env=env, rollout=rollout_cfg, **over)


def test_rewards_train_the_experts_that_acted_and_the_router(noop_sft, tmp_path):
    over = {"algo.name": "gigpo", "algo.kl_coef": 0.05, "steps": 1}
    trainer = Trainer(_noop_cfg(noop_sft, tmp_path, **over))
    with torch.no_grad():  # the router never picks expert 2
        trainer.policy.policy.router.phase[-1].bias[2] = -50.0
    router, experts = _router(trainer), [_experts(trainer.model, k) for k in range(3)]
    metrics = trainer.run()
    assert 0.0 < metrics["success"] < 1.0 and metrics["acr"] < 1.0
    assert metrics["expert_share_2"] == 0.0 and metrics["kl"] >= 0.0
    assert _changed(router, _router(trainer))
    for k in range(3):
        assert _changed(experts[k], _experts(trainer.model, k)) == (k != 2), k


def test_resume_restores_router_adapters_and_optimizer_exactly(noop_sft, tmp_path):
    straight = Trainer(_noop_cfg(noop_sft, tmp_path / "a"))
    straight.run()
    half = _noop_cfg(noop_sft, tmp_path / "b", steps=1, save_every=1)
    Trainer(half).run()
    resumed = Trainer(half.model_copy(update={"steps": 2}))
    assert resumed.step == 1
    resumed.run()
    assert not _changed(_router(straight), _router(resumed))
    for k in range(3):
        assert not _changed(_experts(straight.model, k), _experts(resumed.model, k))


def test_config_errors_and_the_method_config(tmp_path):
    with pytest.raises(ValueError, match="trains with gigpo, grpo, reinforce_pp, not ppo"):
        _cfg("m", tmp_path, **{"algo.name": "ppo"})
    with pytest.raises(ValueError, match="drop model.lora"):
        _cfg("m", tmp_path, **{"model.lora": {"r": 4}})
    with pytest.raises(ValueError, match="unknown model.policy 'moe'"):  # as the config loads
        _cfg("m", tmp_path, **{"model.policy": "moe"})
    with pytest.raises(ValueError, match="num_expert"):
        pmt.trainer_policy("m", "cpu", {"num_expert": 2}, None)
    path = Path(__file__).parents[2] / "configs" / "methods" / "pa_moe_household.yaml"
    cfg = load_config(path)
    opts = pm.PAMoEConfig.model_validate(cfg.model.policy_options)
    assert (opts.num_experts, opts.lora_r, opts.window, opts.lb_coef) == (4, 32, 10, 0.01)
    assert cfg.model.policy == "pa_moe" and cfg.algo.name == "gigpo"
    assert cfg.rollout.group_size == 8 and cfg.algo.gamma == 0.95


def test_agentgym_train_runs_the_method_config(tiny_model, tmp_path):
    from typer.testing import CliRunner

    from agentgym.cli import app

    path = Path(__file__).parents[2] / "configs" / "methods" / "pa_moe_household.yaml"
    small = {
        "model.path": tiny_model,
        "model.policy_options.num_experts": 2,
        "model.policy_options.lora_r": 4,
        "model.policy_options.router_dim": 16,
        "env.limit": 4,
        "rollout.tasks_per_step": 1,
        "rollout.group_size": 2,
        "rollout.max_turns": 2,
        "rollout.max_tokens": 4,
        "steps": 1,
        "threads": 1,
        "out_dir": tmp_path / "out",
    }
    args = [x for k, v in small.items() for x in ("-c", f"{k}={v}")]
    result = CliRunner().invoke(app, ["train", str(path), *args])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "final" / "router.safetensors").is_file()
    assert (tmp_path / "out" / "final" / "expert_1" / "adapter_model.safetensors").is_file()
