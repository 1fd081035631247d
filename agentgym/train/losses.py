"""Token-level loss pieces shared by the policy-gradient algorithms (clipped ratio, KL, entropy).

Every function returns per-token tensors; the caller multiplies by the batch's aggregation
weights (``Batch.weights``) and sums, so token-, sequence- and episode-mean are one code path.
"""

from __future__ import annotations

import torch


def clipped_policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float,
    clip_high: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate per token, with asymmetric bounds (DAPO's clip-higher).

    Returns (loss, clipped) where ``clipped`` is 1.0 where the clip was active.
    """
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * advantages
    loss = -torch.minimum(unclipped, clipped)
    return loss, (clipped < unclipped).float()


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(policy || reference) per token: unbiased and >= 0."""
    delta = ref_logp - logp
    return torch.exp(delta) - delta - 1.0


def weighted(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Sum of per-token values under aggregation weights."""
    return (values * weights).sum()
