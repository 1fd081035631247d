"""Concurrent, resumable evaluation: ``evaluate(suite, agent, concurrency=N, samples=k, db=path)``.

Episodes run in a thread pool (sync envs and agents), scheduled by asyncio; every finished episode
is written to the store in its own transaction from the event-loop thread (one writer). Rerunning the
same configuration finds the same run id and skips the episodes already stored.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import platform
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Protocol

from agentgym.agent import AgentFactory, agent_factory
from agentgym.env_options import check_suite_options
from agentgym.episode import Episode
from agentgym.extras import explain, missing, refusal
from agentgym.redact import redact_text
from agentgym.registry import check_isolate, check_nesting, spec
from agentgym.rollout import EpisodeSettings, failed_episode, run_episode
from agentgym.store import Store, StoreError
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


BACKENDS = ("local", "ray")


def episode_seed(seed: int, task_id: str, sample: int) -> int:
    """A seed per (run seed, task, sample), independent of scheduling order."""
    digest = hashlib.sha256(f"{seed}:{task_id}:{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def run_id_for(config: dict[str, Any]) -> str:
    """Same configuration, same id: that is what makes a rerun resume."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def _jsonable(value: Any) -> Any:
    """An env option as the run id sees it: JSON as is, a pydantic model as its fields, any other
    object by its type (two runs given different objects of one type share an id)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    try:
        json.dumps(value)
    except TypeError:
        return f"<{type(value).__qualname__}>"
    return value


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
    backend: str = "local",
    address: str | None = None,
    env_options: dict[str, Any] | None = None,
    env: str | None = None,
) -> RunResult:
    """Evaluate ``agent`` on every task of ``suite`` ``samples`` times; results go to ``db``.

    ``agent`` is a spec (``expert``, ``random``, ``openai:MODEL``...) or a callable that builds a
    fresh agent from an episode's env. ``isolate`` (``docker`` or ``local``) runs every env in a
    sandbox. ``backend="ray"`` runs the episodes in ``concurrency`` Ray actors (joining the cluster
    at ``address``, else starting a local one), each building its own env and agent; storing,
    resuming, seeds and callbacks stay here, so both backends give the same rows and share run ids.
    ``env_options`` are constructor keywords for every env of the suite (``{"user": "llm"}``),
    checked against each env's options before anything runs; they are part of the run id.
    ``env`` plays every task in that env id instead of the one the task names (the same env
    served elsewhere: ``openenv:http://HOST:PORT``). Returns when every episode is stored.
    """
    check_time_limit(time_limit_s)
    checked = check_run(
        suite, [agent], concurrency, samples, isolate, backend, address, env_options, env=env
    )
    return run_checked(
        checked, agent, db, seed, name, retry_errors, max_steps, time_limit_s, on_episode
    )


@dataclass(frozen=True)
class CheckedRun:
    """An evaluation that passed every check (:func:`check_run`): what :func:`run_checked` runs."""

    suite: TaskSuite
    factories: tuple[tuple[str | AgentFactory, AgentFactory], ...]
    """Each agent (a spec or a callable) and the factory it resolved to."""
    env_options: dict[str, dict[str, Any]]
    """The checked options per env id of the suite."""
    concurrency: int = 1
    samples: int = 1
    isolate: str | None = None
    backend: str = "local"
    address: str | None = None


def check_run(
    suite: TaskSuite | str,
    agents: Sequence[str | AgentFactory],
    concurrency: int = 1,
    samples: int = 1,
    isolate: str | None = None,
    backend: str = "local",
    address: str | None = None,
    env_options: dict[str, Any] | None = None,
    *,
    preflight: bool = False,
    env: str | None = None,
) -> CheckedRun:
    """Every check of an evaluation, once, before anything runs or is stored; a ``KeyError`` or
    ``ValueError`` says what was wrong. ``preflight`` (``agentgym eval``) also refuses a run that
    cannot work: an env id that is not registered, an agent that does not build against the
    suite's first env (bad options, a missing API key, a model that cannot load) or that refuses
    some of the tasks (its optional ``check_task``)."""
    if concurrency < 1 or samples < 1:
        raise ValueError(f"concurrency and samples must be >= 1, got {concurrency} and {samples}")
    check_backend(backend, address)
    suite = TaskSuite.load(suite) if isinstance(suite, str) else suite
    if env is not None:
        spec(env)  # an unknown id (or a server that does not answer) fails here
        suite = TaskSuite(suite.name, (t.model_copy(update={"env": env}) for t in suite))
    env_ids = sorted({t.env for t in suite})
    if preflight:
        for env_id in env_ids:
            spec(env_id)  # an unknown id: KeyError with the close matches
    options = check_suite_options(env_ids, env_options or {})
    check_isolate(isolate)
    check_nesting(env_ids, isolate)
    factories = tuple((a, agent_factory(a) if isinstance(a, str) else a) for a in agents)
    checked = CheckedRun(suite, factories, options, concurrency, samples, isolate, backend, address)
    if preflight:
        _preflight(checked)
    return checked


def _preflight(checked: CheckedRun) -> None:
    """Build each agent once against the suite's first env, as every episode will build it."""
    first = checked.suite.tasks[0].env
    env = spec(first).make(**checked.env_options.get(first, {}))
    try:
        for agent, factory in checked.factories:
            try:
                built = factory(env)
            except ImportError as e:  # openai:, hf: ... on an install without their extra
                if (refused := explain(e, f"--agent {redact_text(str(agent))}")) is None:
                    raise
                raise refused from None
            _check_tasks(str(agent), built, checked.suite)
    finally:
        env.close()


def _check_tasks(name: str, agent: Any, tasks: TaskSuite) -> None:
    """Refuse tasks the agent says it cannot play (its optional ``check_task``)."""
    if not hasattr(agent, "check_task"):
        return
    refused: dict[str, list[str]] = {}
    for task in tasks:
        try:
            agent.check_task(task)
        except ValueError as e:
            refused.setdefault(str(e), []).append(task.id)
    if refused:
        shared = os.path.commonprefix(list(refused)) if len(refused) > 1 else ""
        shared = shared[: shared.rfind(" ") + 1]  # whole words said once: "... only, not "
        reasons = shared + ", ".join(
            f"{why[len(shared) :]} ({len(ids)}, e.g. {ids[0]})" for why, ids in refused.items()
        )
        count = sum(map(len, refused.values()))
        raise ValueError(
            f"{name} cannot play {count} of {len(tasks)} tasks: {reasons}; choose tasks with --tag"
        )


def run_checked(
    checked: CheckedRun,
    agent: str | AgentFactory,
    db: str | Path | Store | None = None,
    seed: int = 0,
    name: str | None = None,
    retry_errors: bool = False,
    max_steps: int | None = None,
    time_limit_s: float | None = None,
    on_episode: Callable[[Episode, Progress], None] | None = None,
) -> RunResult:
    """Run one agent of a checked evaluation (see :func:`evaluate`); checks nothing again."""
    suite, options, isolate = checked.suite, checked.env_options, checked.isolate
    factory = next((f for a, f in checked.factories if a is agent or a == agent), None)
    if factory is None:
        raise ValueError(f"agent {agent!r} was not checked: pass it to check_run first")
    # keys stay out of the store, and out of the run id: the same run with a new key resumes
    agent_name = redact_text(
        agent if isinstance(agent, str) else getattr(agent, "__name__", type(agent).__name__)
    )
    config = {
        "suite": suite.name,
        "suite_sha256": _suite_digest(suite),
        "agent": agent_name,
        "samples": checked.samples,
        "max_steps": max_steps,
        "time_limit_s": time_limit_s,
        "seed": seed,
    }
    if isolate is not None:  # only when set, so the run ids (and resume) of plain runs stay
        config["isolate"] = isolate
    if options:  # likewise: plain runs keep their ids; checked values, so true == True
        first = next(iter(options.values()))
        config["env_options"] = {k: _jsonable(v) for k, v in sorted(first.items())}
    store = db if isinstance(db, Store) else Store(db)
    name = redact_text(name) if name else name
    run_id = run_id_for({**config, "name": name})
    store.start_run(
        run_id,
        name or f"{agent_name} on {suite.name}",
        suite.name,
        agent_name,
        config,
        versions(),
        git_sha(),
    )
    done = store.finished(run_id, include_errors=not retry_errors)
    samples = checked.samples
    todo = [(t, s) for t in suite for s in range(samples) if (t.id, s) not in done]
    progress = Progress(total=len(suite) * samples, skipped=len(suite) * samples - len(todo))
    if not todo:  # nothing left to resume: no threads, no Ray cluster
        return RunResult(run_id, store, [], progress)
    workers = min(checked.concurrency, len(todo))
    settings = EpisodeSettings(isolate, max_steps, time_limit_s, options)
    runner = _backend(checked.backend, agent, factory, settings, workers, checked.address)
    new = asyncio.run(_run_all(todo, runner, workers, store, run_id, seed, progress, on_episode))
    return RunResult(run_id, store, new, progress)


def check_time_limit(time_limit_s: float | None) -> None:
    """``ValueError`` unless the episode time limit is None or a positive finite number of seconds
    (``inf`` and ``nan`` never fire, ``0`` and negatives end every episode at once)."""
    if time_limit_s is not None and not (math.isfinite(time_limit_s) and time_limit_s > 0):
        raise ValueError(f"--time-limit must be a positive number of seconds, got {time_limit_s}")


class EpisodeBackend(Protocol):
    """Where episodes run: worker ``i`` runs one episode at a time for asyncio worker ``i``."""

    async def run(self, worker: int, task: Task, sample: int, seed: int) -> Episode:
        """Run one episode; failures come back as ``status="error"`` episodes, never raised."""
        ...

    def close(self, clean: bool) -> None:
        """Release the workers; after a ``clean`` finish also close their envs."""
        ...


class ThreadBackend:
    """Episodes in a pool of threads of this process; each thread keeps one env per env id."""

    def __init__(self, factory: AgentFactory, settings: EpisodeSettings, workers: int) -> None:
        self.factory, self.settings = factory, settings
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agentgym-episode")
        self.local = threading.local()
        self.caches: list[dict[str, Any]] = []  # every thread's envs, closed at the end

    async def run(self, worker: int, task: Task, sample: int, seed: int) -> Episode:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, self._run, task, sample, seed)

    def _run(self, task: Task, sample: int, seed: int) -> Episode:
        if not hasattr(self.local, "envs"):
            self.local.envs = {}
            self.caches.append(self.local.envs)
        return run_episode(self.local.envs, self.factory, task, sample, seed, self.settings)

    def close(self, clean: bool) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        if clean:  # an interrupted run's envs die with the process
            for envs in self.caches:
                for env in envs.values():
                    env.close()


def _backend(
    backend: str,
    agent: str | AgentFactory,
    factory: AgentFactory,
    settings: EpisodeSettings,
    workers: int,
    address: str | None,
) -> EpisodeBackend:
    """Threads use the factory; Ray workers get the spec (or the factory, pickled) to build their own."""
    if backend == "ray":
        from agentgym.ray_backend import RayBackend  # Ray is optional: imported only when asked for

        return RayBackend(agent, settings, workers, address)
    return ThreadBackend(factory, settings, workers)


def check_backend(backend: str, address: str | None = None) -> str:
    """``backend`` itself if it is known and ``address`` fits it, else a ``ValueError``."""
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: use one of {', '.join(BACKENDS)}")
    if address is not None and backend != "ray":
        raise ValueError(f"address={address!r} is a Ray cluster to join: it needs backend='ray'")
    if backend == "ray" and (gone := missing("ray")):
        raise ValueError(str(refusal("--backend ray", gone)))  # pip install ".[ray]", as any extra
    return backend


async def _run_all(
    todo: list[tuple[Task, int]],
    backend: EpisodeBackend,
    workers: int,
    store: Store,
    run_id: str,
    seed: int,
    progress: Progress,
    on_episode: Callable[[Episode, Progress], None] | None,
) -> list[Episode]:
    pending = iter(todo)
    finished: list[Episode] = []

    async def worker(i: int) -> None:
        for task, sample in pending:  # workers share one iterator: each item runs once
            try:
                ep = await backend.run(i, task, sample, episode_seed(seed, task.id, sample))
            except Exception as e:  # a backend that broke its promise loses an episode, not the run
                ep = failed_episode(task, sample, e)
            ep = save_or_record_failure(store, run_id, ep, task)
            finished.append(ep)
            progress.done += 1
            progress.successes += ep.success
            progress.errors += ep.status == "error"
            if on_episode is not None:
                on_episode(ep, progress)

    clean = False
    try:
        await asyncio.gather(*(worker(i) for i in range(workers)))
        clean = True
    finally:
        backend.close(clean)
    return finished


def save_or_record_failure(store: Store, run_id: str, ep: Episode, task: Task) -> Episode:
    """Store ``ep``; an episode that cannot be stored (a value SQLite or JSON refuses) is stored as
    an error episode saying why, so one episode never ends the run. A :class:`StoreError` (the file
    is read-only, the disk is full) still ends it: every later write would fail the same way."""
    try:
        store.save_episode(run_id, ep, task.tags)
        return ep
    except StoreError:
        raise
    except Exception as e:
        failed = failed_episode(task, ep.sample, e)
        failed.error = f"the episode could not be stored: {failed.error}"
        store.save_episode(run_id, failed, task.tags)
        return failed


def _suite_digest(suite: TaskSuite) -> str:
    h = hashlib.sha256()
    for t in suite:
        h.update(t.model_dump_json().encode())
    return h.hexdigest()[:16]


def versions(extra: tuple[str, ...] = ()) -> dict[str, str]:
    """Python's and the packages' versions a run records (``extra``: more packages, e.g. the
    trainer's torch and transformers)."""
    out = {"python": platform.python_version()}
    for pkg in ("agentgym", "gymnasium", "pydantic", *extra):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def git_sha() -> str | None:
    """The commit checked out in the working folder (eval and training runs record it)."""
    try:
        res = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if res.returncode != 0:
        return None
    return res.stdout.strip() or None
