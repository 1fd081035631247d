"""The PA-MoE experiment's harness (experiments/pa_moe.py): the imbalanced mix split by
floorplan, the phase boundary and the boundary share of switches. The experiment itself is
``python -m experiments.pa_moe`` (its figures are in docs/results.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from agentgym.episode import Episode, Step
from agentgym.task import TaskSuite
from experiments import pa_moe as m


def test_mix_is_one_quarter_two_phase_and_held_out_by_floorplan(tmp_path):
    args = argparse.Namespace(max_receptacles=10, max_turns=16, complex_share=0.25, eval_tasks=8)
    paths = m.suites(tmp_path, args)
    train, test = (TaskSuite.load(paths[s]).tasks for s in ("train", "test"))
    clean = sum(t.tags[0] == "clean" for t in train)
    assert abs(clean / len(train) - 0.25) < 0.01
    assert {t.tags[0] for t in test} == {"clean", "put"}
    assert sum(t.tags[0] == "clean" for t in test) == 8
    plans = {t.config["floorplan"] for t in train}
    assert plans.isdisjoint(t.config["floorplan"] for t in test)
    assert all(t.config["max_turns"] == 16 for t in train + test)


def _episode(observations: list[str]) -> Episode:
    steps = [
        Step(t=i, action=f"a{i}", observation=o, reward=0.0) for i, o in enumerate(observations)
    ]
    return Episode(task_id="t", env_id="Household-v0", first_observation="intro", steps=steps)


def test_boundary_is_the_turn_after_the_take():
    ep = _episode(
        ["On the shelf 1, you see a cloth 1.", "You pick up the cloth 1 from the shelf 1."]
    )
    assert m.boundary(ep) == 2
    assert m.boundary(_episode(["Nothing happens."])) is None


def test_switch_share_counts_only_switches_near_the_boundary():
    records = [
        {"switches": [2], "boundary": 3},  # one turn early: counted
        {"switches": [6], "boundary": 3},  # far: not counted
        {"switches": [1], "boundary": None},  # never took: not counted
        {"switches": [], "boundary": 4},
    ]
    assert m._at_boundary(records) == "1/3 = 33%"
    assert m._switches(records) == "0.75"
    assert m._at_boundary([{"switches": [], "boundary": 1}]) == "no switches"


def test_recorded_command_drops_output_paths():
    from experiments.results import recorded

    argv = ["--seeds", "0", "--results", "/tmp/r.md", "--json=/tmp/x.json", "--rl-steps", "3"]
    argv += ["--from-json", "/tmp/a.json", "/tmp/b.json", "--seeds", "1"]
    assert recorded(argv) == ["--seeds", "0", "--rl-steps", "3", "--seeds", "1"]


def test_seed_interval_is_student_t():
    """Three seeds' gains +5, +10, +7.5: t(2) = 4.303 gives [+1.3, +13.7]; 1.96 would not."""
    from experiments.results import t_interval

    m, lo, hi = t_interval([5.0, 10.0, 7.5])
    assert m == 7.5 and round(lo, 2) == 1.29 and round(hi, 2) == 13.71
    assert t_interval([0.4]) == (0.4, 0.4, 0.4)


def test_the_three_arms_configs_differ_only_in_the_policy():
    from agentgym.train.config import load_config

    root = Path(__file__).resolve().parents[2] / "configs" / "methods"
    moe, obs, single = (
        load_config(root / f"pa_moe_household{s}.yaml").model_dump()
        for s in ("", "_obs_only", "_single")
    )
    assert moe["model"]["policy_options"]["goal_aware"] is True
    assert obs["model"]["policy_options"]["goal_aware"] is False
    assert single["model"]["policy"] is None and single["model"]["lora"]["r"] == 32
    for cfg in (obs, single):
        for key in ("env", "rollout", "algo", "optim", "steps"):
            assert cfg[key] == moe[key]


def test_a_run_where_nothing_succeeds_is_reported_as_such():
    rec = {"kind": "clean", "success": False, "ok": True, "switches": [], "boundary": None}
    rec["turns"] = 16
    put = {**rec, "kind": "put"}
    res = {arm: [rec, put] for arm in ("sft", *m.ARMS)} | {"seed": 0}
    assert m.nothing_learned([res])
    assert m.routed_stats([res]) == {"switches": 0, "episodes": 4, "took": 0, "turns": 16.0}
    won = {**res, "pa_moe": [{**rec, "success": True}, put]}
    assert not m.nothing_learned([won])
    assert m.clean_wins([won]) == {"sft": 0, "single": 0, "pa_moe": 1, "obs_only": 0}


def test_experiment_takes_a_pretrained_checkpoint(tiny_model, tmp_path):
    """``experiments.pa_moe --model PATH``: LoRA SFT on the given checkpoint (not a tiny model of
    its own), merged; then the single adapter and every expert on the same top layers and
    projections; the section has its own heading, so the tiny model's table stays."""
    from experiments import pa_moe

    results_md = tmp_path / "results.md"
    results_md.write_text(f"{pa_moe.MARKER}\n\nthe tiny model's table\n", encoding="utf-8")
    argv = [
        "--model", str(tiny_model), "--model-layers", "2", "--lora-layers", "1", "--lora-r", "4",
        "--seeds", "0", "--sft-steps", "1", "--rl-steps", "1", "--tasks-per-step", "1",
        "--group-size", "2", "--eval-tasks", "1", "--sft-batch", "2",
        "--max-context", "256", "--results", str(results_md),
    ]  # fmt: skip
    (result,) = pa_moe.main(argv)
    assert {"sft", *pa_moe.ARMS} <= set(result)
    assert all(len(result[arm]) == 2 for arm in ("sft", *pa_moe.ARMS))  # 1 clean + 1 put
    args = pa_moe.parser().parse_args(argv)
    single = pa_moe.arm_overrides(args, "single")["model.lora"]
    experts = pa_moe.arm_overrides(args, "pa_moe")["model.policy_options"]
    assert single["layers"] == experts["layers"] == [1]
    assert single["target_modules"] == experts["target_modules"]
    assert "gate_proj" in experts["target_modules"]
    text = results_md.read_text()
    assert "the tiny model's table" in text
    assert f"{pa_moe.MARKER[:-1]}, {tiny_model})" in text
    assert "LoRA SFT on its top 1 layers, merged before RL" in text


def test_experts_adapt_only_the_layers_named(tiny_model):
    from agentgym.agents.pa_moe import PAMoEConfig, with_experts
    from agentgym.train.policy import load_model

    cfg = PAMoEConfig(num_experts=2, lora_r=2, layers=[1], target_modules=["q_proj", "up_proj"])
    model = with_experts(load_model(tiny_model), cfg)
    adapted = {n.split(".lora_A")[0] for n, _ in model.named_parameters() if ".lora_A." in n}
    assert adapted == {
        f"base_model.model.model.layers.1.{m}" for m in ("self_attn.q_proj", "mlp.up_proj")
    }


def test_a_section_is_replaced_only_under_its_exact_heading(tmp_path):
    """A heading naming a model (``... (Household, smollm2)``, ``### After 15 SFT steps,
    smollm2``) is another section, even where the tiny model's heading is a prefix of it."""
    from experiments.results import replace_section

    path = tmp_path / "results.md"
    path.write_text("## A, smollm2\n\nreal\n\n## A\n\ntiny\n\n## B\n\nkept\n", encoding="utf-8")
    replace_section(path, "## A", "## A\n\ntiny again\n")
    assert path.read_text() == "## A, smollm2\n\nreal\n\n## A\n\ntiny again\n\n## B\n\nkept\n"
    replace_section(path, "## C", "## C\n\nnew\n")
    assert path.read_text().endswith("## B\n\nkept\n\n## C\n\nnew\n")


def test_the_sft_stage_and_the_arms_configs_load(tmp_path):
    """The SFT stage sets no GRPO setting (a config rejects one its algorithm does not read);
    the arms train GRPO with DAPO's clip-higher."""
    args = argparse.Namespace(
        tasks_per_step=2, group_size=2, max_turns=4, sft_lr=1e-3, rl_lr=1e-4, eval_samples=1,
        threads=1, context_weight=1.0, eval_temperature=1.0,
    )  # fmt: skip
    paths = {"train": tmp_path / "train.jsonl", "test": tmp_path / "test.jsonl"}
    sft = m.config(tmp_path / "model", paths, tmp_path / "sft", args, **{"algo.name": "sft"})
    assert sft.algo.name == "sft" and sft.algo.clip_high == 0.2
    rl = m.config(tmp_path / "model", paths, tmp_path / "rl", args, **m.RL)
    assert rl.algo.view.clip_high == 0.28
