"""Algorithms as plug-ins: what the trainer asks of one, and the registry ``algo.name`` reads.

A new algorithm is one module that defines a class meeting :class:`Algorithm` and an
:class:`AlgorithmSpec` to build it, registered by name (in-tree: a ``"module:attr"`` line below,
so that registering imports nothing and the config looks an algorithm up without importing the
others; elsewhere: an ``agentgym.algorithms`` entry point naming its spec, or
:func:`register_algorithm`). The trainer's loop, the config's validation and the checkpoints need
nothing else.

The config's ``algo`` section is flat (``algo.clip_high``, ``algo.gamma``, ...): one key per
setting of any algorithm. Each algorithm declares the ones it reads as an options model
(:class:`AlgoOptions` or a subclass, ``AlgorithmSpec.options``; the built-ins' are in
:mod:`agentgym.train.options`); the config builds that typed view when it loads
(``cfg.algo.view``), and a setting the chosen algorithm does not read is an error there rather
than silently ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentgym.plugins import Registry
from agentgym.train.options import AlgoOptions, CreditOptions

__all__ = [
    "AlgoOptions",
    "Algorithm",
    "AlgorithmSpec",
    "CreditOptions",
    "algorithm_names",
    "get_algorithm",
    "register_algorithm",
]

if TYPE_CHECKING:
    import numpy as np
    import torch

    from agentgym.train.batch import Batch
    from agentgym.train.config import TrainConfig
    from agentgym.train.credit import CreditContext
    from agentgym.train.episode import TokenEpisode


class Algorithm(Protocol):
    """An update rule: advantages from a rollout batch, and a loss per micro-batch."""

    zero_advantage_inert: bool
    """True when a row whose loss tokens all have advantage 0 gets exactly zero gradient, so the
    trainer may leave it out of the update (``algo.skip_zero_advantage``)."""

    def extra_modules(self) -> dict[str, torch.nn.Module]:
        """Trainable modules besides the model (PPO's value head): optimised and checkpointed."""
        ...

    def advantages(
        self, episodes: Sequence[TokenEpisode], ctx: CreditContext
    ) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
        """(per-token advantages, per-token value targets or None) of a rollout batch."""
        ...

    def loss(self, mb: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        """This micro-batch's share of the batch loss, and its share of the metrics."""
        ...


@dataclass(frozen=True)
class AlgorithmSpec:
    """How to build an algorithm, and what the trainer and config must know before building it."""

    build: Callable[[Any, TrainConfig], Algorithm]
    """``(model, config) -> algorithm``; it reads its ``algo.*`` settings from the typed view
    ``config.algo.view`` (an instance of ``options``)."""
    options: type[AlgoOptions] = AlgoOptions
    """The ``algo.*`` fields the algorithm reads; a config that sets another one (to other than
    its default) is rejected when it loads, naming the fields this model accepts."""
    rollouts: bool = True
    """Trains on its own rollouts (RL); False: on the demonstrations of ``sft.data`` (SFT)."""
    logprobs_only: bool = False
    """Its loss reads only per-token logprobs (no hidden states, no value head), so it can train
    a policy whose model computes them per turn's adapter (``model.policy``)."""


_ALGORITHMS: Registry[AlgorithmSpec] = Registry("algorithm", group="agentgym.algorithms")
_ALGORITHMS.register("gigpo", "agentgym.train.gigpo:SPEC")
_ALGORITHMS.register("grpo", "agentgym.train.grpo:SPEC")
_ALGORITHMS.register("ppo", "agentgym.train.ppo:SPEC")
_ALGORITHMS.register("reinforce_pp", "agentgym.train.reinforce_pp:SPEC")
_ALGORITHMS.register("sft", "agentgym.train.sft:SPEC")


def register_algorithm(name: str, spec: AlgorithmSpec | str) -> AlgorithmSpec | str:
    """Make ``spec`` (or the ``"module:attr"`` naming it) available as ``algo.name: name``."""
    return _ALGORITHMS.register(name, spec)


def get_algorithm(name: str) -> AlgorithmSpec:
    """A built-in algorithm, or one from the ``agentgym.algorithms`` entry points."""
    return _ALGORITHMS.get(name)


def algorithm_names() -> list[str]:
    """Every name ``algo.name`` accepts."""
    return _ALGORITHMS.names()
