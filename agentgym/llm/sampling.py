"""One sampling spec for every generation, and seeds that follow the job.

:class:`SamplingSpec` is the one holder of how a token sequence is sampled: ``max_tokens``,
``stop``, ``temperature`` and ``top_p``, named as the OpenAI API (and ``agentgym serve``) name
them. The chat agent's options (:class:`~agentgym.chat_agent.ChatAgentConfig`, the ``?key=value``
of an agent spec) and the trainer's ``rollout:`` section
(:class:`~agentgym.train.config.RolloutConfig`) are subclasses of it, so their keys stay flat; an
engine request carries one (:class:`~agentgym.llm.engine.request.Request`).

``agentgym eval``'s :class:`~agentgym.chat_agent.ChatAgent`, the trainer's rollouts and its
held-out evaluation all resolve theirs with :meth:`SamplingSpec.for_env`: the env's
``action_max_tokens``, a ``"\\n"`` stop where its actions are one line (``one_line_actions``).
So a checkpoint samples the same way whichever of them runs it.

Each request is seeded by :func:`turn_seed` from its episode's seed (itself derived from the run
seed, the task and the sample) and the turn: an episode's draws are the same alone or in any
batch, at any concurrency, and two checkpoints evaluated with one run seed are paired draw by draw.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from agentgym.traits import traits

MaxTokens = Annotated[int, Field(ge=1, le=2**31 - 1)]
"""A token budget (the bounds a subclass keeps when it changes the default)."""
Temperature = Annotated[float, Field(ge=0.0, le=100.0)]
"""A sampling temperature (0: greedy)."""

RENAMED = {"max_new_tokens": "max_tokens", "context_tokens": "max_context_tokens"}
"""Keys an older config or agent spec used, and the one name each has now."""


class SamplingSpec(BaseModel):
    """How a token sequence is sampled (immutable and hashable: an engine request holds one)."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    max_tokens: MaxTokens | None = None
    """Tokens per generation; None: what the env says one action needs (``action_max_tokens``,
    ``DEFAULT_MAX_TOKENS`` by default)."""
    stop: tuple[str, ...] | None = None
    """Stop strings (not part of the returned text); None: a newline where the env's actions
    are one line (``one_line_actions``), else none."""
    temperature: Temperature = 0.0
    """Sampling temperature (0: greedy)."""
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    """Nucleus sampling: draw from the smallest set of tokens holding this much probability."""

    def for_env(self, env: Any = None, **update: Any) -> SamplingSpec:
        """The plain spec of these settings with ``update`` applied and the ones left None
        resolved from ``env`` (an env, a wrapped env or an env class; None: no env, so
        ``DEFAULT_MAX_TOKENS`` and no stop). Always a :class:`SamplingSpec` itself, whatever subclass holds the
        settings: what an engine request carries."""
        values = {k: getattr(self, k) for k in SamplingSpec.model_fields} | update
        if values["max_tokens"] is None or values["stop"] is None:
            env_traits = traits(env)
            if values["max_tokens"] is None:
                values["max_tokens"] = env_traits.action_max_tokens
            if values["stop"] is None:
                values["stop"] = env_traits.stop
        if type(self) is SamplingSpec and not update and values == dict(self):
            return self
        return SamplingSpec.model_validate(values)

    @property
    def batch_key(self) -> tuple[float, float]:
        """What decides how one token is drawn: rows equal in it are sampled together, whatever
        their token limits and stops."""
        return (self.temperature, self.top_p)


def renamed_key(key: str, allowed: Any) -> str | None:
    """The new name of an old ``key`` where it is one of ``allowed``; None otherwise."""
    new = RENAMED.get(key)
    return new if new is not None and new in allowed else None


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
