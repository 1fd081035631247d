"""Training you can watch: `agentgym train` with a store keeps each held-out evaluation as a run
of episodes linked to the training run, the viewer's training page and `agentgym report --run`
draw the curves, and the command shows a progress bar over the steps."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.store import Store
from agentgym.task import write_tasks
from agentgym.testing.noop import noop_suite
from agentgym.train.config import TrainConfig

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from agentgym.viewer import create_app  # noqa: E402


@pytest.fixture(scope="module")
def trained(tiny_model, tmp_path_factory):
    """Two GRPO steps of the tiny model on NoOp, evaluated before, at every step and after."""
    root = tmp_path_factory.mktemp("watch")
    suite = root / "noop.jsonl"
    write_tasks(suite, noop_suite(4, length=2).tasks)
    cfg = TrainConfig.model_validate({
        "model": {"path": str(tiny_model)},
        "env": {"id": "NoOp-v0", "suite": str(suite), "eval_suite": str(suite), "system_prompt": False},
        "rollout": {"tasks_per_step": 2, "group_size": 2, "max_turns": 2, "max_tokens": 4},
        "steps": 2, "eval_every": 1, "seed": 0, "threads": 1,
        "out_dir": str(root / "out"), "db": str(root / "t.db"), "run_name": "watch",
    })  # fmt: skip
    path = root / "c.yaml"
    path.write_text(json.dumps(cfg.model_dump()))
    result = CliRunner().invoke(app, ["train", str(path)])
    assert result.exit_code == 0, result.output
    return root / "t.db", result.output


def test_progress_bar_counts_the_steps(trained):
    _, output = trained
    assert "train grpo" in output and "2/2" in output


def test_held_out_evaluations_are_runs_of_episodes(trained):
    db, _ = trained
    store = Store(db)
    train = next(r for r in store.runs() if r["name"] == "watch")
    evals = {r["config"]["train_step"]: r for r in store.runs() if r["config"].get("train_run")}
    assert sorted(evals) == [0, 1, 2]  # before training, and after each step (the last twice)
    assert all(r["config"]["train_run"] == train["id"] for r in evals.values())
    episodes = list(store.episodes(evals[2]["id"]))
    assert len(episodes) == 4 and {e.task_id for e in episodes} == {
        f"noop-{i:05d}" for i in range(4)
    }
    assert evals[1]["name"] == "watch step-1"


def test_viewer_training_page_data(trained):
    db, _ = trained
    train_id = next(r for r in Store(db).runs() if r["name"] == "watch")["id"]
    with TestClient(create_app(db)) as client:
        body = client.get(f"/api/train/{train_id}").json()
        assert {"reward", "success", "entropy", "pg_loss"} <= set(
            body["curves"]
        )  # kl: when kl_coef > 0
        assert [step for step, _ in body["metrics"]["reward"]] == [1, 2]
        assert [p["step"] for p in body["held_out"]] == [0, 1, 2]
        assert all(p["episodes"] == 4 and len(p["ci95"]) == 2 for p in body["held_out"])
        assert client.get("/api/train/nope").status_code == 404


def test_report_prints_the_curves_and_plots_them(trained, tmp_path):
    db, _ = trained
    png = tmp_path / "curves.png"
    result = CliRunner().invoke(app, ["report", str(db), "--run", "watch", "--plot", str(png)])
    assert result.exit_code == 0, result.output
    assert "training run watch" in result.output and "held-out success" in result.output
    assert png.stat().st_size > 10_000
