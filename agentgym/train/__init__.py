"""Multi-turn RL and SFT for agent policies (``agentgym train CONFIG.yaml [-c key=value ...]``).

==================  ============================================================================
Rollouts            token-exact (:mod:`~agentgym.train.rollout`): ids and logprobs recorded at
                    generation, loss mask 1 on sampled tokens only, turn spans; all episodes
                    of a batch generate together through ``load_engine`` over the policy
                    being trained; envs step in-process or on Ray actors
Batches             :func:`~agentgym.train.batch.build_batch`: a row per episode or per step;
                    token-, sequence- or episode-mean aggregation as per-token weights
Algorithms          ``sft.py``, ``grpo.py`` (GRPO, Dr.GRPO, DAPO clip-higher, KL), ``ppo.py``
                    (value head, turn-level GAE), ``reinforce_pp.py``, ``gigpo.py``; plug new
                    ones in with :func:`~agentgym.train.algorithm.register_algorithm`
                    (``algo.name``)
Credit              pure functions in ``advantages.py``; plug new ones in with
                    :func:`~agentgym.train.credit.register_credit` (``algo.credit``)
Failures            episodes with ``status="error"`` are out of group statistics and the loss,
                    and counted (metric ``errors``)
Checkpoints         ``save_pretrained`` + optimizer, value head and RNG state; exact resume
                    (:mod:`~agentgym.train.checkpoint`)
Data-parallel       :mod:`~agentgym.train.distributed`: ``agentgym train CONFIG --nproc N`` or
                    torchrun; ranks roll out shares, gather the groups before credit, train
                    shares of the rows and sum gradients (gloo on CPU, NCCL on CUDA)
Held-out eval       :mod:`~agentgym.train.heldout`: ``agentgym eval``'s seeds, success with a
                    Wilson interval, the episodes stored as a run of their own
Metrics             :class:`~agentgym.train.runlog.RunLog`: console and the store's
                    ``train_metrics`` table: reward, success, ACR, KL, entropy, clip fraction,
                    tokens/s, steps/s, errors
==================  ============================================================================
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentgym.train.algorithm import (
        AlgoOptions,
        Algorithm,
        AlgorithmSpec,
        CreditOptions,
        get_algorithm,
        register_algorithm,
    )
    from agentgym.train.batch import Batch, build_batch, token_weights
    from agentgym.train.chat import ChatFormat
    from agentgym.train.config import RolloutConfig, TrainConfig, load_config
    from agentgym.train.credit import CreditContext, get_credit, reads, register_credit
    from agentgym.train.episode import TokenEpisode, Turn
    from agentgym.train.rollout import Job, collect
    from agentgym.train.trainer import Trainer

_HOMES = {
    "algorithm": (
        "AlgoOptions",
        "Algorithm",
        "AlgorithmSpec",
        "CreditOptions",
        "get_algorithm",
        "register_algorithm",
    ),
    "batch": ("Batch", "build_batch", "token_weights"),
    "chat": ("ChatFormat",),
    "config": ("RolloutConfig", "TrainConfig", "load_config"),
    "credit": ("CreditContext", "get_credit", "reads", "register_credit"),
    "episode": ("TokenEpisode", "Turn"),
    "rollout": ("Job", "collect"),
    "trainer": ("Trainer",),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}
"""Where each public name lives: imported on first use, so that importing one module of the
trainer (its config, say) loads neither torch nor the rest."""

__all__ = [
    "AlgoOptions",
    "Algorithm",
    "AlgorithmSpec",
    "Batch",
    "ChatFormat",
    "CreditContext",
    "CreditOptions",
    "Job",
    "RolloutConfig",
    "TokenEpisode",
    "Trainer",
    "TrainConfig",
    "Turn",
    "build_batch",
    "collect",
    "get_algorithm",
    "get_credit",
    "load_config",
    "reads",
    "register_algorithm",
    "register_credit",
    "token_weights",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
