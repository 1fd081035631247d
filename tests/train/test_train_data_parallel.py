"""Data-parallel training: two gloo ranks end a seeded run with one process's parameters.

Real processes under torchrun, real torch.distributed (gloo). Every algorithm trains LoRA
adapters on NoOp from a policy that succeeds sometimes, so groups have advantages. Each step's
12 episodes are 3 groups of 4: the second group is split between the two ranks, so its
advantages are right only if the ranks gather the groups before credit; the update is right only
if the ranks' gradients are summed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from safetensors.torch import load_file

from agentgym.store import Store
from agentgym.task import write_tasks
from agentgym.testing.noop import noop_suite
from agentgym.train.config import load_config, set_dotted
from agentgym.train.distributed import DataParallel, check_policy
from agentgym.train.launch import torchrun_command
from agentgym.train.trainer import Trainer

ROOT = Path(__file__).resolve().parents[2]
BOUND = 1e-5
ALGOS: dict[str, dict[str, Any]] = {
    "sft": {"name": "sft"},
    "grpo-kl": {"name": "grpo", "kl_coef": 0.1},
    "gigpo": {"name": "gigpo", "loss_agg": "episode-mean"},
    "reinforce_pp": {"name": "reinforce_pp", "layout": "step", "loss_agg": "sequence-mean"},
    "ppo": {"name": "ppo", "epochs": 2},
}


def _config(
    path: Path, start: Path, suite: Path, out: Path, algo: dict[str, Any], lora: bool = True, **top
) -> Path:
    data = {
        "model": {"path": str(start), "lora": {"r": 4, "alpha": 8} if lora else None},
        "env": {"id": "NoOp-v0", "suite": str(suite), "system_prompt": False},
        "rollout": {"tasks_per_step": 3, "group_size": 4, "max_turns": 2, "max_tokens": 4},
        "optim": {"lr": 3e-3, "micro_batch_size": 4},
        "sft": {"batch_size": 6},
        "algo": algo,
        "steps": 2,
        "seed": 0,
        "threads": 1,
        "out_dir": str(out),
    }
    for key, value in top.items():  # dotted keys set nested fields
        set_dotted(data, key, value)
    path.write_text(yaml.safe_dump(data))
    return path


def _one_process(config: Path, **changes: Any) -> tuple[Trainer, dict[str, torch.Tensor]]:
    """Train ``config`` here, in one process; return the trainer and its starting adapters."""
    cfg = load_config(config, [f"{k}={v}" for k, v in changes.items()])
    trainer = Trainer(cfg)
    start = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    trainer.run()
    trainer.close()
    return trainer, start


def _largest_difference(a: Path, b: Path) -> float:
    """Largest absolute difference between two checkpoints' adapters and trainer states."""
    worst = 0.0
    for name in ("adapter_model.safetensors", "trainer_state.safetensors"):
        x, y = load_file(a / name), load_file(b / name)
        assert x.keys() == y.keys(), name
        for key in x:
            if x[key].is_floating_point():
                worst = max(worst, (x[key].double() - y[key].double()).abs().max().item())
            else:
                assert torch.equal(x[key], y[key]), f"{name}: {key}"
    return worst


def _moved(trainer: Trainer, start: dict[str, torch.Tensor]) -> float:
    params = dict(trainer.model.named_parameters())
    return max((params[n].detach() - v).abs().max().item() for n, v in start.items())


def _run(command: list[str], env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def noop(tiny_model, tmp_path_factory) -> tuple[Path, Path]:
    """NoOp's suite, and the tiny model after a short SFT: it says noop sometimes, not always."""
    root = tmp_path_factory.mktemp("noop")
    suite = root / "noop.jsonl"
    write_tasks(suite, noop_suite(6, length=2).tasks)
    sft = {"name": "sft"}
    cfg = _config(root / "sft.yaml", tiny_model, suite, root / "sft", sft, False, steps=21)
    _one_process(cfg, **{"optim.lr": 1e-2})
    return suite, root / "sft" / "final"


@pytest.fixture(scope="module")
def runs(noop, tmp_path_factory) -> dict[str, Any]:
    """Every algorithm in one process here and on two ranks in one torchrun launch; and a
    checkpoint written by one process, resumed on two ranks."""
    suite, start = noop
    root = tmp_path_factory.mktemp("runs")
    one, two, ranked = {}, {}, []
    for name, algo in ALGOS.items():
        cfg = _config(root / f"{name}.yaml", start, suite, root / name / "one", algo)
        one[name] = _one_process(cfg)
        two[name] = root / name / "two"
        ranked.append(_config(root / f"{name}-2.yaml", start, suite, two[name], algo))
    ppo = ALGOS["ppo"]
    half = _config(root / "half.yaml", start, suite, root / "resumed", ppo, steps=1, save_every=1)
    _one_process(half)
    ranked.append(_config(root / "resume.yaml", start, suite, root / "resumed", ppo))
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    this_tree = {**os.environ, "PYTHONPATH": str(ROOT)}  # a script's ranks import from its folder
    _run([*launch, "tests/data_parallel_ranks.py", *map(str, ranked)], this_tree)
    return {"one": one, "two": two, "resumed": root / "resumed"}


@pytest.mark.parametrize("name", list(ALGOS))
def test_two_ranks_end_with_one_process_parameters(runs, name):
    trainer, start = runs["one"][name]
    one = Path(trainer.cfg.out_dir) / "final"
    assert _moved(trainer, start) > 100 * BOUND, "the run must move the adapters"
    if name != "sft":
        assert min(h["acr"] for h in trainer.history) < 1.0, "some group must have an advantage"
    assert _largest_difference(one, runs["two"][name] / "final") <= BOUND


def test_a_checkpoint_resumes_on_another_number_of_ranks(runs):
    """One process wrote step 1; two ranks resumed it and ended where one process does."""
    straight = Path(runs["one"]["ppo"][0].cfg.out_dir) / "final"
    state = load_file(runs["resumed"] / "final" / "trainer_state.safetensors")
    assert "extra/value_head/proj.weight" in state
    assert _largest_difference(straight, runs["resumed"] / "final") <= BOUND


@pytest.fixture()
def noop_plugin(tmp_path) -> dict[str, str]:
    """An environment whose Python finds NoOp as an ``agentgym.envs`` plug-in, as a third-party
    env registers (every torchrun rank starts a fresh interpreter)."""
    info = tmp_path / "plugin" / "agentgym_noop_plugin-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: agentgym-noop-plugin\nVersion: 0\n"
    )
    entry = "[agentgym.envs]\nnoop = agentgym.testing.noop:register_test_envs\n"
    (info / "entry_points.txt").write_text(entry)
    return {**os.environ, "PYTHONPATH": str(tmp_path / "plugin")}


@pytest.mark.slow
def test_agentgym_train_nproc_runs_torchrun(noop, runs, noop_plugin, tmp_path):
    """``agentgym train CONFIG --nproc 2``: one run on two ranks, logged once by rank 0, its
    held-out episodes split between the ranks and gathered (12: 6 tasks, 2 samples each)."""
    suite, start = noop
    trainer, _ = runs["one"]["gigpo"]
    held_out = {"env.eval_suite": str(suite), "eval_samples": 2, "eval_temperature": 1.0}
    db, out = tmp_path / "m.db", tmp_path / "out"
    cfg = _config(tmp_path / "c.yaml", start, suite, out, ALGOS["gigpo"], db=str(db), **held_out)
    _run([sys.executable, "-m", "agentgym.cli", "train", str(cfg), "--nproc", "2"], noop_plugin)
    alone = _config(tmp_path / "h.yaml", start, suite, tmp_path / "h", {}, **held_out)
    here = Trainer(load_config(alone))  # the starting policy's held-out success, in one process
    before = here.evaluate()
    here.close()
    store = Store(db)
    runs_by_name = {run["name"]: run["id"] for run in store.runs()}
    assert sorted(runs_by_name) == ["train", "train step-0", "train step-2"]
    assert all(len(store.episode_rows(runs_by_name[f"train step-{s}"])) == 12 for s in (0, 2))
    logged = {
        (r["step"], r["name"]): r["value"] for r in store.train_metrics(runs_by_name["train"])
    }
    assert logged[(0, "eval_n")] == 12 and logged[(0, "eval_success")] == before["eval_success"]
    for row in trainer.history:
        for key in ("episodes", "reward", "acr", "loss_tokens", "trained_rows"):
            assert logged[(int(row["step"]), key)] == pytest.approx(row[key], abs=BOUND), key
    assert _largest_difference(Path(trainer.cfg.out_dir) / "final", out / "final") <= BOUND


def test_nproc_spells_torchrun_and_refuses_bad_counts(tmp_path):
    command = torchrun_command(tmp_path / "c.yaml", ["steps=3"], 4)
    assert command[1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=4"]
    assert command[5:] == [
        "-m",
        "agentgym.cli",
        "train",
        str(tmp_path / "c.yaml"),
        "--set",
        "steps=3",
    ]
    with pytest.raises(ValueError, match="at least one process"):
        torchrun_command(None, [], 0)


def test_shards_cover_the_jobs_in_order_and_rows_stride():
    jobs = list(range(11))
    ranks = [DataParallel(rank, 3) for rank in range(3)]
    assert [len(r.shard(jobs)) for r in ranks] == [4, 4, 3]
    assert [j for r in ranks for j in r.shard(jobs)] == jobs
    assert sorted(i for r in ranks for i in r.rows(7)) == list(range(7))
    assert DataParallel().shard(jobs) == jobs and DataParallel().rows(3) == [0, 1, 2]


def test_a_per_turn_adapter_policy_is_refused_on_several_ranks():
    check_policy("pa_moe", 1)
    check_policy(None, 4)
    with pytest.raises(ValueError, match="model.policy 'pa_moe'.*one process"):
        check_policy("pa_moe", 2)
