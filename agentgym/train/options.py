"""The ``algo.*`` settings the trainer reads for every algorithm, as types and an options model.

A leaf: pydantic only, so that the config (:mod:`agentgym.train.config`), the registry of
algorithms (:mod:`agentgym.train.algorithm`) and the batches (:mod:`agentgym.train.batch`) all
import it without importing one another, nor torch.
"""

from __future__ import annotations

from typing import Literal

LossAgg = Literal["token-mean", "sequence-mean", "episode-mean"]
"""How a batch's loss tokens are weighted (:mod:`agentgym.train.batch`)."""
Layout = Literal["episode", "step"]
"""A row per whole episode, or one per step."""
