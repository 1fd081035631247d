"""One sampling spec for an env's actions, and seeds that follow the job.

``agentgym eval``'s :class:`~agentgym.chat_agent.ChatAgent`, the trainer's rollouts and its
held-out evaluation all build their requests from :meth:`SamplingSpec.for_env`: the env's
``action_max_tokens``, a ``"\\n"`` stop where its actions are one line (``one_line_actions``),
and the caller's temperature and top-p. So a checkpoint samples the same way whichever of them
runs it.

Each request is seeded by :func:`turn_seed` from its episode's seed (itself derived from the run
seed, the task and the sample) and the turn: an episode's draws are the same alone or in any
batch, at any concurrency, and two checkpoints evaluated with one run seed are paired draw by draw.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, Field


class SamplingSpec(BaseModel):
    """How an agent's action is sampled."""

    max_tokens: int = Field(default=256, ge=1)
    stop: list[str] = []
    """Stop strings (not part of the returned text)."""
    temperature: float = Field(default=0.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)

    @classmethod
    def for_env(
        cls,
        env: Any,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
    ) -> SamplingSpec:
        """The spec for ``env`` (an env, a wrapped env or an env class); explicit values win."""
        base = env if isinstance(env, type) else getattr(env, "unwrapped", env)
        one_line = bool(getattr(base, "one_line_actions", False))
        return cls(
            max_tokens=max_tokens or int(getattr(base, "action_max_tokens", 256)),
            stop=stop if stop is not None else (["\n"] if one_line else []),
            temperature=temperature,
            top_p=top_p,
        )


def derive_seed(*parts: Any) -> int:
    """A 31-bit seed from any printable parts (stable across processes and runs)."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def turn_seed(episode_seed: int | None, turn: int, attempt: int = 0) -> int | None:
    """The sampling seed of one request: its episode's seed, the turn, the retry (None: unseeded)."""
    if episode_seed is None:
        return None
    if attempt:
        return derive_seed(episode_seed, "turn", turn, attempt)
    return derive_seed(episode_seed, "turn", turn)
