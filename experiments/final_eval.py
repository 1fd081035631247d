"""A larger held-out evaluation of a harness's kept checkpoints, paired per task.

The harnesses evaluate every few steps on a few held-out tasks with one sample each, which is
cheap but noisy: on 40 episodes one rate's standard error is about 7.5 points, as large as the
gains being measured. This evaluates the after-SFT checkpoint and each arm's final one again on
more tasks and samples, in the same job list for every checkpoint (the same env seed per
(task, sample), and the same sampling seeds at the first turn; later turns' sampling seeds follow
which episodes are still running), so a difference between two checkpoints of one seed is paired
per task.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from experiments.results import mean_interval, t_interval

Records = list[dict[str, Any]]
"""One held-out episode each: ``task`` id, ``sample`` index, ``success`` (None: an env error)."""


def evaluate_checkpoints(
    saved: Path,
    checkpoints: dict[str, Path],
    make_config: Callable[[Path, Path], Any],
    settings: dict[str, Any],
) -> dict[str, Records] | None:
    """Each stage's held-out episodes from its checkpoint (``make_config(checkpoint, out_dir)``
    gives the trainer config that evaluates it), kept in ``saved`` after every stage so a killed
    run resumes; None when a checkpoint was not kept. Records made with other ``settings`` are
    evaluated again."""
    from agentgym.train.policy import CHECKPOINT_FILES
    from agentgym.train.trainer import Trainer

    kept = [any((p / f).is_file() for f in CHECKPOINT_FILES) for p in checkpoints.values()]
    if not all(kept):
        return None
    done = json.loads(saved.read_text(encoding="utf-8")) if saved.is_file() else {}
    if done.get("settings") != settings:
        done = {"settings": settings}
    for stage, path in checkpoints.items():
        if stage in done:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            trainer = Trainer(make_config(path, Path(tmp)))
            tasks, samples = trainer.eval_tasks(), trainer.cfg.eval_samples
            episodes = trainer.eval_episodes(tasks)
            trainer.close()
        done[stage] = [
            {
                "task": task.id,
                "sample": k,
                "success": bool(ep.episode.success) if ep.ok else None,
            }
            for (task, k), ep in zip(
                ((t, k) for t in tasks for k in range(samples)), episodes, strict=True
            )
        ]
        saved.write_text(json.dumps(done), encoding="utf-8")
    return done


def rate(records: Records) -> float:
    """Success over the records (env errors left out, as :meth:`Trainer.evaluate` does)."""
    wins = [r["success"] for r in records if r["success"] is not None]
    return sum(wins) / len(wins) if wins else 0.0


def per_task_gain(before: Records, after: Records) -> list[float]:
    """Per task, success rate over samples after minus before (tasks with an error left out)."""

    def by_task(records: Records) -> dict[str, list[bool]]:
        out: dict[str, list[bool]] = {}
        for r in records:
            out.setdefault(r["task"], []).append(r["success"])
        return out

    a, b = by_task(before), by_task(after)
    return [
        statistics.fmean(b[t]) - statistics.fmean(a[t])
        for t in a
        if t in b and None not in a[t] and None not in b[t]
    ]


def gain_rows(
    finals: Sequence[dict[str, Any]], stages: Sequence[str], pairs: Sequence[tuple[str, str]]
) -> list[list[str]]:
    """One row per seed (``finals``: each seed's ``seed`` and stage records): each stage's
    success and each pair's gain with a 95% interval over its tasks; then a row over seeds (mean
    rate, and each gain's mean with a Student-t interval over the seeds)."""
    rows = []
    for f in finals:
        gains = [mean_interval(per_task_gain(f[a], f[b])) for a, b in pairs]
        rows.append(
            [
                str(f["seed"]),
                *(f"{rate(f[s]):.1%}" for s in stages),
                *(f"{m:+.1%} [{lo:+.1%}, {hi:+.1%}]" for m, lo, hi in gains),
            ]
        )
    over = [
        t_interval([statistics.fmean(per_task_gain(f[a], f[b])) for f in finals]) for a, b in pairs
    ]
    rows.append(
        [
            f"mean of {len(finals)} seeds",
            *(f"{statistics.fmean(rate(f[s]) for f in finals):.1%}" for s in stages),
            *(f"{m:+.1%} [{lo:+.1%}, {hi:+.1%}]" for m, lo, hi in over),
        ]
    )
    return rows


def gain_columns(stages: Sequence[str], pairs: Sequence[tuple[str, str]]) -> list[str]:
    """The columns of :func:`gain_rows`."""
    return [
        "seed",
        *(f"{s} success" for s in stages),
        *(f"{b} - {a} [95%]" for a, b in pairs),
    ]
