"""WebShop-v0 speed and memory on one core: searches/s, non-search steps/s, bytes per env.

    python benchmarks/webshop.py [--seconds 2]

Searches run the 500 ``webshop/test`` instructions through the bm25s engine with its cache off
(every query scored afresh), against a baseline measured in the same run: SQLite FTS5 (porter
tokenizer, BM25 ranking, terms OR-ed as Lucene's query parser does) over the same documents.
Non-search steps are clicks (product, options, sub-pages, back, next page) compared with the NoOp
test env (what the ``TextEnv`` base class and Gymnasium cost). Memory: the shop (catalog, index,
page cache) is built once per process and shared; per-env bytes exclude it. The process is pinned
to one CPU where the OS allows. Shared machines make the figures noisy.
"""

from __future__ import annotations

import gc
import re
import sqlite3
import tracemalloc
from collections.abc import Callable

from rich.console import Console
from rich.table import Table
from timing import expert_episodes, rate, seconds_on_one_cpu

from agentgym.envs.webshop.catalog import bundled_catalog
from agentgym.envs.webshop.env import WebShopEnv, shop_for
from agentgym.envs.webshop.search import SEARCH_RETURN_N, SearchEngine
from agentgym.task import Task, TaskSuite
from agentgym.testing import NoOpEnv, noop_suite

TARGETS = {"searches/s": 2_000.0, "steps/s": 10_000.0}
_TERM = re.compile(r"\w+")


def cycle(queries: list[str], search: Callable[[str], object]) -> Callable[[], int]:
    def work() -> int:
        for q in queries:
            search(q)
        return len(queries)

    return work


def fts5_search() -> Callable[[str], list[int]]:
    """The baseline engine: SQLite FTS5 over the same search text, top 50 by bm25()."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='porter unicode61')")
    db.executemany(
        "INSERT INTO docs(rowid, body) VALUES (?, ?)",
        enumerate(p.search_text() for p in bundled_catalog()),
    )

    def search(query: str) -> list[int]:
        terms = " OR ".join(f'"{t}"' for t in sorted(set(_TERM.findall(query.lower()))))
        sql = "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?"
        return [r for (r,) in db.execute(sql, (terms, SEARCH_RETURN_N))]

    return search


def click_steps(env: WebShopEnv, task: Task) -> Callable[[], int]:
    """Results page -> next page -> a product -> description -> back, repeated (no searches)."""
    env.reset(seed=0, options={"task": task.model_copy(update={"config": {"max_steps": 1000}})})
    env.step("search[water bottle stainless steel]")

    def work() -> int:
        for _ in range(100):
            env.step("click[next >]")
            env.step(env.available_actions()[-1])  # the last product on the page
            env.step("click[description]")
            env.step("click[< prev]")
            env.step("click[< prev]")  # item -> results (page 2)
            env.step("click[< prev]")  # page 2 -> page 1
            env.state.steps = 0
        return 600

    return work


def option_steps(env: WebShopEnv, task: Task) -> Callable[[], int]:
    """Option clicks on a product page."""
    env.reset(seed=0, options={"task": task.model_copy(update={"config": {"max_steps": 1000}})})
    env.step("search[t-shirt color size material style]")
    env.step("click[9523456873]")

    def work() -> int:
        for _ in range(100):
            for value in ("blue", "m", "cotton", "v-neck"):
                env.step(f"click[{value}]")
            env.state.steps = 0
        return 400

    return work


def noop_steps(env: NoOpEnv) -> Callable[[], int]:
    task = noop_suite(1, length=10**9).tasks[0]
    env.reset(seed=0, options={"task": task})

    def work() -> int:
        for _ in range(1000):
            env.step("noop")
        return 1000

    return work


def memory(tasks: list[Task]) -> tuple[float, float, float]:
    """(shop bytes, bytes for 1 env, bytes per env for 64 envs), each after a reset and a search."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    shop_for.cache_clear()
    bundled_catalog.cache_clear()
    WebShopEnv().reset(seed=0, options={"task": tasks[0]})
    gc.collect()
    shop = tracemalloc.get_traced_memory()[0] - base
    sizes = []
    for n in (1, 64):
        start = tracemalloc.get_traced_memory()[0]
        envs = [WebShopEnv() for _ in range(n)]
        for i, e in enumerate(envs):
            e.reset(seed=0, options={"task": tasks[i % len(tasks)]})
            e.step(e.expert_action())
        gc.collect()
        sizes.append((tracemalloc.get_traced_memory()[0] - start) / n)
        del envs
        gc.collect()
    tracemalloc.stop()
    return shop, sizes[0], sizes[1]


def main() -> None:
    sec = seconds_on_one_cpu(__doc__)
    tasks = TaskSuite.load("webshop/test").tasks
    queries = [t.instruction.lower() for t in tasks]
    engine = SearchEngine(bundled_catalog(), cache_size=0)
    cached = SearchEngine(bundled_catalog())
    base_search = rate(cycle(queries, fts5_search()), sec)
    base_steps = rate(noop_steps(NoOpEnv()), sec)
    env = WebShopEnv()
    rows = [
        ("search, bm25s (no cache)", "searches/s", rate(cycle(queries, engine.search), sec), base_search, "FTS5"),
        ("search, bm25s (LRU cache, repeated queries)", "searches/s", rate(cycle(queries, cached.search), sec), base_search, "FTS5"),
        ("clicks: next, product, description, back", "steps/s", rate(click_steps(env, tasks[0]), sec), base_steps, "NoOp"),
        ("clicks: options on a product page", "steps/s", rate(option_steps(env, tasks[0]), sec), base_steps, "NoOp"),
        ("expert episodes (planning + cached searches)", "steps/s*", rate(expert_episodes(env, tasks), sec), base_steps, "NoOp"),
    ]  # fmt: skip
    shop, one, per64 = memory(tasks)
    table = Table(title=f"WebShop-v0 on one core ({sec:.0f} s per figure; shared machine: noisy)")
    for col in ["workload", "rate", "unit", "baseline", "rate", "ratio", "target", "meets"]:
        table.add_column(
            col, justify="left" if col in ("workload", "unit", "baseline") else "right"
        )
    for name, unit, value, baseline, base_name in rows:
        target = TARGETS.get(unit)
        table.add_row(
            name, f"{value:,.0f}", unit, base_name, f"{baseline:,.0f}", f"{value / baseline:.2f}",
            f"{target:,.0f}" if target else "", ("yes" if value >= target else "NO") if target else "",
        )  # fmt: skip
    table.add_row(
        "memory: shared shop (catalog, index, pages)",
        f"{shop / 2**20:,.1f}",
        "MiB",
        "",
        "",
        "",
        "",
        "",
    )
    table.add_row(
        "memory: 1 env (after reset + search)", f"{one / 1024:,.1f}", "KiB", "", "", "", "", ""
    )
    table.add_row("memory: per env, 64 envs", f"{per64 / 1024:,.1f}", "KiB", "", "", "", "", "")
    Console(width=140).print(table)
    print("* the expert's own planning (a reward per result when the goal is not listed) included")


if __name__ == "__main__":
    main()
