"""What ``agentgym train`` does, kept out of the CLI module so the CLI stays a thin layer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentgym.train.config import TrainConfig
from agentgym.train.trainer import Trainer


def run_train(cfg: TrainConfig, console: Any) -> dict[str, float]:
    """Train (evaluating before and after when a held-out suite is set); return last metrics."""
    trainer = Trainer(cfg, console)
    try:
        if trainer.step:
            console.print(f"resuming from step {trainer.step} ({trainer.resume_from})")
        if trainer.eval_tasks() and trainer.step == 0:
            trainer.log({**trainer.evaluate()})
        metrics = trainer.run()
        if trainer.eval_tasks():
            result = trainer.evaluate()
            trainer.log(result)
            metrics.update(result)
    finally:
        trainer.close()
    final = Path(cfg.out_dir) / "final"
    console.print(f"saved to {final}; evaluate it with --agent hf:{final}")
    return metrics
