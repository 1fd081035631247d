"""A training run's record: every step's metrics in memory, in the store's ``train_metrics``
table and on the console, under a run id that is a hash of the config (a rerun resumes the
same run)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentgym.runner import git_sha, run_id_for, versions
from agentgym.train.config import HARNESS_ENV, TrainConfig

SHOWN = (
    "reward",
    "success",
    "acr",
    "errors",
    "nll",
    "pg_loss",
    "kl",
    "entropy",
    "logprob_gap_max",
    "switches",
    "tokens_per_s",
    "step_s",
    "eval_success",
)
"""The metrics a console line shows, where a step has them."""


class RunLog:
    """The metrics of one training run: :meth:`write` keeps, stores and prints a step's row."""

    def __init__(self, cfg: TrainConfig, console: Any = None) -> None:
        self.store, self.run_id = open_store(cfg)
        self.console, self.log_every = console, cfg.log_every
        self.history: list[dict[str, float]] = []
        self.on_log: Callable[[dict[str, float]], None] | None = None
        """Called with every row (``agentgym train``'s progress bar)."""

    def write(self, step: int, metrics: dict[str, float]) -> None:
        metrics = {"step": float(step), **metrics}
        self.history.append(metrics)
        if self.store is not None:
            self.store.save_train_metrics(self.run_id, step, metrics)
        if self.on_log is not None:
            self.on_log(metrics)
        if self.console is not None and step % self.log_every == 0:
            parts = [f"{k} {metrics[k]:.3g}" for k in SHOWN if k in metrics]
            self.console.print(f"step {step}: " + "  ".join(parts))

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


ADDED_LATER = (
    ("rollout", "notes", None),
    ("rollout", "harness", None),
    ("rollout", "harness_parallel", 4),
    ("rollout", "harness_timeout_s", 600.0),
    ("rollout", "harness_env", HARNESS_ENV),
    ("rollout", "stop", None),
    ("rollout", "importance", "none"),
    ("rollout", "importance_cap", 2.0),
    ("rollout", "max_staleness", None),
    ("rollout", "stale", "drop"),
    ("rollout", "mode", "sync"),
)
"""Settings added after runs were stored, with their defaults: at their default they stay out of
the run id, so a config that does not set them keeps the id it had, and its rerun resumes that
run."""

RENAMED_LATER = (("rollout", "max_tokens", "max_new_tokens"),)
"""Settings renamed after runs were stored, with the name they had: the run id hashes them under
it, so a config keeps the id it had before the rename."""


def config_for_run_id(cfg: TrainConfig) -> dict[str, Any]:
    """The config as the run id hashes it (:data:`ADDED_LATER` left out while at its default)."""
    dump = cfg.model_dump()
    for section, name, default in ADDED_LATER:
        if dump[section].get(name) == default:
            del dump[section][name]
    for section, name, old in RENAMED_LATER:
        dump[section][old] = dump[section].pop(name)
    return dump


def open_store(cfg: TrainConfig) -> tuple[Any, str]:
    """The store and this run's id (a hash of the config: a rerun resumes the same run)."""
    run_id = run_id_for(config_for_run_id(cfg))
    if cfg.db is None:
        return None, run_id
    from agentgym.store import Store

    store = Store(cfg.db)
    store.start_run(
        run_id,
        cfg.run_name,
        cfg.env.suite or cfg.env.id,
        f"train:{cfg.algo.name}:{cfg.model.path}",
        cfg.model_dump(),
        versions(("torch", "transformers")),
        git_sha(),
    )
    return store, run_id
