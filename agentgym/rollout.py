"""One episode of one agent in one env: ``rollout`` returns an :class:`Episode`, never raises.

An exception in the env, the agent or the scorer is recorded on the episode (``status="error"`` and
the traceback); it is never turned into a silent reward of 0 and never ends the run. A reward or
outcome :mod:`agentgym.rewards` refuses is recorded so too, as its one-line reason.

With ``time_limit_s`` every env and agent call runs in a worker thread of the episode, and the
episode stops waiting for a call still going at the limit: it ends as ``limit`` and
``on_abandon`` is called, since the env is now in an unknown state (a step still running in it)
and must not be reused. A thread cannot be killed: the abandoned call runs on until it returns.
Python code, sleeps, I/O and sandboxed commands let the rest of the process go on meanwhile; one C
call that never releases the GIL does not (run such envs with ``isolate=`` to put them in a
process of their own).
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from agentgym.agent import Action, Agent, AgentFactory
from agentgym.episode import Episode, Usage
from agentgym.registry import spec
from agentgym.rewards import RewardError
from agentgym.task import Task


class _Abandoned(Exception):
    """The episode's time limit passed while a call was still running."""


class _Caller:
    """Runs an episode's env and agent calls in one daemon thread, waiting at most to the deadline.

    One thread for the whole episode, so an env sees all its calls from one thread. Daemon, so a
    call that never returns does not keep the process alive at exit.
    """

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.abandoned: str | None = None
        self._jobs: queue.Queue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None]
        self._jobs = queue.Queue()
        if deadline is not None:
            threading.Thread(target=self._work, name="agentgym-rollout-call", daemon=True).start()

    def __call__(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        if self.deadline is None:
            return fn(*args)
        future: Future[Any] = Future()
        self._jobs.put((future, fn, args))
        try:
            return future.result(timeout=max(0.0, self.deadline - time.monotonic()))
        except TimeoutError:
            if future.done():  # the call itself raised TimeoutError
                raise
            self.abandoned = what
            raise _Abandoned(what) from None

    def close(self) -> None:
        """Let the thread end (after the call it is in, if any)."""
        self._jobs.put(None)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, fn, args = job
            try:
                future.set_result(fn(*args))
            except BaseException as e:  # handed to the waiting episode
                future.set_exception(e)


def rollout(
    env: Any,
    agent: Agent,
    task: Task | str | None = None,
    *,
    seed: int | None = None,
    sample: int = 0,
    max_steps: int | None = None,
    time_limit_s: float | None = None,
    on_abandon: Callable[[], None] | None = None,
) -> Episode:
    """Run ``agent`` on ``task`` in ``env`` until the env ends the episode or a limit is hit.

    ``time_limit_s`` also ends a call still in progress (see the module docstring); then
    ``on_abandon`` is called: the env must be rebuilt before another episode.
    """
    started = time.time()
    episode = Episode(
        task_id=task.id if isinstance(task, Task) else task or "",
        env_id=_env_id(env),
        sample=sample,
        seed=seed,
        started_at=started,
    )
    deadline = None if time_limit_s is None else time.monotonic() + time_limit_s
    call = _Caller(deadline)
    try:
        obs, info = call("env.reset", lambda: env.reset(seed=seed, options={"task": task}))
        episode.task_id, episode.instruction = info["task_id"], info.get("instruction", "")
        episode.first_observation = obs
        call("agent.reset", agent.reset, {**info, "seed": seed})
        while True:
            if max_steps is not None and len(episode.steps) >= max_steps:
                episode.status = "limit"
                break
            if deadline is not None and time.monotonic() > deadline:
                episode.status, episode.error = "limit", f"time limit of {time_limit_s}s reached"
                break
            t0 = time.perf_counter()
            action = call("agent.act", agent.act, obs, info)
            t1 = time.perf_counter()
            text, usage = (
                (action.text, action.usage) if isinstance(action, Action) else (action, Usage())
            )
            obs, reward, terminated, truncated, info = call("env.step", env.step, text)
            episode.record_step(
                text if isinstance(text, str) else repr(text),  # the env said it was invalid
                obs,
                reward,
                terminated,
                truncated,
                info,
                usage,
                agent_latency_s=t1 - t0,
                env_latency_s=time.perf_counter() - t1,
            )
            if terminated or truncated:
                break
    except _Abandoned as e:
        why = (
            f"time limit of {time_limit_s}s reached during {e}, which was abandoned (still running)"
        )
        episode.fail(why, status="limit")
        if on_abandon is not None:
            on_abandon()
    except RewardError as e:  # the env's own mistake, said in one line: no traceback to read
        episode.fail(str(e))
    except Exception:
        episode.fail(traceback.format_exc())
    finally:
        call.close()
    episode.duration_s = time.time() - started
    return episode


def _env_id(env: Any) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else type(getattr(env, "unwrapped", env)).__name__


@dataclass(frozen=True)
class EpisodeSettings:
    """What every episode of a run shares; plain values, so Ray workers receive them as they are."""

    isolate: str | None = None
    max_steps: int | None = None
    time_limit_s: float | None = None
    env_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # checked, per env id


def failed_episode(task: Task, sample: int, error: BaseException) -> Episode:
    """The record of an episode that could not run (broken env, agent, or worker)."""
    return Episode(
        task_id=task.id,
        env_id=task.env,
        sample=sample,
        status="error",
        error="".join(traceback.format_exception(error)),
    )


def run_episode(
    envs: dict[str, Any],
    factory: AgentFactory,
    task: Task,
    sample: int,
    seed: int,
    settings: EpisodeSettings,
) -> Episode:
    """One episode with the env cached in ``envs`` (one per env id); never raises.

    Both backends call this, a worker thread here or a Ray actor elsewhere, so they give the same
    episodes.
    """
    try:
        if task.env not in envs:
            options = settings.env_options.get(task.env, {})
            envs[task.env] = spec(task.env).make(settings.isolate, **options)  # checked once
        env = envs[task.env]
        agent: Agent = factory(env)
    except Exception as e:  # a task naming a broken env is an errored episode, not a crash
        return failed_episode(task, sample, e)
    return rollout(
        env,
        agent,
        task,
        seed=seed,
        sample=sample,
        max_steps=settings.max_steps,
        time_limit_s=settings.time_limit_s,
        on_abandon=lambda: _discard(envs, task.env),
    )


def _discard(envs: dict[str, Any], env_id: str) -> None:
    """Forget an env with a call still running in it (the next episode builds a fresh one).

    It is closed in a daemon thread: closing may wait on the very call that hangs.
    """
    env = envs.pop(env_id)
    threading.Thread(target=env.close, name="agentgym-close-abandoned", daemon=True).start()
