"""Truncated importance sampling between the policy that sampled and the learner's.

The engine that sampled a rollout is not exactly the learner: vLLM's kernels and precision differ
from the trainer's (``rollout.engine: vllm``), and a rollout sampled some updates ago
(``rollout.max_staleness`` with ``rollout.stale: correct``) came from older weights. The loss's
ratio is taken to the learner's own logprobs before the update (the trainer recomputes them), and
every sampled token's policy-gradient term is weighted by how much likelier the learner found it
than the sampler did (``rollout.importance``, capped at ``rollout.importance_cap``):

- ``token``: ``min(exp(learner - sampler), cap)`` per token (truncated IS, as verl and slime);
- ``sequence``: the episode's ratio, ``exp(sum over its sampled tokens of learner - sampler)``,
  truncated at the cap, on every one of its tokens;
- ``token_mask`` / ``sequence_mask``: the ratio where it is at most the cap, 0 where it exceeds
  it (the token, or the whole episode, is left out), as TRL's masked IS.

A weight ``w >= 0`` times the clipped surrogate is the clipped surrogate of the advantage times
``w`` (``-w * min(r A, clip(r) A) = -min(r wA, clip(r) wA)``), so the correction scales the
advantages and every algorithm's loss stays as it is; the KL and entropy terms are not weighted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentgym.train.config import ImportanceMode
from agentgym.train.episode import TokenEpisode


def importance_weights(
    learner: np.ndarray, sampler: np.ndarray, mask: np.ndarray, mode: ImportanceMode, cap: float
) -> np.ndarray:
    """Per-token weights of one episode (1.0 on tokens it did not sample, and for ``none``)."""
    sampled = np.asarray(mask) > 0
    out = np.ones(len(sampled))
    if mode == "none" or not sampled.any():
        return out
    log_ratio = np.where(sampled, np.asarray(learner) - np.asarray(sampler), 0.0)
    with np.errstate(over="ignore"):  # a huge ratio is inf, then capped or masked
        if mode in ("token", "token_mask"):
            ratio = np.exp(log_ratio)
        elif mode in ("sequence", "sequence_mask"):
            ratio = np.full(len(sampled), np.exp(log_ratio.sum()))
        else:
            raise ValueError(
                f"unknown importance mode {mode!r}; use none, token, sequence, token_mask or "
                "sequence_mask"
            )
    weight = np.where(ratio > cap, 0.0, ratio) if mode.endswith("mask") else np.minimum(ratio, cap)
    return np.where(sampled, weight, 1.0)


def keep_sampler_logprobs(episodes: Sequence[TokenEpisode]) -> None:
    """Keep each episode's engine logprobs before the learner's replace them (once)."""
    for ep in episodes:
        if ep.sampler_logprobs is None:
            ep.sampler_logprobs = list(ep.logprobs)


def correct(
    episodes: Sequence[TokenEpisode],
    advantages: Sequence[np.ndarray],
    mode: ImportanceMode,
    cap: float,
) -> tuple[list[np.ndarray], dict[str, float]]:
    """The advantages weighted as ``mode`` says, and what the weights did.

    ``is_weight_mean``: the mean weight over sampled tokens; ``is_capped``: the share of sampled
    tokens whose ratio exceeded the cap (truncated, or masked out). An episode whose engine
    logprobs were never replaced weighs 1.
    """
    if mode == "none":
        return list(advantages), {}
    out, total, capped, count = [], 0.0, 0, 0
    for ep, adv in zip(episodes, advantages, strict=True):
        learner = np.asarray(ep.logprobs, dtype=float)
        sampler = np.asarray(ep.sampler_logprobs or ep.logprobs, dtype=float)
        w = importance_weights(learner, sampler, np.asarray(ep.mask), mode, cap)
        out.append(np.asarray(adv) * w)
        sampled = np.asarray(ep.mask) > 0
        ratio_over = importance_weights(learner, sampler, ep.mask, _plain(mode), np.inf) > cap
        total, count = total + float(w[sampled].sum()), count + int(sampled.sum())
        capped += int(ratio_over[sampled].sum())
    n = max(count, 1)
    return out, {"is_weight_mean": total / n if count else 1.0, "is_capped": capped / n}


def _plain(mode: ImportanceMode) -> ImportanceMode:
    """The untruncated ratio of ``mode``'s level (token or sequence)."""
    return "sequence" if mode.startswith("sequence") else "token"
