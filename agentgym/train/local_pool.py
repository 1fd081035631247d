"""Envs stepping in this process: :class:`LocalEnvPool`, and the :class:`Outcome` of a reset or step.

Every pool is one of these at heart: the Ray pool (:class:`agentgym.ray_backend.RayEnvPool`) holds
one per actor. An env failure never raises: the outcome carries the traceback.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any

from agentgym.rewards import RewardError, check_reward
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
            reward = check_reward(reward)  # before it reaches a turn's credit
            return Outcome(obs, reward, bool(terminated), bool(truncated), _plain(info))
        except RewardError as e:
            return Outcome(error=str(e))
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
