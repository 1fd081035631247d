"""GRPO for multi-turn episodes: group-normalised outcome advantages, clipped token loss.

Options cover the published variants: ``algo.scale: none`` is Dr.GRPO (no division by the
group std; use with ``loss_agg: token-mean``), ``algo.clip_high: 0.28`` is DAPO's clip-higher,
``algo.kl_coef > 0`` adds a k3 KL to the starting policy. The same loss serves every credit
function (``algo.credit``): REINFORCE++ and GiGPO differ from GRPO only in their advantages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from agentgym.train.advantages import group_advantages
from agentgym.train.algorithm import AlgorithmSpec
from agentgym.train.batch import Batch
from agentgym.train.config import TrainConfig
from agentgym.train.credit import (
    CreditContext,
    CreditFn,
    broadcast,
    episode_arrays,
    get_credit,
    reads,
)
from agentgym.train.episode import TokenEpisode
from agentgym.train.losses import clipped_policy_loss, kl_k3, weighted
from agentgym.train.options import ClippedLoss, GroupScale, PolicyGradientOptions
from agentgym.train.policy import Reference, token_logprobs


# ============================================================================ credit
@reads(GroupScale)
def grpo_credit(episodes: Sequence[TokenEpisode], ctx: CreditContext) -> list[np.ndarray]:
    """Every sampled token of an episode gets its group-normalised return."""
    rewards, groups, valid = episode_arrays(episodes)
    return broadcast(episodes, group_advantages(rewards, groups, valid, ctx.algo.scale))


# ============================================================================ loss
class PolicyGradient:
    """Clipped policy-gradient loss over token advantages; GRPO, REINFORCE++ and GiGPO use it."""

    def __init__(
        self,
        model: Any,
        cfg: ClippedLoss,
        credit: CreditFn | None,
        logits_only: bool = False,
    ) -> None:
        """``credit``: the credit function; None for a subclass with its own advantages (PPO).
        ``logits_only``: run the LM head only at the positions that carry loss."""
        self.model, self.cfg, self.credit = model, cfg, credit
        self.logits_only = logits_only
        self.reference = Reference(model) if cfg.kl_coef > 0 else None
        self.zero_advantage_inert = not (cfg.kl_coef or cfg.entropy_coef)

    def extra_modules(self) -> dict[str, torch.nn.Module]:
        """Trainable modules besides the model (PPO's value head); saved in checkpoints."""
        return {}

    def advantages(
        self, episodes: Sequence[TokenEpisode], ctx: CreditContext
    ) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
        """(per-token advantages, per-token value targets or None)."""
        assert self.credit is not None, "a subclass without a credit function overrides this"
        return self.credit(episodes, ctx), None

    def loss(self, mb: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        """This micro-batch's share of the batch loss, and its share of the metrics."""
        only = mb.weights > 0 if self.logits_only else None
        logp, entropy = token_logprobs(self.model, mb, only)
        return self.policy_terms(mb, logp, entropy, only)

    def policy_terms(
        self,
        mb: Batch,
        logp: torch.Tensor,
        entropy: torch.Tensor,
        only: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """The terms every policy-gradient loss shares, from the policy's per-token logprobs and
        entropies: the clipped ratio to the sampling policy, ``kl_coef`` times the k3 KL to the
        reference, minus ``entropy_coef`` times the entropy. ``only``: the positions ``logp``
        holds (the reference is scored at the same ones)."""
        pg, clipped = clipped_policy_loss(
            logp, mb.old_logprobs, mb.advantages, self.cfg.clip_low, self.cfg.clip_high
        )
        loss = weighted(pg, mb.weights)
        metrics = {
            "pg_loss": loss.item(),
            "entropy": weighted(entropy.detach(), mb.weights).item(),
            "clip_frac": weighted(clipped, mb.weights).item(),
        }
        if self.reference is not None:
            kl = weighted(kl_k3(logp, self.reference.logprobs(mb, only)), mb.weights)
            loss = loss + self.cfg.kl_coef * kl
            metrics["kl"] = kl.item()
        if self.cfg.entropy_coef:
            loss = loss - self.cfg.entropy_coef * weighted(entropy, mb.weights)
        return loss, metrics


def policy_gradient(model: Any, cfg: TrainConfig) -> PolicyGradient:
    """The clipped loss with ``algo.credit``, by default the credit function named like the
    algorithm (GRPO, REINFORCE++ and GiGPO register this with their own names)."""
    opts: PolicyGradientOptions = cfg.algo.view
    credit = get_credit(opts.credit or cfg.algo.name)
    return PolicyGradient(model, opts, credit, opts.loss_logits_only)


POLICY_GRADIENT = AlgorithmSpec(policy_gradient, PolicyGradientOptions, logprobs_only=True)
"""The spec of GRPO, REINFORCE++ and GiGPO: one loss, their own credit functions."""
SPEC = POLICY_GRADIENT
"""GRPO (``algo.name: grpo``, registered in :mod:`agentgym.train.algorithm`)."""
