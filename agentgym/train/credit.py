"""Credit functions: rollout episodes -> per-token advantages; a registry so methods plug in.

A credit function gets the batch's episodes (errors included, so it can see them and must give
them zeros) and a :class:`CreditContext` (the algorithm config, its own typed options and, for
methods that score counterfactuals such as InfoPO, the policy and its tokenizer). It returns one
array per episode, aligned with the episode's token ids. Register new ones with
:func:`register_credit`; ``algo.credit`` picks one. A credit function with settings declares them
as a pydantic model in its ``options`` attribute: ``algo.options`` is checked against it when the
config loads, and the function reads the typed result as ``ctx.options``. The flat ``algo.*``
fields it reads from ``ctx.algo`` (``scale``, ``gamma``, ...) it declares with :func:`reads`, so
that an algorithm using it accepts them (:class:`~agentgym.train.algorithm.CreditOptions`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from pydantic import BaseModel

from agentgym.plugins import Registry
from agentgym.train.episode import TokenEpisode

if TYPE_CHECKING:
    from agentgym.train.config import AlgoConfig


@dataclass
class CreditContext:
    """What a credit function may use besides the episodes."""

    algo: AlgoConfig
    policy: Any = None
    """The trainer's policy model (for counterfactual scoring); None in pure tests."""
    metrics: dict[str, float] | None = None
    """A credit function may record metrics here (they go to the console and the store)."""
    tokenizer: Any = None
    """The policy's tokenizer (to encode text a credit function writes into a context)."""

    @property
    def options(self) -> Any:
        """``algo.options`` as the credit function's ``options`` model, checked at config load;
        None when the function declares no options."""
        return self.algo.credit_options


CreditFn = Callable[[Sequence[TokenEpisode], CreditContext], list[np.ndarray]]
F = TypeVar("F")


def reads(fields: type[BaseModel]) -> Callable[[F], F]:
    """Declare the ``algo.*`` fields a credit function reads (a model whose fields are named
    like the config's): ``@reads(GroupScale)`` above the function."""

    def declare(fn: F) -> F:
        setattr(fn, "algo_fields", fields)  # noqa: B010  (a function has no declared slot)
        return fn

    return declare


def algo_fields(fn: CreditFn | None) -> list[str]:
    """The ``algo.*`` field names ``fn`` declares with :func:`reads` (none: it reads none)."""
    model = getattr(fn, "algo_fields", None)
    return list(model.model_fields) if model is not None else []


_CREDITS: Registry[CreditFn] = Registry("credit function", "agentgym.credits")
_CREDITS.register("gigpo", "agentgym.train.gigpo:gigpo_credit")  # built-ins: imported on first use
_CREDITS.register("grpo", "agentgym.train.grpo:grpo_credit")
_CREDITS.register("reinforce_pp", "agentgym.train.reinforce_pp:reinforce_pp_credit")


def register_credit(name: str, fn: CreditFn | str) -> CreditFn | str:
    """Make ``fn`` (or the ``"module:attr"`` naming it) available as ``algo.credit: name``."""
    return _CREDITS.register(name, fn)


def get_credit(name: str) -> CreditFn:
    """A built-in credit function, or one from the ``agentgym.credits`` entry points (InfoPO)."""
    return _CREDITS.get(name)


def find_credit(name: str) -> CreditFn | None:
    """The credit function called ``name``, or None (an algorithm with none of its own)."""
    return _CREDITS.find(name)


def episode_arrays(episodes: Sequence[TokenEpisode]) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(returns, groups, valid) of a batch, the inputs of the group-level functions."""
    rewards = np.array([ep.reward for ep in episodes], float)
    return rewards, [ep.group for ep in episodes], np.array([ep.ok for ep in episodes], bool)


def broadcast(episodes: Sequence[TokenEpisode], per_episode: np.ndarray) -> list[np.ndarray]:
    """One advantage per episode spread over all of its sampled tokens."""
    return [np.asarray(ep.mask, float) * a for ep, a in zip(episodes, per_episode, strict=True)]
