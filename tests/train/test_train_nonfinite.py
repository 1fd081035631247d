"""Non-finite numbers never reach the weights: an env's ``inf`` or ``1e308`` reward makes its
episode an error and the run trains on the others; a loss that is NaN or infinite anyway (here
from a credit function that overflows float32) stops ``agentgym train`` with one line naming
the step, and nothing of that step is saved."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file
from support import extreme_suite
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.task import write_tasks
from agentgym.train.credit import broadcast, episode_arrays, register_credit

runner = CliRunner()
SMALL = ["env.system_prompt=false", "rollout.tasks_per_step=4", "rollout.group_size=2"]
SMALL += ["rollout.max_turns=2", "rollout.max_tokens=4", "threads=1"]


def overflowing_credit(episodes, ctx):
    """A credit function with a scale bug: advantages past float32's range (about 3.4e38)."""
    rewards, _, valid = episode_arrays(episodes)
    return broadcast(episodes, np.where(valid, (rewards + 1.0) * 1e39, 0.0))


register_credit("overflowing", overflowing_credit)


def _train(tiny_model, tmp_path: Path, *said: str, extra: tuple[str, ...] = ()):
    suite = tmp_path / "extreme.jsonl"
    write_tasks(suite, extreme_suite(*said).tasks)
    out = tmp_path / "run"
    args = ["train", "-c", f"model.path={tiny_model}", "-c", "env.id=ExtremeReward-v0"]
    for item in [f"env.suite={suite}", f"out_dir={out}", *SMALL, *extra]:
        args += ["-c", item]
    return runner.invoke(app, args), out


def _finite(directory: Path) -> bool:
    weights = load_file(str(directory / "model.safetensors"))
    return all(bool(torch.isfinite(w).all()) for w in weights.values())


def test_extreme_rewards_are_error_episodes_and_the_weights_stay_finite(tiny_model, tmp_path):
    result, out = _train(tiny_model, tmp_path, "ok", "inf", "1e308", "ok", extra=("steps=2",))
    assert result.exit_code == 0, result.output
    assert "errors 4" in result.output  # both samples of the inf and the 1e308 task, each step
    assert _finite(out / "final")


def test_a_non_finite_loss_stops_the_run_naming_the_step_and_saves_nothing(tiny_model, tmp_path):
    extra = ("steps=3", "save_every=1", "algo.credit=overflowing")
    result, out = _train(tiny_model, tmp_path, "ok", "ok", extra=extra)
    assert result.exit_code == 1, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert lines[-1].startswith("error: training stopped at step 1: the loss is "), lines
    assert "Traceback" not in result.output
    assert not (out / "final").exists()
    assert not list(out.glob("step*")), sorted(p.name for p in out.iterdir())
