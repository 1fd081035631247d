"""Where envs step during training: in this process, or on Ray actors (``ray_pool.py``).

The trainer generates actions for all in-flight episodes in one batch, then hands the whole set
of actions to a pool. A pool owns one env per slot (slot = episode index within a rollout batch,
envs reused across batches) and never raises for an env failure: the outcome carries the
traceback, and the episode becomes ``status="error"``.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentgym.task import Task
from agentgym.traits import traits


@dataclass
class Outcome:
    """What one reset or step returned, or the traceback of why it failed."""

    observation: str = ""
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


class EnvPool(Protocol):
    """Resets and steps many envs at once; slot ``i`` is episode ``i`` of a rollout batch."""

    env_id: str
    system_prompt: str
    free_text_actions: bool

    def reset(self, jobs: list[tuple[Task, int]]) -> list[Outcome]:
        """Start one episode per (task, seed); slot ``i`` gets ``jobs[i]``."""
        ...

    def step(self, actions: dict[int, str]) -> dict[int, Outcome]:
        """Step the envs of the given slots with their actions."""
        ...

    def close(self) -> None: ...


def _env_class(env_id: str) -> Any:
    from agentgym.registry import spec

    return spec(env_id).load()


class LocalEnvPool:
    """Envs in this process, stepped one after the other (in-process envs step in microseconds)."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None) -> None:
        cls = _env_class(env_id)
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        env_traits = traits(cls)
        self.system_prompt: str = env_traits.system_prompt
        self.free_text_actions: bool = env_traits.free_text_actions
        self.envs: dict[int, Any] = {}

    def _env(self, slot: int) -> Any:
        if slot not in self.envs:
            from agentgym.registry import make

            self.envs[slot] = make(self.env_id, **self.env_kwargs)
        return self.envs[slot]

    def reset(self, jobs: list[tuple[Task, int]]) -> list[Outcome]:
        return [self.reset_slot(i, task, seed) for i, (task, seed) in enumerate(jobs)]

    def reset_slot(self, slot: int, task: Task, seed: int) -> Outcome:
        try:
            obs, info = self._env(slot).reset(seed=seed, options={"task": task})
            return Outcome(observation=obs, info=_plain(info))
        except Exception:
            return Outcome(error=traceback.format_exc())

    def step(self, actions: dict[int, str]) -> dict[int, Outcome]:
        return {slot: self.step_slot(slot, action) for slot, action in actions.items()}

    def step_slot(self, slot: int, action: str) -> Outcome:
        try:
            obs, reward, terminated, truncated, info = self._env(slot).step(action)
            return Outcome(obs, float(reward), bool(terminated), bool(truncated), _plain(info))
        except Exception:
            return Outcome(error=traceback.format_exc())

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
        self.envs.clear()


def _plain(info: dict[str, Any]) -> dict[str, Any]:
    """Info without the tool schemas (large, and not needed here); the admissible actions stay
    (a bounded context, ``rollout.history``, lists them in every prompt)."""
    return {k: v for k, v in info.items() if k != "tools"}


def make_pool(
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    backend: str = "local",
    num_workers: int = 2,
    address: str | None = None,
) -> EnvPool:
    """A pool for ``backend`` ``"local"`` or ``"ray"`` (env workers as Ray actors)."""
    if backend == "local":
        return LocalEnvPool(env_id, env_kwargs)
    if backend == "ray":
        from agentgym.train.ray_pool import RayEnvPool

        return RayEnvPool(env_id, env_kwargs, num_workers=num_workers, address=address)
    raise ValueError(f"unknown rollout backend {backend!r}; use 'local' or 'ray'")
