"""Credit assignment as pure functions over plain arrays: group baselines, GAE, GiGPO, ACR.

Everything here is numpy in, numpy out, with no model and no episode objects, so each function
has exact unit tests on hand-made groups (tests/train/test_train_advantages.py). ``valid`` marks the
episodes that count: infrastructure failures (``status="error"``) are left out of every group
statistic and get advantage 0.

Standard deviations are sample standard deviations (``ddof=1``, as ``torch.std`` in TRL/verl);
a group with fewer than two valid members has advantage 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from difflib import SequenceMatcher

import numpy as np

Array = np.ndarray


def _groups(groups: Sequence[Hashable], valid: Array) -> dict[Hashable, list[int]]:
    out: dict[Hashable, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        if valid[i]:
            out[g].append(i)
    return out


def _valid(n: int, valid: Sequence[bool] | Array | None) -> Array:
    return np.ones(n, bool) if valid is None else np.asarray(valid, bool)


def group_advantages(
    rewards: Sequence[float] | Array,
    groups: Sequence[Hashable],
    valid: Sequence[bool] | Array | None = None,
    scale: str = "std",
    eps: float = 1e-6,
) -> Array:
    """GRPO: ``(r - mean_group) / (std_group + eps)``; ``scale="none"`` is Dr.GRPO (no division)."""
    if scale not in ("std", "none"):
        raise ValueError(f"scale must be 'std' (GRPO) or 'none' (Dr.GRPO), got {scale!r}")
    r = np.asarray(rewards, float)
    ok = _valid(len(r), valid)
    adv = np.zeros_like(r)
    for members in _groups(groups, ok).values():
        if len(members) < 2:
            continue
        x = r[members]
        centred = x - x.mean()
        adv[members] = centred / (x.std(ddof=1) + eps) if scale == "std" else centred
    return adv


def advantage_collapse_rate(
    rewards: Sequence[float] | Array,
    groups: Sequence[Hashable],
    valid: Sequence[bool] | Array | None = None,
    tol: float = 1e-8,
) -> float:
    """Share of groups (with at least two valid members) whose rewards are all equal (AVSPO)."""
    r = np.asarray(rewards, float)
    members = [m for m in _groups(groups, _valid(len(r), valid)).values() if len(m) >= 2]
    if not members:
        return 0.0
    return float(np.mean([np.ptp(r[m]) <= tol for m in members]))


def whiten(values: Array, valid: Array | None = None, eps: float = 1e-6) -> Array:
    """``(x - mean) / (std + eps)`` over the valid entries (population std); 0 elsewhere."""
    ok = _valid(len(values), valid)
    out = np.zeros_like(values, dtype=float)
    if ok.sum() == 0:
        return out
    x = values[ok]
    out[ok] = (x - x.mean()) / (x.std() + eps)
    return out


def reinforce_pp_advantages(
    rewards: Sequence[float] | Array,
    groups: Sequence[Hashable],
    valid: Sequence[bool] | Array | None = None,
    group_baseline: bool = True,
    eps: float = 1e-6,
) -> Array:
    """REINFORCE++: optional group-mean baseline, then whitening over the whole batch."""
    r = np.asarray(rewards, float)
    ok = _valid(len(r), valid)
    base = group_advantages(r, groups, ok, scale="none") if group_baseline else r.copy()
    return whiten(base, ok, eps)


def discounted_returns(rewards: Sequence[float] | Array, gamma: float) -> Array:
    """``G_t = r_t + gamma * G_{t+1}`` over one episode's turns."""
    r = np.asarray(rewards, float)
    out, acc = np.zeros_like(r), 0.0
    for t in range(len(r) - 1, -1, -1):
        acc = r[t] + gamma * acc
        out[t] = acc
    return out


def turn_gae(
    rewards: Sequence[float] | Array,
    values: Sequence[float] | Array,
    gamma: float,
    lam: float,
) -> tuple[Array, Array]:
    """GAE over the turns of one finished episode (value after the last turn is 0).

    Returns (advantages, returns) with ``returns = advantages + values``.
    """
    r, v = np.asarray(rewards, float), np.asarray(values, float)
    if len(r) != len(v):
        raise ValueError(f"{len(r)} rewards but {len(v)} values")
    adv, acc = np.zeros_like(r), 0.0
    for t in range(len(r) - 1, -1, -1):
        next_v = v[t + 1] if t + 1 < len(v) else 0.0
        acc = r[t] + gamma * next_v - v[t] + gamma * lam * acc
        adv[t] = acc
    return adv, adv + v


# ---------------------------------------------------------------------------- GiGPO
AnchorFn = Callable[[Sequence[str]], list[Hashable]]
"""Maps the states (observations) of all steps in one group to anchor keys; equal keys share a
step group."""


def exact_anchor(states: Sequence[str]) -> list[Hashable]:
    """Steps share an anchor when they saw exactly the same observation (GiGPO's default)."""
    return list(states)


def similarity_anchor(threshold: float = 0.9) -> AnchorFn:
    """Steps share an anchor with the first earlier state at least ``threshold`` similar."""

    def keys(states: Sequence[str]) -> list[Hashable]:
        reps: list[str] = []
        out: list[Hashable] = []
        for s in states:
            match = next(
                (
                    i
                    for i, rep in enumerate(reps)
                    if SequenceMatcher(None, s, rep).ratio() >= threshold
                ),
                None,
            )
            if match is None:
                reps.append(s)
                match = len(reps) - 1
            out.append(match)
        return out

    return keys


def gigpo_advantages(
    episode_rewards: Sequence[float] | Array,
    groups: Sequence[Hashable],
    turn_rewards: Sequence[Sequence[float]],
    states: Sequence[Sequence[str]],
    valid: Sequence[bool] | Array | None = None,
    gamma: float = 0.95,
    omega: float = 1.0,
    scale: str = "std",
    anchor: AnchorFn = exact_anchor,
    eps: float = 1e-6,
) -> list[Array]:
    """GiGPO: per turn, the episode advantage plus ``omega`` times a step advantage.

    The episode advantage is GRPO's over the group. The step advantage normalises each step's
    discounted return within its anchor group: the steps, across the group's episodes, whose
    states get the same key from ``anchor``. Returns one array of per-turn advantages per episode.
    """
    ok = _valid(len(episode_rewards), valid)
    a_ep = group_advantages(episode_rewards, groups, ok, scale, eps)
    out = [np.full(len(tr), a_ep[i]) for i, tr in enumerate(turn_rewards)]
    for members in _groups(groups, ok).values():
        steps = [(i, t) for i in members for t in range(len(turn_rewards[i]))]
        keys = anchor([states[i][t] for i, t in steps])
        returns = {i: discounted_returns(turn_rewards[i], gamma) for i in members}
        g = [returns[i][t] for i, t in steps]
        step_adv = group_advantages(g, keys, None, scale, eps)
        for (i, t), a in zip(steps, step_adv, strict=True):
            out[i][t] += omega * a
    for bad in np.flatnonzero(~ok):
        out[int(bad)][:] = 0.0
    return out
