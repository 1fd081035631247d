"""One episode of one agent in one env: ``rollout`` returns an :class:`Episode`, never raises.

An exception in the env, the agent or the scorer is recorded on the episode (``status="error"`` and
the traceback); it is never turned into a silent reward of 0 and never ends the run.
"""

from __future__ import annotations

import time
import traceback
from typing import Any

from agentgym.agent import Action, Agent
from agentgym.episode import Episode, Step, Usage
from agentgym.task import Task


def _jsonable(info: dict[str, Any]) -> dict[str, Any]:
    """Keep what the store can hold; ``available_actions`` and tool schemas are dropped per step."""
    out: dict[str, Any] = {}
    for k, v in info.items():
        if k in ("available_actions", "tools"):
            continue
        out[k] = v if isinstance(v, (str, int, float, bool, type(None), list, dict)) else repr(v)
    return out


def rollout(
    env: Any,
    agent: Agent,
    task: Task | str | None = None,
    *,
    seed: int | None = None,
    sample: int = 0,
    max_steps: int | None = None,
    time_limit_s: float | None = None,
) -> Episode:
    """Run ``agent`` on ``task`` in ``env`` until the env ends the episode or a limit is hit."""
    started = time.time()
    episode = Episode(
        task_id=task.id if isinstance(task, Task) else task or "",
        env_id=_env_id(env),
        sample=sample,
        seed=seed,
        started_at=started,
    )
    deadline = None if time_limit_s is None else time.monotonic() + time_limit_s
    try:
        obs, info = env.reset(seed=seed, options={"task": task})
        episode.task_id, episode.instruction = info["task_id"], info.get("instruction", "")
        episode.first_observation = obs
        agent.reset({**info, "seed": seed})
        while True:
            if max_steps is not None and len(episode.steps) >= max_steps:
                episode.status = "limit"
                break
            if deadline is not None and time.monotonic() > deadline:
                episode.status, episode.error = "limit", f"time limit of {time_limit_s}s reached"
                break
            t0 = time.perf_counter()
            action = agent.act(obs, info)
            t1 = time.perf_counter()
            text, usage = (
                (action.text, action.usage) if isinstance(action, Action) else (action, Usage())
            )
            obs, reward, terminated, truncated, info = env.step(text)
            t2 = time.perf_counter()
            episode.steps.append(
                Step(
                    t=len(episode.steps),
                    action=text,
                    observation=obs,
                    reward=reward,
                    terminated=terminated,
                    truncated=truncated,
                    valid=info.get("valid", True),
                    info=_jsonable(info),
                    agent_latency_s=t1 - t0,
                    env_latency_s=t2 - t1,
                    usage=usage,
                )
            )
            episode.reward += reward
            if terminated or truncated:
                episode.status = "completed" if terminated else "limit"
                break
        final = episode.steps[-1].info if episode.steps else {}
        episode.success = bool(final.get("success", False))
        episode.score = float(final.get("score", 0.0))
    except Exception:
        episode.status, episode.error = "error", traceback.format_exc()
        episode.success, episode.score = False, 0.0
    episode.duration_s = time.time() - started
    return episode


def _env_id(env: Any) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else type(getattr(env, "unwrapped", env)).__name__
