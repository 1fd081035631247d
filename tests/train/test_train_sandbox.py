"""Training on a sandboxed env: SFT on the expert's sandboxed trajectories of Swe-v0, then a GRPO
step whose rollouts run their commands in sandboxes (bubblewrap, and Docker where available)."""

from __future__ import annotations

import shutil

import pytest

from agentgym.sandbox.testing import require_docker
from agentgym.train.config import TrainConfig
from agentgym.train.sft import demonstrations
from agentgym.train.trainer import Trainer


@pytest.mark.parametrize("provider", ["local", "docker"])
def test_sft_then_grpo_on_sandboxed_swe(provider, tiny_model, tmp_path):
    if provider == "local" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    if provider == "docker":
        require_docker(need_current_image=True)
    base = {
        "model": {"path": str(tiny_model)},
        "env": {
            "id": "Swe-v0",
            "kwargs": {"sandbox": provider},
            "suite": "swe/humanevalfix",
            "limit": 2,
            "system_prompt": False,
        },
        "rollout": {"tasks_per_step": 1, "group_size": 2, "max_turns": 2, "max_tokens": 8},
        "sft": {"batch_size": 2},
        "steps": 1,
        "out_dir": str(tmp_path / "sft"),
        "threads": 1,
    }
    sft = Trainer(TrainConfig.model_validate({**base, "algo": {"name": "sft"}}))
    data = demonstrations(sft.cfg, sft.chat, sft.pool.system_prompt, sft.train_tasks)
    assert len(data) == 2 and all(ep.episode.success for ep in data)  # the expert, sandboxed
    sft.run()
    sft.close()
    rl = Trainer(
        TrainConfig.model_validate(
            {
                **base,
                "model": {"path": str(tmp_path / "sft" / "final")},
                "out_dir": str(tmp_path / "rl"),
            }
        )
    )
    metrics = rl.run()
    rl.close()
    assert metrics["errors"] == 0 and metrics["episodes"] == 2
    assert metrics["turns"] >= 1
