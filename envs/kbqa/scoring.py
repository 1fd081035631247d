"""Answer scoring as in KBQA-R1: set F1 against the best of several gold sets, Hits@1 and EM.

The reward is F1 plus a 0.1 format bonus, paid only when F1 > 0 and every turn of the episode
followed the tagged format (``<think>`` then one ``<action>`` or ``<answer>``).

Excluded ids (``KBQAGold.exclude``; for MetaQA tasks the topic entity) are never answers: MetaQA's
answer sets leave the topic entity out (an actor is not among their own co-stars), and its
standard evaluation never counts the topic entity as a prediction (EmbedKGQA's ``validate`` takes
the best-ranked entity that is not the head). So they are dropped from the agent's answer before
F1, Hits@1 and EM are computed: an answer with the topic entity scores exactly as the same answer
without it, and an answer of only excluded ids is an empty answer (F1 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

FORMAT_BONUS = 0.1


def normalise(answer: str) -> str:
    """Canonical form of an answered id: stripped; numbers without a trailing ``.0``."""
    text = answer.strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else text


@dataclass(frozen=True)
class Score:
    """How good one answer is."""

    f1: float
    precision: float
    recall: float
    hits1: float
    """1 if the first answered id is in the best gold set."""
    em: float
    """1 if the answer set equals a gold set."""
    gold_index: int
    """Which gold set scored best."""


def _f1(pred: set[str], gold: set[str]) -> tuple[float, float, float]:
    hit = len(pred & gold)
    if not hit:
        return 0.0, 0.0, 0.0
    p, r = hit / len(pred), hit / len(gold)
    return 2 * p * r / (p + r), p, r


def score(
    answer: Sequence[str], golds: Sequence[Sequence[str]], exclude: Sequence[str] = ()
) -> Score:
    """Best F1 over ``golds`` (ties: the first), with Hits@1 and EM against that set.

    Ids in ``exclude`` are dropped from ``answer`` first (see the module docstring); Hits@1 then
    looks at the first answered id that is not excluded.
    """
    if not golds:
        raise ValueError("score needs at least one gold answer set")
    dropped = {normalise(x) for x in exclude}
    ordered = [n for n in (normalise(a) for a in answer) if n not in dropped]
    pred = set(ordered)
    sets = [{normalise(g) for g in gold} for gold in golds]
    best = max(range(len(sets)), key=lambda i: (_f1(pred, sets[i])[0], -i))
    f1, p, r = _f1(pred, sets[best])
    hits1 = float(bool(ordered) and ordered[0] in sets[best])
    em = float(any(pred == s for s in sets))
    return Score(f1, p, r, hits1, em, best)


def reward(f1: float, format_ok: bool) -> float:
    """F1, plus :data:`FORMAT_BONUS` only when F1 > 0 and the format held on every turn."""
    return f1 + (FORMAT_BONUS if f1 > 0 and format_ok else 0.0)
