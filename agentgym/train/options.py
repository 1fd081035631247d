"""The ``algo.*`` settings: one options model per algorithm or credit function that reads them,
each field with its default, bounds and documentation, written here once.

An algorithm receives its own model as the typed view ``cfg.algo.view``
(``AlgorithmSpec.options``); a credit function declares its model with
:func:`agentgym.train.credit.reads`. The config's ``algo`` section
(:class:`agentgym.train.config.AlgoConfig`) is their union, so its keys stay flat. A leaf:
pydantic only, so that the config, the registry of algorithms and the batches all import it
without importing one another, nor torch.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

BIG = 2**31 - 1
"""Upper bound of counts and sizes: what C and torch take as an int."""

LossAgg = Literal["token-mean", "sequence-mean", "episode-mean"]
"""How a batch's loss tokens are weighted (:mod:`agentgym.train.batch`)."""
Layout = Literal["episode", "step"]
"""A row per whole episode, or one per step."""


# ============================================================================ every algorithm
class AlgoOptions(BaseModel):
    """The ``algo.*`` settings the trainer reads for every algorithm: how a batch becomes rows,
    how they are weighted, how often it is passed over. An algorithm's options model extends it
    with the fields its own code reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    loss_agg: LossAgg = "token-mean"
    """token-mean (DAPO, Dr.GRPO), sequence-mean (GRPO paper), episode-mean."""
    layout: Layout = "episode"
    """Rows per whole episode, or one row per step (same loss, different memory/compute)."""
    epochs: int = Field(default=1, ge=1, le=BIG)
    """Optimisation passes over each rollout batch (ratio clipping matters from the second)."""
    skip_zero_advantage: bool = True
    """grpo/reinforce_pp/gigpo: leave out of the update the rows whose every loss token has
    advantage 0 (groups that tied); exact when kl_coef and entropy_coef are 0, since such rows
    then have zero gradient (their tokens still count in the token-mean's denominator)."""


class CreditOptions(AlgoOptions):
    """An algorithm whose advantages come from a credit function (``algo.credit``, by default
    the one named like the algorithm). It also accepts the ``algo.*`` fields that function
    declares (:func:`agentgym.train.credit.reads`)."""

    credit: str | None = None
    """Credit function by name (``agentgym.train.credit.register_credit``); default: the
    algorithm's own (grpo -> "grpo", reinforce_pp -> "reinforce_pp", gigpo -> "gigpo")."""
    options: dict[str, Any] = {}
    """Settings of the credit function (e.g. InfoPO's beta and tau), checked when the config
    loads against the model the function declares (:mod:`agentgym.train.credit`)."""


# ============================================================================ credit functions
class GroupScale(BaseModel):
    """The ``algo.*`` field a group-normalised credit reads (GRPO's, InfoPO's)."""

    scale: Literal["std", "none"] = "std"
    """Group advantage: divide by the group's std (GRPO) or not (Dr.GRPO)."""


class Discount(BaseModel):
    """The discount over turns (GiGPO's step returns, PPO's GAE)."""

    gamma: float = Field(default=0.95, ge=0.0, le=1.0)
    """Discount over turns (gigpo step returns, ppo GAE)."""


class GiGPOFields(GroupScale, Discount):
    """The ``algo.*`` fields the GiGPO credit reads."""

    omega: float = Field(default=1.0, ge=0.0, le=1e6)
    """Weight of GiGPO's step advantage."""
    anchor: Literal["exact", "similarity"] = "exact"
    """GiGPO anchor key: identical observations, or similar ones (``anchor_threshold``)."""
    anchor_threshold: float = Field(default=0.9, ge=0.0, le=1.0)
    """difflib ratio at which two observations share a GiGPO anchor."""


class GroupBaseline(BaseModel):
    """The ``algo.*`` field the REINFORCE++ credit reads."""

    group_baseline: bool = True
    """REINFORCE++: subtract the group mean before whitening over the batch."""


# ============================================================================ losses
class ClippedLoss(AlgoOptions):
    """The ``algo.*`` fields of the clipped policy loss (``grpo.PolicyGradient.policy_terms``)."""

    clip_low: float = Field(default=0.2, ge=0.0, lt=1.0)
    """PPO-style ratio clip below 1 (grpo, gigpo, reinforce_pp, ppo)."""
    clip_high: float = Field(default=0.2, ge=0.0, le=1e6)
    """Ratio clip above 1; DAPO's clip-higher uses 0.28."""
    kl_coef: float = Field(default=0.0, ge=0.0, le=1e6)
    """Weight of the k3 KL estimate to the starting policy (0 skips the reference model)."""
    entropy_coef: float = Field(default=0.0, ge=0.0, le=1e6)
    """Entropy bonus weight."""


class PolicyGradientOptions(ClippedLoss, CreditOptions):
    """What GRPO, REINFORCE++ and GiGPO read: the clipped loss, the credit function, and
    whether the LM head runs only where the loss is."""

    loss_logits_only: bool = True
    """grpo/reinforce_pp/gigpo: run the LM head only at positions that carry loss (same values;
    skips the vocabulary-sized logits of prompt and observation tokens)."""


class PPOOptions(ClippedLoss, Discount):
    """What PPO reads: the clipped loss, GAE's discount and lambda, the value loss weight (no
    credit function: its advantages come from its value head)."""

    lam: float = Field(default=0.95, ge=0.0, le=1.0)
    """GAE lambda (ppo)."""
    vf_coef: float = Field(default=0.5, ge=0.0, le=1e6)
    """Value loss weight (ppo)."""
