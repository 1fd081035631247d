"""REINFORCE++ credit: group-mean baseline (optional), then whitening over the whole batch.

Trained with the same clipped token loss as GRPO (:class:`agentgym.train.grpo.PolicyGradient`);
only the advantages differ: normalising by the batch rather than by each group keeps the
gradient scale steady when a group's rewards are nearly tied.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentgym.train.advantages import reinforce_pp_advantages
from agentgym.train.credit import (
    CreditContext,
    broadcast,
    episode_arrays,
    reads,
)
from agentgym.train.episode import TokenEpisode
from agentgym.train.grpo import POLICY_GRADIENT
from agentgym.train.options import GroupBaseline


@reads(GroupBaseline)
def reinforce_pp_credit(episodes: Sequence[TokenEpisode], ctx: CreditContext) -> list[np.ndarray]:
    """Each episode's whitened (baselined) return on all of its sampled tokens."""
    rewards, groups, valid = episode_arrays(episodes)
    adv = reinforce_pp_advantages(rewards, groups, valid, ctx.algo.group_baseline)
    return broadcast(episodes, adv)


SPEC = POLICY_GRADIENT
"""REINFORCE++: the clipped loss of GRPO, with REINFORCE++'s credit."""
