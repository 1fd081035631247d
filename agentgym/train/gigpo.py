"""GiGPO credit: episode-level group advantage plus step-level advantages over anchor states.

Steps of a group's episodes that saw the same state (the anchor key of the observation the
action answered) form step groups; each step's discounted return is normalised within its step
group and added, times ``omega``, to the episode advantage. The key function is pluggable:
``algo.anchor: exact`` (identical observations), ``similarity`` (difflib ratio at least
``algo.anchor_threshold``), or any :data:`~agentgym.train.advantages.AnchorFn` through
:func:`gigpo_credit_with`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentgym.train.advantages import (
    AnchorFn,
    exact_anchor,
    gigpo_advantages,
    similarity_anchor,
)
from agentgym.train.batch import turn_to_tokens
from agentgym.train.credit import (
    CreditContext,
    CreditFn,
    episode_arrays,
    reads,
)
from agentgym.train.episode import TokenEpisode
from agentgym.train.grpo import POLICY_GRADIENT
from agentgym.train.options import GiGPOFields


def gigpo_credit_with(anchor: AnchorFn | None = None) -> CreditFn:
    """A GiGPO credit function with a custom anchor key (None: from ``algo.anchor``)."""

    def credit(episodes: Sequence[TokenEpisode], ctx: CreditContext) -> list[np.ndarray]:
        cfg = ctx.algo
        key = anchor or (
            exact_anchor if cfg.anchor == "exact" else similarity_anchor(cfg.anchor_threshold)
        )
        rewards, groups, valid = episode_arrays(episodes)
        per_turn = gigpo_advantages(
            rewards,
            groups,
            [[t.reward for t in ep.turns] for ep in episodes],
            [[t.state_key for t in ep.turns] for ep in episodes],
            valid,
            gamma=cfg.gamma,
            omega=cfg.omega,
            scale=cfg.scale,
            anchor=key,
        )
        return [turn_to_tokens(ep, a) for ep, a in zip(episodes, per_turn, strict=True)]

    return reads(GiGPOFields)(credit)


gigpo_credit = gigpo_credit_with()
"""GiGPO's credit (``algo.credit: gigpo``), anchors from ``algo.anchor``."""
SPEC = POLICY_GRADIENT
"""GiGPO: the clipped loss of GRPO, with GiGPO's credit."""
