"""A run carried across machines in git (:mod:`experiments.run_snapshot`): what a new machine
restores is what the old one stored, an evaluation resumes with nothing redone, and a training
run resumed from the snapshot ends with the adapters of one that never stopped."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import torch

import agentgym
from agentgym.store import Store
from agentgym.task import TaskSuite, write_tasks
from agentgym.testing.noop import noop_suite
from agentgym.train.config import TrainConfig
from agentgym.train.trainer import Trainer
from experiments import run_snapshot


def _stored(db: Path) -> dict[str, tuple[list, list]]:
    """Every run's episodes and training metrics (without the time they were written)."""
    store = Store(db, read_only=True)
    rows = {
        r["id"]: (
            [e.model_dump() for e in store.episodes(r["id"])],
            [(m["step"], m["name"], m["value"]) for m in store.train_metrics(r["id"])],
        )
        for r in store.runs()
    }
    store.close()
    return rows


def test_an_evaluation_restored_on_a_new_machine_resumes_without_redoing_an_episode(tmp_path):
    suite = TaskSuite.load("household/valid_unseen").filter(limit=6)
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    first = agentgym.evaluate(suite, "expert", db=old / "eval.db")
    store = Store(old / "eval.db")
    for task in list(suite)[4:]:  # as if stopped after four episodes
        with store.db.conn as conn:
            conn.execute("delete from episodes where task_id = ?", [task.id])
            conn.execute("delete from steps where task_id = ?", [task.id])
    store.save_train_metrics(first.run_id, 1, {"success": 0.5, "step_s": 12.0})
    store.close()
    to = tmp_path / "git" / "household-rl"
    assert run_snapshot.snapshot(old, to, []) == {"eval.db": 4}
    files = sorted(p.name for p in (to / "eval").iterdir())
    assert files == sorted(["runs.json", f"{first.run_id}.jsonl.gz",
                            f"{first.run_id}.metrics.json"])  # fmt: skip
    before = {p: p.read_bytes() for p in (to / "eval").iterdir()}
    run_snapshot.snapshot(old, to, [])  # nothing new: the same bytes, no git change
    assert {p: p.read_bytes() for p in (to / "eval").iterdir()} == before

    assert run_snapshot.restore(to, new) == {"eval.db": 4}
    assert _stored(new / "eval.db") == _stored(old / "eval.db")
    rows = Store(new / "eval.db", read_only=True).episode_rows(first.run_id)
    assert [r["tags"] for r in rows] == [suite[r["task_id"]].tags for r in rows]
    assert run_snapshot.restore(to, new) == {"eval.db": 0}  # a second restore adds nothing

    resumed = agentgym.evaluate(suite, "expert", db=new / "eval.db")
    assert resumed.run_id == first.run_id
    assert resumed.progress.skipped == 4 and len(resumed.new_episodes) == 2


def _cfg(model: Path, out: Path, steps: int) -> TrainConfig:
    suite = out.parent / "noop.jsonl"
    write_tasks(suite, noop_suite(4, length=2).tasks)
    return TrainConfig.model_validate(
        {
            "model": {"path": str(model), "lora": {"r": 4, "alpha": 8}},
            "env": {"id": "NoOp-v0", "suite": str(suite), "system_prompt": False},
            "rollout": {"tasks_per_step": 2, "group_size": 3, "max_turns": 2,
                        "max_tokens": 3},
            "optim": {"lr": 1e-2, "micro_batch_size": 6},
            "steps": steps, "seed": 0, "out_dir": str(out / "rl-1"), "threads": 1,
            "save_every": 1, "resume": True, "db": str(out / "train.db"),
        }
    )  # fmt: skip


def test_training_resumed_from_a_snapshot_ends_where_an_unbroken_run_does(tiny_model, tmp_path):
    from safetensors.torch import load_file

    straight, run, to = tmp_path / "straight", tmp_path / "run", tmp_path / "git"
    Trainer(_cfg(tiny_model, straight, 2)).run()
    Trainer(_cfg(tiny_model, run, 2)).run()
    shutil.rmtree(run / "rl-1" / "final")  # as if stopped during step 2
    shutil.rmtree(run / "rl-1" / "step-000002")
    with Store(run / "train.db").db.conn as conn:
        conn.execute("delete from train_metrics where step = 2")
    report = run_snapshot.snapshot(run, to, ["rl-1"], base=str(tiny_model))
    assert report["rl-1"] == ["step-000001"] and report["train.db"] == 0
    saved = json.loads((to / "rl-1" / "step-000001" / "adapter_config.json").read_text())
    assert saved["base_model_name_or_path"] == str(tiny_model)
    shutil.rmtree(run)  # a new machine

    assert run_snapshot.restore(to, run)["rl-1"] == ["step-000001"]
    resumed = Trainer(_cfg(tiny_model, run, 2))
    assert resumed.step == 1
    resumed.run()
    a = load_file(straight / "rl-1" / "final" / "adapter_model.safetensors")
    b = load_file(run / "rl-1" / "final" / "adapter_model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    metrics = Store(run / "train.db", read_only=True)
    (stored,) = metrics.runs()
    assert sorted({m["step"] for m in metrics.train_metrics(stored["id"])}) == [1, 2]
    metrics_file = to / "train" / f"{stored['id']}.metrics.json"
    committed = metrics_file.read_bytes()
    run_snapshot.snapshot(run, to, ["rl-1"], base=str(tiny_model))
    again = json.loads(metrics_file.read_bytes())
    step_1 = [m for m in again if m["step"] == 1]
    assert step_1 == [m for m in json.loads(committed) if m["step"] == 1]  # its time kept
    # Finished: its final alone (a full checkpoint) is carried, the step before it dropped.
    assert sorted(p.name for p in (to / "rl-1").iterdir()) == ["final"]
    shutil.rmtree(run)
    assert run_snapshot.restore(to, run)["rl-1"] == ["final"]
    b = load_file(run / "rl-1" / "final" / "adapter_model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env=env).stdout  # fmt: skip


def _fake_step(folder: Path, step: int, seed: int) -> None:
    """A checkpoint of incompressible bytes (git's binary patch of it is as large as a real one)."""
    step_dir = folder / f"step-{step:06d}"
    step_dir.mkdir(parents=True)
    noise = random.Random(seed)
    (step_dir / "adapter_model.safetensors").write_bytes(noise.randbytes(700_000))
    (step_dir / "trainer_state.safetensors").write_bytes(noise.randbytes(700_000))
    (step_dir / "trainer_state.json").write_text("{}")


def test_the_snapshot_loop_holds_checkpoints_past_the_sessions_diff_budget(tmp_path):
    """``experiments/commit_snapshots.sh``: the stores are committed every time, a newer
    checkpoint only while the session's diffs stay under the budget (a try whose every-step
    snapshots were too big did not land at all), and a snapshot right after the loop's own last
    one replaces it, never one that has landed."""
    root = Path(__file__).resolve().parents[2]
    repo, out = tmp_path / "repo", tmp_path / "out"
    repo.mkdir()
    env = {**os.environ, "PYTHONPATH": str(root), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    _git(repo, "init", "-q")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "landed", env=env)
    suite = TaskSuite.load("household/valid_unseen").filter(limit=3)
    agentgym.evaluate(suite.filter(limit=1), "expert", db=out / "eval.db")
    _fake_step(out / "rl-1", 1, seed=1)

    def loop_once(budget_mib: int, since: str) -> list[str]:
        since = _git(repo, "rev-parse", since).strip()
        subprocess.run(["bash", str(root / "experiments/commit_snapshots.sh"), str(out),
                        "snap", since, str(budget_mib), "once"],
                       cwd=repo, env=env, check=True, capture_output=True)  # fmt: skip
        assert _git(repo, "status", "--porcelain") == ""  # nothing left half-done
        return sorted(_git(repo, "ls-files", "snap").split())

    def commits() -> int:
        return int(_git(repo, "rev-list", "--count", "HEAD"))

    first = loop_once(budget_mib=50, since="HEAD")
    assert "snap/rl-1/step-000001/trainer_state.safetensors" in first
    assert any(name.startswith("snap/eval/") and name.endswith(".jsonl.gz") for name in first)
    _git(repo, "commit", "-q", "--allow-empty", "-m", "code", env=env)

    agentgym.evaluate(suite, "expert", db=out / "eval.db")  # a second run, of three episodes
    _fake_step(out / "rl-1", 2, seed=2)
    held = loop_once(budget_mib=2, since="HEAD~2")  # the first snapshot used about 1.9 MiB
    assert "snap/rl-1/step-000001/trainer_state.safetensors" in held
    assert not any("step-000002" in name for name in held)
    assert _git(repo, "log", "-1", "--format=%s").find("checkpoints held") > 0
    assert commits() == 4
    restored = tmp_path / "restored"
    assert run_snapshot.restore(repo / "snap", restored)["eval.db"] == 1 + 3
    assert (restored / "rl-1" / "step-000001").is_dir()

    after = loop_once(budget_mib=50, since="HEAD~3")
    assert "snap/rl-1/step-000002/trainer_state.safetensors" in after
    assert not any("step-000001" in name for name in after)
    assert commits() == 4  # the held snapshot replaced, not followed

    _fake_step(out / "rl-1", 3, seed=3)
    landed = _git(repo, "rev-parse", "HEAD").strip()
    loop_once(budget_mib=50, since="HEAD")  # the last snapshot has landed: a new commit
    assert commits() == 5 and _git(repo, "rev-parse", "HEAD~1").strip() == landed
