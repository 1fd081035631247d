"""What an LLM agent needs to know about an env before its first reset, as one typed record.

An env declares its traits as class attributes (``TextEnv.system_prompt``,
``TextEnv.one_line_actions`` ...); every reader (the chat agent, the trainer, the integrations, the
OpenEnv server) reads them through :func:`traits`, which takes an env, a wrapped env or an env
class, and fills in what an env does not declare from the defaults below, written once here.
The module is a leaf: it imports nothing of agentgym.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_MAX_TOKENS = 256
"""Tokens per generation where neither the caller nor the env says (an env's default budget)."""

Message = dict[str, Any]
"""An OpenAI chat message (``{"role": ..., "content": ...}``)."""


class EnvTraits(BaseModel):
    """An env's LLM-agent traits; the field defaults are those of an env that declares none."""

    model_config = ConfigDict(frozen=True)

    system_prompt: str = ""
    """How to act in this env (action syntax, goal); LLM agents use it as their system prompt."""
    free_text_actions: bool = False
    """Any non-empty text is an action (a message to a simulated user): agents keep a reply whole
    instead of cutting an ``Action:`` line or a code fence out of it."""
    one_line_actions: bool = False
    """Every action is one line: LLM agents stop generating at the first newline."""
    action_max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    """Completion tokens an LLM agent needs for one action (its default ``max_tokens``)."""
    default_suite: str | None = None
    """The suite ``reset`` draws from when given no task (None: the env has none)."""
    demo_suite: str | None = None
    """A training split whose first task the expert plays for ``demonstration()`` (None: the
    env has no demonstration)."""

    @property
    def stop(self) -> tuple[str, ...]:
        """The stop strings of one action: a newline where actions are one line, else none."""
        return ("\n",) if self.one_line_actions else ()


TRAIT_NAMES = tuple(EnvTraits.model_fields)
"""The class attributes an env declares its traits by."""


def traits(env: Any) -> EnvTraits:
    """The traits of ``env`` (an env, a wrapped env or an env class; None: the defaults)."""
    if env is None:
        return EnvTraits()
    base = env if isinstance(env, type) else getattr(env, "unwrapped", env)
    declared = {name: getattr(base, name) for name in TRAIT_NAMES if hasattr(base, name)}
    return EnvTraits.model_validate(declared)


def demonstration(env: Any) -> list[Message]:
    """The env's ``demonstration()`` chat turns (an in-context example of its action format);
    empty where the env has none or is an env class."""
    base = getattr(env, "unwrapped", env)
    demo = getattr(base, "demonstration", None)
    if demo is None or isinstance(base, type):
        return []
    return [dict(m) for m in demo()]


__all__ = ["DEFAULT_MAX_TOKENS", "EnvTraits", "demonstration", "traits"]
