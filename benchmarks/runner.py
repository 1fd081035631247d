"""Runner overhead: episodes through ``agentgym.evaluate`` vs. a bare reset/step loop.

A no-op env and agent make every step nearly free, so what is left is the runner's own cost
(scheduling, threads, Episode records, SQLite writes). Run: ``python benchmarks/runner.py``.
Prints one row per concurrency with per-episode and per-step overhead and the ratio to the bare loop.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

import agentgym
from agentgym.testing import noop_suite


def bare_loop(n_episodes: int, length: int) -> float:
    """Seconds for the same episodes without the runner: the baseline."""
    suite = noop_suite(n_episodes, length)
    env = agentgym.make("NoOp-v0")
    agent = agentgym.ExpertAgent(env)
    t0 = time.perf_counter()
    for task in suite:
        obs, info = env.reset(seed=0, options={"task": task})
        agent.reset(info)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
            done = terminated or truncated
    return time.perf_counter() - t0


def runner(n_episodes: int, length: int, concurrency: int, db: Path | None) -> float:
    """Seconds for ``evaluate`` over the same episodes, storing to ``db``."""
    t0 = time.perf_counter()
    result = agentgym.evaluate(
        noop_suite(n_episodes, length), "expert", concurrency=concurrency, db=db
    )
    elapsed = time.perf_counter() - t0
    assert result.progress.done == n_episodes and result.progress.successes == n_episodes
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--length", type=int, default=10, help="steps per episode")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 256])
    args = parser.parse_args()
    n, length = args.episodes, args.length

    base = bare_loop(n, length)
    table = Table(title=f"runner overhead: {n} no-op episodes x {length} steps")
    for col in [
        "setup",
        "episodes/s",
        "µs/episode",
        "overhead µs/episode",
        "overhead µs/step",
        "time vs bare loop",
    ]:
        table.add_column(col, justify="right")
    table.add_row(
        "bare reset/step loop (baseline)",
        f"{n / base:,.0f}",
        f"{base / n * 1e6:,.0f}",
        "0",
        "0",
        "1.00x",
    )
    with tempfile.TemporaryDirectory() as tmp:
        for c in args.concurrency:
            for label, db in (("in-memory", None), ("SQLite file", Path(tmp) / f"c{c}.db")):
                t = runner(n, length, c, db)
                over = (t - base) / n
                table.add_row(
                    f"evaluate c={c}, {label}",
                    f"{n / t:,.0f}",
                    f"{t / n * 1e6:,.0f}",
                    f"{over * 1e6:,.0f}",
                    f"{over / length * 1e6:,.1f}",
                    f"{t / base:.2f}x",
                )
    Console(width=150).print(table)


if __name__ == "__main__":
    main()
