"""What ``agentgym train`` does, kept out of the CLI module so the CLI stays a thin layer."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentgym.train import checkpoint
from agentgym.train.config import TrainConfig
from agentgym.train.distributed import check_policy, ranks_from_env
from agentgym.train.policy import resolve_checkpoint
from agentgym.train.trainer import Trainer


def check_checkpoint(cfg: TrainConfig) -> None:
    """A ``FileNotFoundError`` (make one with ``agentgym model init``) when ``model.path`` names
    no checkpoint and the run will load it: before any env, tokenizer or model is built, where
    the trainer would fail later with a traceback. A run that resumes has its trainer state
    checked too (:func:`agentgym.train.checkpoint.check_state`)."""
    check_policy(cfg.model.policy, ranks_from_env())
    resume_from = checkpoint.latest(cfg.out_dir) if cfg.resume else None
    if resume_from is not None:  # a pickled or corrupt trainer state: one line, nothing loaded
        checkpoint.check_state(resume_from)
    if resume_from is None or cfg.model.policy is not None:  # a policy builds on model.path
        resolve_checkpoint(cfg.model.path)


def run_train(cfg: TrainConfig, console: Any) -> dict[str, float]:
    """Train (evaluating before and after when a held-out suite is set); return last metrics."""
    trainer = Trainer(cfg, console)
    if not trainer.dp.main:  # rank 0 speaks for a data-parallel run
        from rich.console import Console

        console = Console(quiet=True)
    try:
        if trainer.step:
            console.print(f"resuming from step {trainer.step} ({trainer.resume_from})")
        with _progress_bar(trainer, console):
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


@contextlib.contextmanager
def _progress_bar(trainer: Trainer, console: Any) -> Iterator[None]:
    """A rich bar over the run's steps with ETA and the last reward, success and held-out
    success; the per-step lines still print above it. Without a terminal (a log file, CI): a
    plain line every few percent, with the time left."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [
        TextColumn(f"[bold]train {trainer.cfg.algo.name}[/bold]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[last]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]
    shown = {"reward": "reward", "success": "success", "nll": "nll", "eval_success": "held-out"}
    from agentgym.progress import progress

    with progress(console, columns, lambda fields: fields["last"]) as bar:
        job = bar.add_task(
            f"train {trainer.cfg.algo.name}",
            total=trainer.cfg.steps,
            completed=trainer.step,
            last="",
        )

        def on_log(metrics: dict[str, float]) -> None:
            last = "  ".join(
                f"{label} {metrics[k]:.3g}" for k, label in shown.items() if k in metrics
            )
            bar.update(job, completed=int(metrics.get("step", trainer.step)), last=last)

        trainer.runlog.on_log = on_log
        try:
            yield
        finally:
            trainer.runlog.on_log = None
