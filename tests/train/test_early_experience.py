"""Early experience: branching from expert states in the real envs, IWM/SR rows, the control."""

from __future__ import annotations

import pytest

import agentgym
from agentgym.agent import ExpertAgent
from agentgym.agents import early_experience as ee
from agentgym.chat_agent import parse_action
from agentgym.rollout import rollout
from agentgym.task import TaskSuite
from agentgym.testing.scripted_client import ScriptedClient

ENVS = [
    ("Household-v0", "household/valid_unseen"),
    ("WebShop-v0", "webshop/test"),
    ("Clarify-v0", "clarify/test"),
]


@pytest.fixture(scope="module", params=ENVS, ids=[e for e, _ in ENVS])
def branched(request):
    env_id, suite = request.param
    env = agentgym.make(env_id)
    tasks = TaskSuite.load(suite).tasks[:3]
    return env_id, tasks, ee.collect(env, tasks, k=3, seed=7)


def test_branching_leaves_the_expert_trajectory_unchanged(branched):
    env_id, tasks, trajs = branched
    env = agentgym.make(env_id)
    for task, traj in zip(tasks, trajs, strict=True):
        plain = rollout(env, ExpertAgent(env), task, seed=7)
        assert [s.expert.action for s in traj.states] == [s.action for s in plain.steps]
        assert [s.expert.observation for s in traj.states] == [s.observation for s in plain.steps]
        assert traj.success and plain.success


def test_alternatives_are_what_a_fresh_env_answers(branched):
    """Each branch's next state equals a replay of the expert prefix plus that action."""
    env_id, tasks, trajs = branched
    env = agentgym.make(env_id)
    checked = 0
    for task, traj in zip(tasks, trajs, strict=True):
        for state in traj.states:
            for alt in state.alternatives:
                env.reset(seed=7, options={"task": task})
                for prev in traj.states[: state.t]:
                    env.step(prev.expert.action)
                obs, reward, *_ = env.step(alt.action)
                assert (obs, reward) == (alt.observation, alt.reward)
                checked += 1
    assert checked > 0


def test_alternatives_differ_from_the_expert_and_are_real_actions(branched):
    env_id, _, trajs = branched
    for traj in trajs:
        for state in traj.states:
            actions = [a.action for a in state.alternatives]
            assert len(actions) == len(set(actions)) <= 3
            assert state.expert.action.lower() not in [a.lower() for a in actions]
            assert not any("<" in a and a.endswith(">]") for a in actions)
    if env_id == "WebShop-v0":  # the search page offers only the placeholder: no branches
        assert all(t.states[0].alternatives == [] for t in trajs)
    else:
        assert all(len(s.alternatives) == 3 for t in trajs for s in t.states)


def test_iwm_rows_predict_the_recorded_next_state(branched):
    _, _, trajs = branched
    rows = ee.iwm_rows(trajs, system="sys")
    branches = [(t, s, a) for t in trajs for s in t.states for a in s.alternatives]
    assert len(rows) == len(branches)
    for row, (traj, state, alt) in zip(rows, branches, strict=True):
        msgs = row["messages"]
        assert msgs[0] == {"role": "system", "content": "sys"}
        assert msgs[-1] == {"role": "assistant", "content": alt.observation}
        assert msgs[-2]["content"].startswith(state.observation)
        assert msgs[-2]["content"].endswith(ee.IWM_PROMPT.format(action=alt.action))
        history = [m for m in msgs[:-1] if m["role"] == "assistant"]
        assert [m["content"] for m in history] == [s.expert.action for s in traj.states[: state.t]]
        assert all(m["weight"] == 0 for m in history)


def test_sr_rows_are_grounded_and_end_with_the_expert_action(branched):
    _, _, trajs = branched
    rows = ee.sr_rows(trajs, ee.template_reflector(limit=10_000))
    branches = [(s, a) for t in trajs for s in t.states for a in s.alternatives]
    assert len(rows) == len(branches)
    for row, (state, alt) in zip(rows, branches, strict=True):
        target = row["messages"][-1]["content"]
        assert parse_action({"role": "assistant", "content": target}) == state.expert.action
        rationale = ee.rationale_of(row)
        mine, other = ee._differing(state.expert.observation, alt.observation)
        assert " ".join(mine.split()) in rationale and " ".join(other.split()) in rationale
        assert alt.action in rationale and "\n" not in rationale
        assert row["messages"][-2]["content"] == state.observation


def test_shuffled_rationales_are_a_derangement_with_the_same_actions(branched):
    _, _, trajs = branched
    rows = ee.sr_rows(trajs, ee.template_reflector())
    shuffled = ee.shuffle_rationales(rows, seed=3)
    assert ee.shuffle_rationales(rows, seed=3) == shuffled
    before = [ee.rationale_of(r) for r in rows]
    after = [ee.rationale_of(r) for r in shuffled]
    assert sorted(before) == sorted(after)
    assert sum(b == a for b, a in zip(before, after, strict=True)) < len(rows)
    for r, s in zip(rows, shuffled, strict=True):
        assert r["messages"][:-1] == s["messages"][:-1]
        last = s["messages"][-1]["content"]
        assert parse_action({"role": "assistant", "content": last}) == parse_action(
            r["messages"][-1]
        )


def test_imitation_rows_are_the_expert_episodes(branched):
    _, tasks, trajs = branched
    rows = ee.imitation_rows(trajs)
    assert len(rows) == len(tasks)
    for row, traj in zip(rows, trajs, strict=True):
        actions = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
        assert actions == [s.expert.action for s in traj.states]
        assert all("weight" not in m for m in row["messages"])


def test_token_episodes_train_only_weighted_turns(tiny_model, tmp_path):
    from agentgym.train.chat import ChatFormat
    from agentgym.train.policy import load_tokenizer
    from agentgym.train.sft import load_rows, rows_to_episodes

    env = agentgym.make("Household-v0")
    trajs = ee.collect(env, TaskSuite.load("household/valid_unseen").tasks[:1], k=2)
    rows = ee.iwm_rows(trajs) + ee.sr_rows(trajs, ee.template_reflector())
    path = tmp_path / "rows.jsonl"
    assert ee.write_rows(rows, path) == len(rows)
    tok = load_tokenizer(tiny_model)
    chat = ChatFormat(tok)
    for row, ep in zip(rows, rows_to_episodes(chat, load_rows(path), ""), strict=True):
        trained = [i for i, m in zip(ep.ids, ep.mask, strict=True) if m]
        assert len(ep.turns) == 1
        assert tok.decode(trained) == row["messages"][-1]["content"] + tok.eos_token


def test_chat_reflector_prompts_with_both_results():
    env = agentgym.make("Clarify-v0")
    trajs = ee.collect(env, TaskSuite.load("clarify/test").tasks[:1], k=1)
    client = ScriptedClient(lambda req: "Asking this  splits\nthe candidates.")
    rows = ee.sr_rows(trajs, ee.chat_reflector(client))
    assert ee.rationale_of(rows[0]) == "Asking this splits the candidates."
    state = trajs[0].states[0]
    prompt = client.requests[0].messages[0]["content"]
    for text in (state.expert.action, state.expert.observation, state.alternatives[0].action):
        assert text in prompt


def test_bad_input_is_named():
    env = agentgym.make("Clarify-v0")
    with pytest.raises(ValueError, match="k"):
        ee.collect(env, [], k=-1)
    with pytest.raises(ValueError, match="two SR rows"):
        ee.shuffle_rationales([{"messages": [{"role": "assistant", "content": "x"}]}])
    with pytest.raises(ValueError, match="not an SR row"):
        ee.rationale_of({"messages": [{"role": "assistant", "content": "look"}]})


def test_iwm_then_imitation_phases_through_the_trainer(tiny_model, tmp_path):
    from agentgym.train.config import TrainConfig
    from agentgym.train.policy import load_model

    env = agentgym.make("Clarify-v0")
    trajs = ee.collect(env, TaskSuite.load("clarify/train").tasks[:2], k=2)
    iwm, imitation = tmp_path / "iwm.jsonl", tmp_path / "il.jsonl"
    ee.write_rows(ee.iwm_rows(trajs), iwm)
    ee.write_rows(ee.imitation_rows(trajs), imitation)
    cfg = TrainConfig.model_validate(
        {
            "model": {"path": str(tiny_model)},
            "env": {"id": "Clarify-v0", "suite": "clarify/train", "limit": 2},
            "sft": {"batch_size": 2},
            "optim": {"lr": 1e-2},
            "out_dir": str(tmp_path / "run"),
            "threads": 1,
        }
    )
    final = ee.train_phases(cfg, [(str(iwm), 1), (str(imitation), 1)])
    assert final == tmp_path / "run" / "phase-1" / "final"
    base, after_iwm = load_model(tiny_model), load_model(tmp_path / "run" / "phase-0" / "final")
    tuned = load_model(final)
    w = "model.embed_tokens.weight"
    sd = [m.state_dict()[w] for m in (base, after_iwm, tuned)]
    assert not sd[0].equal(sd[1]) and not sd[1].equal(sd[2])


def test_experiment_takes_a_pretrained_checkpoint(tiny_model, tmp_path):
    """``experiments.early_experience --model PATH``: every arm trains LoRA on the checkpoint's top
    layers (not a tiny model of its own, not every weight), under its own heading."""
    from experiments import early_experience as exp

    results_md = tmp_path / "results.md"
    results_md.write_text(f"{exp.EE_MARKER}\n\nthe tiny model's table\n", encoding="utf-8")
    argv = [
        "--model", str(tiny_model), "--model-layers", "2", "--lora-layers", "1", "--lora-r", "4",
        "--seeds", "0", "--train-tasks", "2", "--k", "1", "--steps", "2", "--batch-size", "2",
        "--eval-tasks", "2", "--eval-samples", "1", "--max-tokens", "8",
        "--results", str(results_md),
    ]  # fmt: skip
    (result,) = exp.main(argv)
    assert set(result) == set(exp.ARMS)
    args = exp.early_experience_args(exp.parser().parse_args(argv))
    cfg = exp._config(args, tiny_model, 0, tmp_path / "arm", {"train": "a", "test": "b"})
    assert cfg.model.lora is not None and cfg.model.lora.layers == [1]
    assert cfg.rollout.max_context_tokens == 768
    text = results_md.read_text()
    assert "the tiny model's table" in text
    assert f"{exp.EE_MARKER} ({tiny_model})" in text
    assert "with LoRA r=4 on its top 1 layers" in text
