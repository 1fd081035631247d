"""Where envs step during training: in this process (``local_pool.py``), or on Ray actors
(:class:`agentgym.ray_backend.RayEnvPool`).

The trainer generates actions for all in-flight episodes in one batch, then hands the whole set
of actions to a pool. A pool owns one env per slot (slot = episode index within a rollout batch,
envs reused across batches) and never raises for an env failure: the outcome carries the
traceback, and the episode becomes ``status="error"``.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentgym.task import Task
from agentgym.train.local_pool import LocalEnvPool, Outcome

__all__ = ["EnvPool", "LocalEnvPool", "Outcome", "make_pool"]


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
        from agentgym.ray_backend import RayEnvPool  # Ray is optional: imported only when asked for

        return RayEnvPool(env_id, env_kwargs, num_workers=num_workers, address=address)
    raise ValueError(f"unknown rollout backend {backend!r}; use 'local' or 'ray'")
