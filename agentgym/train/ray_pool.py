"""Env workers as Ray actors: the same pool interface, envs stepping in other processes or hosts.

Each actor holds a :class:`~agentgym.train.envpool.LocalEnvPool`; slot ``i`` lives on actor
``i % num_workers``. One ``step`` call sends every actor its share of the actions and waits for
all of them, so envs with slow steps (sandboxes, simulators) step in parallel while the trainer
process keeps the model and does the batched generation. ``address=None`` starts (or joins) a
local Ray instance; ``address="ray://host:10001"`` or ``"auto"`` joins a cluster.
"""

from __future__ import annotations

from typing import Any

from agentgym.ray_backend import init_ray
from agentgym.task import Task
from agentgym.train.envpool import LocalEnvPool, Outcome


class _Worker:
    """The actor body: a local pool for the slots this worker owns."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any]) -> None:
        import agentgym  # noqa: F401  (registers the built-in envs in the worker process)

        self.pool = LocalEnvPool(env_id, env_kwargs)

    def reset(self, jobs: list[tuple[int, Task, int]]) -> list[tuple[int, Outcome]]:
        return [(slot, self.pool.reset_slot(slot, task, seed)) for slot, task, seed in jobs]

    def step(self, actions: dict[int, str]) -> dict[int, Outcome]:
        return self.pool.step(actions)

    def close(self) -> None:
        self.pool.close()


class RayEnvPool:
    """:class:`~agentgym.train.envpool.EnvPool` over ``num_workers`` Ray actors."""

    def __init__(
        self,
        env_id: str,
        env_kwargs: dict[str, Any] | None = None,
        num_workers: int = 2,
        address: str | None = None,
    ) -> None:
        if num_workers < 1:
            raise ValueError(f"num_workers must be at least 1, got {num_workers}")
        ray = init_ray(address)
        local = LocalEnvPool(env_id, env_kwargs)  # validates the id; gives prompt and flags
        self.env_id = env_id
        self.system_prompt, self.free_text_actions = local.system_prompt, local.free_text_actions
        actor: Any = ray.remote(num_cpus=0)(_Worker)
        self._ray = ray
        self.workers: list[Any] = [
            actor.remote(env_id, dict(env_kwargs or {})) for _ in range(num_workers)
        ]

    def reset(self, jobs: list[tuple[Task, int]]) -> list[Outcome]:
        n = len(self.workers)
        shares = [[(i, t, s) for i, (t, s) in enumerate(jobs) if i % n == k] for k in range(n)]
        parts = self._ray.get(
            [w.reset.remote(sh) for w, sh in zip(self.workers, shares, strict=True)]
        )
        found = dict(pair for part in parts for pair in part)
        return [found[i] for i in range(len(jobs))]

    def step(self, actions: dict[int, str]) -> dict[int, Outcome]:
        n = len(self.workers)
        shares = [{i: a for i, a in actions.items() if i % n == k} for k in range(n)]
        calls = [w.step.remote(sh) for w, sh in zip(self.workers, shares, strict=True) if sh]
        return {slot: out for part in self._ray.get(calls) for slot, out in part.items()}

    def close(self) -> None:
        self._ray.get([w.close.remote() for w in self.workers])
        for w in self.workers:
            self._ray.kill(w)
        self.workers = []
