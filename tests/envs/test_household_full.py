"""The issue-35 recipe's pieces that run without training: the searcher's SFT rows (won
episodes only, the bounded prompt of every step), the task draw, and the paired RL-vs-SFT
figure read from an eval store."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgym.envs.household.goals import TASK_TYPES
from agentgym.envs.household.searcher import next_command
from agentgym.episode import Episode, Step
from agentgym.store import Store
from agentgym.task import TaskSuite
from experiments import household_full as recipe


def test_searcher_rows_hold_every_step_of_a_won_episode():
    task = next(t for t in TaskSuite.load("household/train") if t.tags[0] == "heat")
    rows = recipe.searcher_rows(task, history=2)
    assert rows is not None and len(rows) > 3
    actions = [r["messages"][1]["content"] for r in rows]
    assert any(a.startswith("heat ") for a in actions) and actions[-1].startswith("put ")
    for i, r in enumerate(rows):
        user = r["messages"][0]["content"]
        assert user.startswith(f"Your task is to: {task.instruction}")
        assert f"You are now at step {i + 1}." in user and "Admissible actions: [" in user
    lost = task.model_copy(update={"config": {**task.config, "max_turns": 2}})
    assert recipe.searcher_rows(lost, history=2) is None


def test_the_decisions_mix_keeps_every_decision_and_doubles_take_and_put():
    """The probe's remix keeps the contrast rows (a take or put admissible, the searcher goes on)
    that the ``verbs`` mix thinned out, and labels them apart in ``agree``."""
    from experiments.household_verb_probe import decisions, with_dagger

    tasks = [t for t in TaskSuite.load("household/train")][:6]
    rows = [r for t in tasks for r in recipe.searcher_rows(t, history=2) or []]
    picked = decisions(rows, seed=0)
    ids = [id(r) for r in picked]
    for r in rows:
        kind = recipe.verb_of(r)
        if kind in ("take", "put"):
            assert ids.count(id(r)) == 2
        elif kind not in ("go to", "open"):
            assert ids.count(id(r)) == 1, kind
    assert any(recipe.verb_of(r) == "go to, not take/put" for r in picked)
    assert [id(r) for r in decisions(rows, seed=0)] == ids
    fix, same = (
        {**rows[0], "learner": "look"},
        {**rows[1], "learner": rows[1]["messages"][1]["content"]},
    )
    mixed = with_dagger(picked, [fix, same], seed=0)
    assert all("learner" not in r for r in mixed)
    assert sum(r["task_id"] == fix["task_id"] for r in mixed) == 1 + ids.count(id(rows[0]))
    prompt = fix["messages"][0]["content"]
    again = {**fix, "messages": [{"role": "user", "content": prompt.replace("step 1.", "step 9.")},
                                 fix["messages"][1]]}  # fmt: skip
    assert again["messages"][0]["content"] != prompt  # the same state, a later step
    weighted = with_dagger(picked, [fix, again, same], seed=0, weight=3)
    assert sum(r["task_id"] == fix["task_id"] for r in weighted) == 3 + ids.count(id(rows[0]))


def test_task_draw_covers_every_type_evenly():
    tasks = recipe.pick_tasks(12, seed=0)
    kinds = [t.config["task_type"] for t in tasks]
    assert len(set(kinds)) == 6 and len({kinds.count(k) for k in set(kinds)}) == 1
    assert [t.id for t in recipe.pick_tasks(12, seed=0)] == [t.id for t in tasks]


def test_a_dagger_draw_can_aim_at_some_task_types():
    aimed = ("pick_cool_then_place_in_recep", "pick_two_obj_and_place")
    tasks = recipe.pick_tasks(12, seed=0, kinds=aimed)
    kinds = [t.config["task_type"] for t in tasks]
    assert set(kinds) == set(aimed) and kinds.count(aimed[0]) == kinds.count(aimed[1]) >= 6
    args = recipe.parser().parse_args(["dagger", "--types", "cool", "puttwo"])
    assert args.types == ["cool", "puttwo"]


def store_stages(
    store: Store, out: Path, stages: list[str], won: dict[str, tuple[bool, ...]]
) -> None:
    """One run per stage (its greedy ``hf:`` spec), with task -> success flags, one per stage."""
    for k, stage in enumerate(stages):
        agent = f"hf:{recipe.checkpoint(out, stage)}?history=2"
        store.start_run(stage, stage, "household/valid_unseen", agent, {}, {}, None)
        for task, flags in won.items():
            ep = Episode(task_id=task, env_id="agentgym/Household-v0", status="completed")
            ep.success = flags[k]
            store.save_episode(stage, ep)


def test_compare_pairs_per_task_and_intervals_over_seeds(tmp_path: Path):
    store = Store(tmp_path / "eval.db")
    won = {  # task -> success: SFT, seed 1, seed 2
        "a": (True, True, True),
        "b": (False, True, False),
        "c": (False, True, True),
        "d": (True, False, True),
    }
    stages = ["sft", "rl-1", "rl-2"]
    store_stages(store, tmp_path, stages, won)
    bf16 = f"hf:{recipe.checkpoint(tmp_path, 'rl-1')}?history=2&dtype=bfloat16"
    store.start_run("rl-1-bf16", "rl-1", "household/valid_unseen", bf16, {}, {}, None)
    for task in won:  # another precision plays other episodes: never paired with float32's
        ep = Episode(task_id=task, env_id="agentgym/Household-v0", status="completed")
        store.save_episode("rl-1-bf16", ep)
    unstuck = f"hf:{recipe.checkpoint(tmp_path, 'rl-1')}?history=2&unstick=1"
    store.start_run("rl-1-unstick", "rl-1", "household/valid_unseen", unstuck, {}, {}, None)
    for task in won:  # sampling after a stall is another arm: never paired with greedy runs
        ep = Episode(task_id=task, env_id="agentgym/Household-v0", status="completed")
        store.save_episode("rl-1-unstick", ep)
    store.close()
    assert recipe.compare(tmp_path, [1], "bfloat16") == "seed 1: not evaluated"
    assert recipe.compare(tmp_path, [1], unstick=1.0) == "seed 1: not evaluated"
    text = recipe.compare(tmp_path, [1, 2])
    assert "seed 1: +25.0 points on 4 tasks (RL only 2, SFT only 1)" in text
    assert "seed 2: +25.0 points on 4 tasks (RL only 1, SFT only 0)" in text
    assert "RL - SFT over 2 seeds: +25.0 [+25.0, +25.0]" in text
    kept = tmp_path / "kept"  # RL started from a kept copy: its runs are the SFT arm
    kept.mkdir()
    (kept / "adapter_config.json").write_text("{}")
    store = Store(tmp_path / "eval.db")
    agent = f"hf:/another/checkout/{tmp_path.name}/kept?history=2"  # another checkout
    store.start_run("kept", "kept", "household/valid_unseen", agent, {}, {}, None)
    for task in won:
        store.save_episode("kept", Episode(task_id=task, env_id="agentgym/Household-v0",
                                           status="completed", success=False))  # fmt: skip
    store.close()
    text = recipe.compare(tmp_path, [1, 2], sft_stage=str(kept))
    assert "seed 1: +75.0 points on 4 tasks (RL only 3, SFT only 0)" in text


def test_versus_pairs_two_checkpoints_per_task_across_stores(tmp_path: Path):
    """``versus``: A from one run folder, B from another's store, paired on the tasks both
    played; a precision B was not played in pairs nothing."""
    ids = [t.id for t in TaskSuite.load("household/valid_unseen")][:4]
    a, b = tmp_path / "a", tmp_path / "b"
    store_stages(
        Store(a / "eval.db"),
        a,
        ["sft"],
        dict(zip(ids, [(True,), (True,), (True,), (False,)], strict=True)),
    )
    store_stages(
        Store(b / "eval.db"),
        b,
        ["sft"],
        dict(zip(ids[:3], [(True,), (False,), (False,)], strict=True)),
    )
    rows = recipe.versus(a, "sft", "sft", b).splitlines()[2:]
    assert rows[0] == "| valid_unseen | 3 | 3 | 1 | 1 | 2 | 0 | +66.7% [+1.3%, +132.0%] | 0.5 |"
    assert rows[1].startswith("| both | 3 | 3 | 1 |")
    assert len(rows) == 2  # valid_seen: no task played by both
    assert recipe.versus(a, "sft", "sft", b, "bfloat16").splitlines()[2:] == []


def test_a_kept_checkpoint_names_its_base_by_name_and_loads_the_same_weights(
    tiny_model, tmp_path: Path, monkeypatch
):
    """``keep`` copies the adapters and tokenizer (not the optimizer) and names the base model
    by the name ``agentgym model fetch`` resolves on any machine; loaded from the copy, the
    merged model is the one the run trained."""
    import json

    import torch

    from agentgym.train.policy import LoraConfig, load_model

    model = load_model(tiny_model, lora=LoraConfig(r=4, alpha=8, target_modules=["q_proj"]))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.fill_(0.01)  # a trained adapter is not the identity
    step = tmp_path / "run" / "sft" / "step-000008"
    model.save_pretrained(step)
    for name in ("chat_template.jinja", "tokenizer.json", "tokenizer_config.json"):
        (step / name).write_bytes((Path(tiny_model) / name).read_bytes())
    (step / "trainer_state.pt").write_bytes(b"optimizer")
    monkeypatch.setattr(recipe, "MODEL", str(tiny_model))  # the base's name on this machine
    kept = recipe.keep(tmp_path / "run", "sft/step-000008", tmp_path / "kept")
    assert sorted(p.name for p in kept.iterdir()) == sorted(recipe.KEPT)
    assert json.loads((kept / "adapter_config.json").read_text())["base_model_name_or_path"] == (
        str(tiny_model)
    )
    assert recipe.checkpoint(tmp_path / "run", str(kept)) == str(kept.resolve())
    original, copy = load_model(step).state_dict(), load_model(kept).state_dict()
    assert original.keys() == copy.keys()
    assert all(torch.equal(original[k], copy[k]) for k in original)
    assert not torch.equal(copy["model.layers.0.self_attn.q_proj.weight"],
                           load_model(tiny_model).state_dict()["model.layers.0.self_attn.q_proj.weight"])  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(900)  # under 300 s here, but not by much beside other CPU work
def test_dagger_labels_every_state_the_learner_reached_and_resumes(tiny_model, tmp_path: Path):
    """The learner (here the untrained tiny model) plays one training task of each type through
    ``agentgym eval``; each of its steps becomes a row labelled by the searcher. A rerun finds
    every episode stored and writes the same rows."""
    import argparse
    import json

    args = argparse.Namespace(episodes=6, seed=0, history=2, notes="household", limit=None,
                              concurrency=6, threads=1, dtype="float32", unstick=None,
                              shards=1, types=list(recipe.SHORT.values()))  # fmt: skip
    stats = recipe.run_dagger(tmp_path, str(tiny_model), args)
    rows = [json.loads(line) for line in (tmp_path / "dagger.jsonl").read_text().splitlines()]
    store = Store(tmp_path / "dagger.db", read_only=True)
    (run,) = store.runs()
    played = list(store.episodes(run["id"]))
    assert stats["episodes"] == len(played) == 6 and stats["rows"] == len(rows)
    assert len(rows) == sum(len(e.steps) for e in played)
    types = {t.id: t.config["task_type"] for t in TaskSuite.load("household/train")}
    assert sorted(types[e.task_id] for e in played) == sorted(TASK_TYPES)
    played.sort(key=lambda e: e.task_id)
    assert [r["learner"] for r in rows] == [s.action for e in played for s in e.steps]
    firsts = [r for r in rows if r["task_id"].endswith("#0")]
    assert [r["messages"][1]["content"] for r in firsts] == [
        next_command([e.first_observation], []) for e in played
    ]
    first = (tmp_path / "dagger.jsonl").read_text()
    assert recipe.run_dagger(tmp_path, str(tiny_model), args) == stats
    assert (tmp_path / "dagger.jsonl").read_text() == first


@pytest.mark.slow
def test_dagger_shards_play_each_task_once_and_a_restart_only_what_is_left(
    tiny_model, tmp_path: Path
):
    """``--shards 2``: two eval processes, every other task each, into one store; the rows are
    those of all the episodes. A restart finds every task played and starts no process."""
    import argparse

    args = argparse.Namespace(episodes=6, seed=0, history=2, notes="household", limit=None,
                              concurrency=3, threads=1, dtype="float32", unstick=None,
                              shards=2, types=list(recipe.SHORT.values()))  # fmt: skip
    stats = recipe.run_dagger(tmp_path, str(tiny_model), args)
    store = Store(tmp_path / "dagger.db", read_only=True)
    runs = {r["suite"]: [e.task_id for e in store.episodes(r["id"])] for r in store.runs()}
    store.close()
    assert sorted(runs) == ["dagger-part-0", "dagger-part-1"]
    assert len(runs["dagger-part-0"]) == len(runs["dagger-part-1"]) == 3
    assert stats["episodes"] == len(set(runs["dagger-part-0"]) | set(runs["dagger-part-1"])) == 6
    (tmp_path / "dagger-part-0.jsonl").unlink()
    assert recipe.run_dagger(tmp_path, str(tiny_model), args) == stats
    assert not (tmp_path / "dagger-part-0.jsonl").exists()  # nothing left to play


@pytest.mark.slow
def test_eval_shards_play_each_task_once_into_one_table_row(tiny_model, tmp_path: Path):
    """``eval --shards 2``: the split's first tasks as two processes into one ``eval.db``, each
    task once; the table and the losses count them as one run of the split; a restart plays
    nothing."""
    import argparse

    args = argparse.Namespace(splits=["valid_unseen"], limit=4, history=2, notes="household",
                              concurrency=2, threads=1, dtype="float32", unstick=None,
                              shards=2)  # fmt: skip
    recipe.run_eval(tmp_path, str(tiny_model), args)
    store = Store(tmp_path / "eval.db", read_only=True)
    runs = {r["suite"]: sorted(e.task_id for e in store.episodes(r["id"])) for r in store.runs()}
    won = sum(bool(row["success"]) for r in store.runs() for row in store.episode_rows(r["id"]))
    store.close()
    first = [t.id for t in TaskSuite.load("household/valid_unseen")][:4]
    assert runs == {
        "valid_unseen-part-0": sorted(first[0::2]),
        "valid_unseen-part-1": sorted(first[1::2]),
    }
    rows = recipe.table(tmp_path).splitlines()[2:]
    assert len(rows) == 1 and rows[0].startswith("| household/valid_unseen ") and "/4 (" in rows[0]
    lost = recipe.losses(tmp_path).splitlines()[2:]
    assert len(lost) == len(recipe.LOSS_MODES)  # one row per mode, not per shard
    assert sum(int(row.rsplit("|", 2)[1]) for row in lost) == 4 - won
    (tmp_path / "valid_unseen-part-0.jsonl").unlink()
    recipe.run_eval(tmp_path, str(tiny_model), args)
    assert not (tmp_path / "valid_unseen-part-0.jsonl").exists()  # nothing left to play


def test_failure_modes_of_lost_episodes():
    """One ending per mode, shaped after four lost episodes of the decisions checkpoint
    (valid_unseen 0001, 0007, 0010 and 0009)."""
    ok, nothing = "You arrive at cabinet 1.", recipe.NOTHING_HAPPENS
    loop = ["take cup 3 from cabinet 1", "go to cabinet 1", "put cup 3 in/on cabinet 1"] * 3
    assert recipe.failure_mode(loop, [ok, nothing, ok] * 3) == "take/put loop"
    assert recipe.failure_mode(["go to shelf 13"] * 6, [ok] + [nothing] * 5) == "stuck on a no-op"
    cycle = ["go to cabinet 2", "go to cabinet 1"] * 5
    assert recipe.failure_mode(cycle, [ok] * 10) == "go-to cycle"
    search = [a for n in range(6, 1, -1) for a in (f"go to cabinet {n}", f"open cabinet {n}")]
    assert recipe.failure_mode(search, [ok] * 10) == "searching"
    assert recipe.failure_mode(loop, [nothing] * 9) == "take/put loop"  # the first rule wins
    assert recipe.failure_mode(["take"] * 5, [nothing] * 5) == "stuck on a no-op"  # a bare verb


def test_run_label_names_the_checkpoint_and_its_prompt_not_the_greedy_settings():
    run = {"suite": "household/valid_unseen", "agent": "hf:/ckpt/sft/final?history=2"
           "&notes=household&temperature=0&max_format_errors=0"}  # fmt: skip
    assert (
        recipe.run_label(run)
        == "household/valid_unseen /ckpt/sft/final (history=2, notes=household)"
    )
    inside = {"suite": "s", "agent": f"hf:{Path.cwd() / 'ckpt'}?temperature=0"}
    assert recipe.run_label(inside) == "s ckpt"


def test_dtype_sets_the_trainers_precision_and_float32_stays_the_default(tmp_path: Path):
    kept = str(tmp_path)
    args = recipe.parser().parse_args(["rl", "--sft-checkpoint", kept, "--dtype", "bfloat16"])
    assert recipe.rl_config(tmp_path, args, 1).model.precision == "bf16"
    args = recipe.parser().parse_args(["sft"])
    assert recipe.sft_config(tmp_path, args).model.precision == "fp32"


def test_losses_count_lost_episodes_by_mode_and_skip_runs_that_lost_none(tmp_path: Path):
    tasks = TaskSuite.load("household/valid_unseen").tasks[:2]
    store = Store(tmp_path / "eval.db")
    for run, won in (("lost-one", [True, False]), ("won-all", [True, True])):
        store.start_run(run, run, "household/valid_unseen", f"hf:/ckpt/{run}", {}, {}, None)
        for task, success in zip(tasks, won, strict=True):
            ep = Episode(task_id=task.id, env_id="agentgym/Household-v0", status="completed",
                         success=success)  # fmt: skip
            store.save_episode(run, ep)
    store.close()
    rows = recipe.losses(tmp_path).splitlines()[2:]
    assert len(rows) == len(recipe.LOSS_MODES) and all("lost-one" in r for r in rows)
    assert sum(int(r.split("|")[-2]) for r in rows) == 1


def test_on_policy_agreement_counts_the_searchers_own_episode_as_all_agreeing(tmp_path: Path):
    """The searcher's won episode agrees at every state; a learner that only repeats `look`
    agrees nowhere, and its states are counted as a lost episode's."""
    task = TaskSuite.load("household/valid_unseen").tasks[0]
    rows = recipe.searcher_rows(task, history=2)
    assert rows is not None
    store = Store(tmp_path / "eval.db")
    for run, actions, won in (
        ("searcher", [r["messages"][1]["content"] for r in rows], True),
        ("looker", ["look"] * 4, False),
    ):
        store.start_run(run, run, "household/valid_unseen", f"hf:/ckpt/{run}", {}, {}, None)
        steps = [Step(t=i, action=a, observation="", reward=0.0) for i, a in enumerate(actions)]
        store.save_episode(run, Episode(task_id=task.id, env_id="agentgym/Household-v0",
                                        status="completed", success=won, steps=steps))  # fmt: skip
    store.close()
    searcher, looker = recipe.on_policy(tmp_path).splitlines()[2:]
    n = len(rows)
    assert f"| {n}/{n} (100.0%) | 0/0 (0.0%) |" in searcher
    assert "| 0/0 (0.0%) | 0/4 (0.0%) |" in looker


def test_compare_on_one_split_pairs_only_that_splits_tasks(tmp_path: Path):
    unseen = TaskSuite.load("household/valid_unseen").tasks[:2]
    seen = TaskSuite.load("household/valid_seen").tasks[:1]
    won = {unseen[0].id: (False, True), unseen[1].id: (True, True), seen[0].id: (True, False)}
    store = Store(tmp_path / "eval.db")
    store_stages(store, tmp_path, ["sft", "rl-1"], won)
    store.close()
    assert recipe.compare(tmp_path, [1]) == "seed 1: +0.0 points on 3 tasks (RL only 1, SFT only 1)"
    assert (
        recipe.compare(tmp_path, [1], split="valid_unseen")
        == "seed 1: +50.0 points on 2 tasks (RL only 1, SFT only 0)"
    )
    assert (
        recipe.compare(tmp_path, [1], split="valid_seen")
        == "seed 1: -100.0 points on 1 tasks (RL only 0, SFT only 1)"
    )


def test_the_verb_probe_builds_a_trainer_config_in_the_precision_asked(tmp_path):
    """The probe's command line reaches a valid trainer config (a missing knob once crashed it
    only after the DAgger rows were written), float32 by default."""
    from experiments.household_verb_probe import parse_args, sft_knobs

    argv = ["--data", "sft.jsonl", "--from", "adapters", "--out", str(tmp_path), "--steps", "9"]
    config = recipe.sft_config(tmp_path, sft_knobs(parse_args(argv)), start="adapters")
    assert (config.steps, config.model.precision, config.resume) == (9, "fp32", True)
    bf16 = recipe.sft_config(tmp_path, sft_knobs(parse_args([*argv, "--dtype", "bfloat16"])))
    assert bf16.model.precision == "bf16"
