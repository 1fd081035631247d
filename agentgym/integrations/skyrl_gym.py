"""agentgym envs in SkyRL-gym: any agentgym env as a skyrl-gym env.

:func:`register_skyrl` registers :class:`AgentgymSkyRLEnv` in skyrl-gym's registry (id
``agentgym``); ``skyrl_gym.make("agentgym", extras={"env_id": ..., "task": ...})`` builds it, and
SkyRL's ``init``/``step`` loop plays our env: the prompt is the env's system prompt and first
observation, each step's observation comes back as a user message, the reward is the env's.
skyrl-gym's own GSM8K envs as agentgym envs are the env family ``agentgym.envs.skyrl``.
"""

from __future__ import annotations

import json
from typing import Any

from agentgym.extras import require
from agentgym.traits import traits

SKYRL_ID = "agentgym"
"""The id :func:`register_skyrl` gives agentgym envs in skyrl-gym's registry."""


def _require() -> None:
    require("SkyRL-gym envs", "skyrl_gym")


def _skyrl_base() -> type:
    _require()
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    return BaseTextEnv


def skyrl_env_class() -> type:
    """The skyrl-gym ``BaseTextEnv`` subclass that plays agentgym envs, built on first use so
    this module imports without skyrl-gym."""
    global _SKYRL_CLASS
    if _SKYRL_CLASS is None:
        _SKYRL_CLASS = _build_skyrl_class(_skyrl_base())
    return _SKYRL_CLASS


_SKYRL_CLASS: type | None = None


def _build_skyrl_class(base: type) -> type:
    class AgentgymEnv(base):  # type: ignore[misc,valid-type]
        """An agentgym env behind skyrl-gym's ``BaseTextEnv`` (``skyrl_gym.make("agentgym",
        extras={...})``). ``extras``: ``env_id`` (required), ``task`` (a task id in the env's
        suite, or a task dict; None draws one), ``seed``, ``max_turns`` (default 50),
        ``env_kwargs``."""

        def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
            super().__init__()
            from agentgym.registry import make

            extras = dict(extras or {})
            if "env_id" not in extras:
                raise ValueError("extras['env_id'] is required: the agentgym env id to play")
            self.env = make(extras["env_id"], **dict(extras.get("env_kwargs") or {}))
            self.task = extras.get("task")
            self.seed = extras.get("seed")
            self.max_turns = int(extras.get("max_turns", 50))
            self.final: dict[str, Any] = {}

        def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
            """SkyRL's dataset prompt is ignored: the episode's prompt is the env's own."""
            obs, info = self.env.reset(seed=self.seed, options={"task": self.task})
            system = traits(self.env).system_prompt
            head = [{"role": "system", "content": system}] if system else []
            return head + [{"role": "user", "content": obs}], {"task_id": info["task_id"]}

        def step(self, action: str) -> dict[str, Any]:
            self.turns += 1
            obs, reward, terminated, truncated, info = self.env.step(action)
            done = bool(terminated or truncated or self.turns >= self.max_turns)
            if done:
                self.final = {k: info[k] for k in ("success", "score") if k in info}
            return {
                "observations": [] if done else [{"role": "user", "content": obs}],
                "reward": float(reward),
                "done": done,
                "metadata": _json_safe(info),
                "postprocessed_action": None,
            }

        def get_metrics(self) -> dict[str, Any]:
            return {"turns": self.turns, **{k: float(v) for k, v in self.final.items()}}

        def close(self) -> None:
            self.env.close()

    AgentgymEnv.__name__ = AgentgymEnv.__qualname__ = "AgentgymSkyRLEnv"
    return AgentgymEnv


def make_agentgym_skyrl_env(**kwargs: Any) -> Any:
    """skyrl-gym's entry point for :data:`SKYRL_ID` (``env_config``, ``extras``)."""
    return skyrl_env_class()(**kwargs)


def register_skyrl(id: str = SKYRL_ID) -> str:
    """Register agentgym's envs in skyrl-gym's registry as ``id``; returns it. Idempotent."""
    _require()
    import skyrl_gym

    if id not in skyrl_gym.registry:
        skyrl_gym.register(id=id, entry_point=make_agentgym_skyrl_env)
    return id


def _json_safe(info: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in info.items():
        try:
            json.dumps(v)
        except (TypeError, ValueError):
            v = repr(v)
        out[k] = v
    return out
