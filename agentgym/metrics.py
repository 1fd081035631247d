"""Statistics for reports: Wilson intervals, pass@k, pass^k, and per-group summaries."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval for a binomial proportion (well-behaved at 0, 1 and small n)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # The interval contains p; rounding must not push a bound past it (1.0 at 100% success,
    # not 0.9999999999999999: plots take p - lo and hi - p as error bars).
    return (min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half)))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased P(at least one of k samples succeeds) from n samples with c successes (Chen et al.)."""
    if k > n:
        raise ValueError(f"k={k} exceeds the {n} samples")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """P(all of k samples succeed), tau-bench's pass^k, from n samples with c successes."""
    if k > n:
        raise ValueError(f"k={k} exceeds the {n} samples")
    return math.comb(c, k) / math.comb(n, k)


@dataclass
class Summary:
    """Aggregate of one group of episodes (a suite, or a tag within it)."""

    group: str
    tasks: int
    episodes: int
    successes: int
    errors: int
    mean_score: float
    mean_steps: float
    mean_tokens: float
    total_cost: float
    invalid_rate: float = 0.0
    """Share of all steps whose action the env rejected (``info["valid"]`` false)."""
    pass_at: dict[int, float] = field(default_factory=dict)
    pass_hat: dict[int, float] = field(default_factory=dict)

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes if self.episodes else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.episodes)


def summarize(rows: Iterable[dict[str, Any]], group: str = "all") -> Summary:
    """Summarise episode rows (from ``Store.episode_rows``); pass@k/pass^k for k up to the samples."""
    rows = list(rows)
    by_task: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        by_task[r["task_id"]].append(bool(r["success"]))
    k_max = min((len(v) for v in by_task.values()), default=0)
    ks = sorted({k for k in (1, 2, 4, 8, 16, 32) if k <= k_max} | ({k_max} if k_max else set()))
    n = len(rows)

    def mean(key: str) -> float:
        return _mean(float(r[key] or 0) for r in rows)

    return Summary(
        group=group,
        tasks=len(by_task),
        episodes=n,
        successes=sum(bool(r["success"]) for r in rows),
        errors=sum(r["status"] == "error" for r in rows),
        mean_score=mean("score"),
        mean_steps=mean("steps"),
        mean_tokens=mean("prompt_tokens") + mean("completion_tokens"),
        total_cost=sum(float(r["cost"] or 0) for r in rows),
        invalid_rate=sum(int(r.get("invalid_steps") or 0) for r in rows)
        / max(1, sum(int(r["steps"] or 0) for r in rows)),
        pass_at={k: _mean(pass_at_k(len(v), sum(v), k) for v in by_task.values()) for k in ks},
        pass_hat={k: _mean(pass_hat_k(len(v), sum(v), k) for v in by_task.values()) for k in ks},
    )


def summarize_by_tag(rows: Iterable[dict[str, Any]]) -> list[Summary]:
    """One summary for all rows, then one per tag (sorted)."""
    rows = list(rows)
    tags = sorted({t for r in rows for t in r["tags"]})
    return [summarize(rows)] + [
        summarize([r for r in rows if tag in r["tags"]], tag) for tag in tags
    ]


def _mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0
