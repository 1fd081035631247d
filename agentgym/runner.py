"""Concurrent, resumable evaluation: ``evaluate(suite, agent, concurrency=N, samples=k, db=path)``.

Episodes run in a thread pool (sync envs and agents), scheduled by asyncio; every finished episode
is written to the store in its own transaction from the event-loop thread (one writer). Rerunning the
same configuration finds the same run id and skips the episodes already stored.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import platform
import subprocess
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from agentgym.agent import Agent, AgentFactory, agent_factory
from agentgym.episode import Episode
from agentgym.registry import check_isolate, make
from agentgym.rollout import rollout
from agentgym.store import Store
from agentgym.task import Task, TaskSuite


@dataclass
class Progress:
    """Live counters handed to the progress callback after every episode."""

    total: int
    skipped: int = 0
    done: int = 0
    successes: int = 0
    errors: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def episodes_per_s(self) -> float:
        return self.done / max(time.monotonic() - self.started, 1e-9)


@dataclass
class RunResult:
    """What ``evaluate`` returns: the run id, the store, and this invocation's new episodes."""

    run_id: str
    store: Store
    new_episodes: list[Episode]
    progress: Progress

    def episode_rows(self) -> list[dict[str, Any]]:
        """All stored episodes of the run, including those from earlier (resumed) invocations."""
        return self.store.episode_rows(self.run_id)


def episode_seed(seed: int, task_id: str, sample: int) -> int:
    """A seed per (run seed, task, sample), independent of scheduling order."""
    digest = hashlib.sha256(f"{seed}:{task_id}:{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def run_id_for(config: dict[str, Any]) -> str:
    """Same configuration, same id: that is what makes a rerun resume."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def evaluate(
    suite: TaskSuite | str,
    agent: str | AgentFactory,
    *,
    concurrency: int = 1,
    samples: int = 1,
    db: str | Path | Store | None = None,
    max_steps: int | None = None,
    time_limit_s: float | None = None,
    seed: int = 0,
    name: str | None = None,
    retry_errors: bool = False,
    isolate: str | None = None,
    on_episode: Callable[[Episode, Progress], None] | None = None,
) -> RunResult:
    """Evaluate ``agent`` on every task of ``suite`` ``samples`` times; results go to ``db``.

    ``agent`` is a spec (``expert``, ``random``, ``openai:MODEL``...) or a callable that builds a
    fresh agent from an episode's env. ``isolate`` (``docker`` or ``local``) runs every env in a
    sandbox. Returns when every episode is stored.
    """
    if concurrency < 1 or samples < 1:
        raise ValueError(f"concurrency and samples must be >= 1, got {concurrency} and {samples}")
    suite = TaskSuite.load(suite) if isinstance(suite, str) else suite
    factory = agent_factory(agent) if isinstance(agent, str) else agent
    agent_name = (
        agent if isinstance(agent, str) else getattr(agent, "__name__", type(agent).__name__)
    )
    config = {
        "suite": suite.name,
        "suite_sha256": _suite_digest(suite),
        "agent": agent_name,
        "samples": samples,
        "max_steps": max_steps,
        "time_limit_s": time_limit_s,
        "seed": seed,
    }
    if check_isolate(
        isolate
    ):  # only when set, so the run ids (and resume) of plain runs stay as they were
        config["isolate"] = isolate
    store = db if isinstance(db, Store) else Store(db)
    run_id = run_id_for({**config, "name": name})
    store.start_run(
        run_id,
        name or f"{agent_name} on {suite.name}",
        suite.name,
        agent_name,
        config,
        _versions(),
        _git_sha(),
    )
    done = store.finished(run_id, include_errors=not retry_errors)
    todo = [(t, s) for t in suite for s in range(samples) if (t.id, s) not in done]
    progress = Progress(total=len(suite) * samples, skipped=len(suite) * samples - len(todo))
    new = asyncio.run(
        _run_all(todo, factory, store, run_id, concurrency, config, progress, on_episode)
    )
    return RunResult(run_id, store, new, progress)


async def _run_all(
    todo: list[tuple[Task, int]],
    factory: AgentFactory,
    store: Store,
    run_id: str,
    concurrency: int,
    config: dict[str, Any],
    progress: Progress,
    on_episode: Callable[[Episode, Progress], None] | None,
) -> list[Episode]:
    loop = asyncio.get_running_loop()
    pending = iter(todo)
    finished: list[Episode] = []
    envs = threading.local()
    opened: list[Any] = []  # every env the worker threads built, closed at the end

    def run_one(task: Task, sample: int) -> Episode:
        cache: dict[str, Any] = envs.__dict__.setdefault("by_id", {})
        try:
            if task.env not in cache:
                cache[task.env] = make(task.env, isolate=config.get("isolate"))
                opened.append(cache[task.env])
            env = cache[task.env]
            agent: Agent = factory(env)
        except Exception as e:  # a task naming a broken env is an errored episode, not a crash
            return Episode(
                task_id=task.id,
                env_id=task.env,
                sample=sample,
                status="error",
                error="".join(traceback.format_exception(e)),
            )
        return rollout(
            env,
            agent,
            task,
            seed=episode_seed(config["seed"], task.id, sample),
            sample=sample,
            max_steps=config["max_steps"],
            time_limit_s=config["time_limit_s"],
        )

    async def worker() -> None:
        for task, sample in pending:  # workers share one iterator: each item runs once
            ep = await loop.run_in_executor(pool, run_one, task, sample)
            store.save_episode(run_id, ep, task.tags)
            finished.append(ep)
            progress.done += 1
            progress.successes += ep.success
            progress.errors += ep.status == "error"
            if on_episode is not None:
                on_episode(ep, progress)

    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="agentgym-episode")
    try:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, max(len(todo), 1)))))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    for env in opened:  # after a clean finish only: an interrupted run's envs die with the process
        env.close()
    return finished


def _suite_digest(suite: TaskSuite) -> str:
    h = hashlib.sha256()
    for t in suite:
        h.update(t.model_dump_json().encode())
    return h.hexdigest()[:16]


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("agentgym", "gymnasium", "pydantic"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def _git_sha() -> str | None:
    try:
        res = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None
