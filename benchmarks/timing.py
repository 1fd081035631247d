"""What the env benchmarks share: a timed rate and whole expert episodes as a unit of work.

The scripts run as ``python benchmarks/NAME.py``, so this folder is on ``sys.path`` and they
import this module by its bare name.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

from agentgym.task import Task


def rate(work: Callable[[], int], seconds: float) -> float:
    """Operations per second of ``work`` (which returns how many it did), run for ``seconds``."""
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        done += work()
    return done / (time.perf_counter() - t0)


def expert_episodes(env: Any, tasks: list[Task]) -> Callable[[], int]:
    """Whole expert episodes over ``tasks`` in turn (planning included), counted in steps."""
    it = iter(range(10**9))

    def work() -> int:
        env.reset(options={"task": tasks[next(it) % len(tasks)]})
        steps = 0
        while True:
            steps += 1
            _, _, terminated, truncated, _ = env.step(env.expert_action())
            if terminated or truncated:
                return steps

    return work


def seconds_on_one_cpu(description: str | None) -> float:
    """``--seconds`` from the command line, with the process pinned to one CPU where the OS
    allows (the rates are per core)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    return float(args.seconds)
