"""KBQA-v0 speed: KB build and open time, executor operations/s, env steps/s.

    python benchmarks/kbqa.py [--seconds 2]

The executor runs a fixed mix of KBQA-R1 operations on the full MetaQA KB (single-entity joins,
joins from thousands of movies, intersections of large sets, global comparisons and time windows,
argmax over thousands, counts) against the cached KB (the env's default) and, as the baseline
measured in the same run, the same KB answered by SQL on every call. Target: >= 5,000 ops/s.
Figures are noisy on a shared machine.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agentgym.envs.kbqa.actions import Action
from agentgym.envs.kbqa.build import METAQA, ensure_built, entity_id, metaqa_source
from agentgym.envs.kbqa.env import KBQAEnv
from agentgym.envs.kbqa.executor import Executor, Result
from agentgym.envs.kbqa.kb import CachedKB, KnowledgeBase, SQLiteKB
from agentgym.task import TaskSuite

TARGET_OPS = 5000


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def workload(executor: Executor) -> tuple[list[Result], list[Action]]:
    """Results to work from (#0 Drama movies, #1 1990s movies, #2 Michael Mann's films) and the ops.

    The results are made by the executor, as in an episode, so they are in the KB's own sets.
    """
    results: list[Result] = []
    for action in (
        Action("find_relation", (entity_id("Drama"), "~has_genre")),
        Action("time_constraint", ("release_year", "1990-1999")),
        Action("find_relation", (entity_id("Michael Mann"), "~directed_by")),
    ):
        outcome = executor.run(action, results)
        assert outcome.result is not None, outcome.error
        results.append(outcome.result)
    ops = [
        Action("find_relation", (entity_id("Michael Mann"), "~directed_by")),
        Action("find_relation", ("#2", "starred_actors")),
        Action("find_relation", ("#0", "directed_by")),  # fan-out from thousands of movies
        Action("find_relation", (entity_id("Drama"), "~has_genre")),
        Action("merge", ("#0", "#1")),
        Action("merge", ("#2", "movie")),
        Action("order", ("MAX", "#0", "release_year")),
        Action("compare", ("gt", "release_year", "2000")),
        Action("time_constraint", ("release_year", "1990-1999")),
        Action("count", ("#0",)),
        Action("get_relations", ("#2",)),
    ]
    return results, ops


def ops_per_second(kb: KnowledgeBase, seconds: float) -> tuple[float, dict[str, float]]:
    """Operations/s over the mix, and seconds per operation of each kind."""
    executor = Executor(kb)
    results, ops = workload(executor)
    per_op = {}
    for action in ops:
        executor.run(action, results)  # warm: load the relation's index once
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / len(ops):
            executor.run(action, results)
            n += 1
        per_op[str(action)] = (time.perf_counter() - start) / n
    return len(per_op) / sum(per_op.values()), per_op


def env_steps_per_second(seconds: float) -> float:
    """Expert steps/s of the env (parsing, executing, rendering observations) on the test suites."""
    env = KBQAEnv()
    tasks = [*TaskSuite.load("kbqa/metaqa-test").tasks, *TaskSuite.load("kbqa/comp-test").tasks]
    env.reset(seed=0, options={"task": tasks[0]})  # opens the KB: not part of the rate
    steps, start, k = 0, time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        env.reset(seed=0, options={"task": tasks[k % len(tasks)]})
        k += 1
        done = False
        while not done:
            *_, terminated, truncated, _ = env.step(env.expert_action())
            steps, done = steps + 1, terminated or truncated
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description="KBQA-v0 speed")
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        build_s = timed(lambda: ensure_built(metaqa_source(), METAQA, cache=Path(tmp)))
        path = ensure_built(metaqa_source(), METAQA, cache=Path(tmp))
        open_sql = timed(lambda: SQLiteKB(path))
        first_graph = timed(lambda: CachedKB(path).graph)  # builds the arrays and caches them
        open_cached = timed(lambda: CachedKB(path).graph)
        sql, cached = SQLiteKB(path), CachedKB(path)
        fast, fast_ops = ops_per_second(cached, args.seconds)
        slow, slow_ops = ops_per_second(sql, args.seconds)
    steps = env_steps_per_second(args.seconds)

    table = Table(title="KBQA-v0 on the full MetaQA KB (130,172 triples)")
    for col in ("measure", "value", "vs baseline"):
        table.add_column(col)
    table.add_row("build SQLite from TSV", f"{build_s:.2f} s", "once per source sha256")
    table.add_row("open (SQL)", f"{open_sql * 1e3:.1f} ms", "")
    table.add_row("first open, cached KB (build + save arrays)", f"{first_graph:.2f} s", "once")
    table.add_row("open, cached KB (load saved arrays)", f"{open_cached * 1e3:.1f} ms", "")
    verdict = "meets" if fast >= TARGET_OPS else "BELOW"
    table.add_row("executor ops/s, SQL per call (baseline)", f"{slow:,.0f}", "1.0x")
    table.add_row(
        "executor ops/s, cached KB",
        f"{fast:,.0f}",
        f"{fast / slow:.1f}x ({verdict} {TARGET_OPS:,})",
    )
    table.add_row("env expert steps/s (incl. rendering)", f"{steps:,.0f}", "")
    console.print(table)

    detail = Table(title="seconds per operation")
    for col in ("operation", "SQL", "cached", "speed-up"):
        detail.add_column(col)
    for name, t_fast in fast_ops.items():
        t_slow = slow_ops[name]
        detail.add_row(
            escape(name),
            f"{t_slow * 1e6:,.0f} us",
            f"{t_fast * 1e6:,.1f} us",
            f"{t_slow / t_fast:.0f}x",
        )
    console.print(detail)


if __name__ == "__main__":
    main()
