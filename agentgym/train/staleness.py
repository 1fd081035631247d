"""Policy versions of sampled turns, and the staleness bound on what the learner trains on.

A policy version is the number of optimiser steps the weights had taken when they sampled a
turn. The trainer stamps every turn of a rollout with the version of the weights that generated
it; the recording gateway writes it on every call it records (``step-N``), so harness episodes
carry it too, and an episode may span versions. With ``rollout.max_staleness: K``, an episode
whose oldest turn is more than K versions behind the learner is dropped before credit
(``rollout.stale: drop``) or kept and importance-corrected (``correct``: the learner's logprobs
are recomputed and ``rollout.importance`` weighs the tokens, :mod:`agentgym.train.importance`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from agentgym.train.config import StaleAction
from agentgym.train.episode import TokenEpisode


def stamp(episodes: Sequence[TokenEpisode], version: int) -> None:
    """Give every turn not yet stamped the policy version ``version``."""
    for ep in episodes:
        ep.turns = [t if t.version is not None else replace(t, version=version) for t in ep.turns]


def parse_version(label: str | None) -> int | None:
    """The update count in a gateway's version label (``step-12`` or ``12``), else None."""
    match = re.fullmatch(r"(?:step-)?(\d+)", str(label or ""))
    return int(match.group(1)) if match else None


def lag(ep: TokenEpisode, learner: int) -> int:
    """How many versions the episode's oldest stamped turn is behind ``learner`` (0: none)."""
    versions = [t.version for t in ep.turns if t.version is not None]
    return learner - min(versions) if versions else 0


def screen(
    episodes: Sequence[TokenEpisode],
    learner: int,
    max_staleness: int | None,
    action: StaleAction,
) -> tuple[list[TokenEpisode], dict[str, float]]:
    """The episodes to train on, and ``stale_dropped`` / ``stale_corrected``: the shares of
    ``episodes`` more than ``max_staleness`` versions behind, dropped or kept to be corrected;
    ``staleness_max``: the largest lag. No bound: every episode, no metrics."""
    if max_staleness is None:
        return list(episodes), {}
    lags = [lag(ep, learner) for ep in episodes]
    stale = [g > max_staleness for g in lags]
    n = max(len(episodes), 1)
    share = sum(stale) / n
    kept = [ep for ep, s in zip(episodes, stale, strict=True) if not s or action == "correct"]
    return kept, {
        "stale_dropped": share if action == "drop" else 0.0,
        "stale_corrected": share if action == "correct" else 0.0,
        "staleness_max": float(max(lags, default=0)),
    }


def spread(episodes: Sequence[TokenEpisode]) -> dict[str, float]:
    """Which versions sampled a batch: ``version_min`` and ``version_max`` over its stamped
    turns, and ``spanning_versions``, the share of its episodes sampled by more than one."""
    per_episode = [{t.version for t in ep.turns if t.version is not None} for ep in episodes]
    every = set().union(*per_episode) if per_episode else set()
    if not every:
        return {}
    return {
        "version_min": float(min(every)),
        "version_max": float(max(every)),
        "spanning_versions": sum(len(v) > 1 for v in per_episode) / len(episodes),
    }
