"""Trainer policies by name (``model.policy: NAME``), the one registry of them.

The trainer builds a policy from it (:func:`agentgym.train.policy.get_policy`), and an ``hf:``
agent reads its names to know a policy checkpoint (one holding ``NAME.json``). It lives apart
from :mod:`agentgym.train.policy` so that reading the names imports neither torch nor the trainer.
"""

from __future__ import annotations

from typing import Any

from agentgym.plugins import Registry

ENTRY_POINT_GROUP = "agentgym.policies"
POLICIES: Registry[Any] = Registry("model.policy", ENTRY_POINT_GROUP)
"""``model.policy`` factories by name (:data:`agentgym.train.policy.PolicyFactory`):
:func:`agentgym.train.policy.register_policy` and the ``agentgym.policies`` entry points."""
