"""Held-out evaluation during training: the jobs ``agentgym eval --seed SEED`` would run, success
with a 95% Wilson interval, and the episodes kept in the store as a run of their own."""

from __future__ import annotations

from typing import Any

from agentgym.metrics import wilson_interval
from agentgym.runner import episode_seed, git_sha, run_id_for, versions
from agentgym.task import Task
from agentgym.train.config import TrainConfig
from agentgym.train.episode import TokenEpisode
from agentgym.train.rollout import Job


def eval_jobs(tasks: list[Task], seed: int, samples: int) -> list[Job]:
    """``samples`` episodes per task, with the env seeds of ``agentgym eval --seed SEED``
    (``episode_seed``), so greedy episodes here and there agree."""
    return [
        Job(t, f"eval:{t.id}", k, episode_seed(seed, t.id, k))
        for t in tasks
        for k in range(samples)
    ]


def success(episodes: list[TokenEpisode]) -> dict[str, float]:
    """Success over the episodes that ran, its Wilson interval, and how many failed to run."""
    ok = [ep for ep in episodes if ep.ok]
    wins = sum(ep.episode.success for ep in ok)
    lo, hi = wilson_interval(wins, len(ok))
    return {
        "eval_success": wins / len(ok) if ok else 0.0,
        "eval_lo": lo,
        "eval_hi": hi,
        "eval_n": float(len(ok)),
        "eval_errors": float(len(episodes) - len(ok)),
    }


def store_eval(
    store: Any,
    run_id: str,
    cfg: TrainConfig,
    step: int,
    tasks: list[Task],
    episodes: list[TokenEpisode],
) -> None:
    """Keep a held-out evaluation as a run of its own, ``RUN_NAME step-N``, linked to the
    training run (config ``train_run``/``train_step``): the viewer and ``agentgym report --run``
    draw held-out success over steps from these, and every episode can be read."""
    if store is None:
        return
    config = {"train_run": run_id, "train_step": step}
    eval_id = run_id_for(config)
    store.start_run(
        eval_id,
        f"{cfg.run_name} step-{step}",
        cfg.env.eval_suite or cfg.env.id,
        f"train:{cfg.algo.name}:{cfg.model.path}",
        config | {"samples": cfg.eval_samples, "temperature": cfg.eval_temperature},
        versions(("torch", "transformers")),
        git_sha(),
    )
    tags = {t.id: t.tags for t in tasks}
    for ep in episodes:
        store.save_episode(eval_id, ep.episode, tags.get(ep.episode.task_id, []))
