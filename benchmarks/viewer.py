"""Opening a 100,000-episode store in the viewer: API latency per page, vs. loading the whole run.

The store comes from real evals (Clarify test suite, expert and random agents); the random run's
episodes and steps are then copied as further samples until it holds 100,000 episodes (about
400,000 steps). Each viewer request goes over HTTP to a ``ViewerThread``; the baseline is what a
viewer without server-side paging does to show the same run: read every episode row of the run
(``Store.episode_rows``) and serialise it to JSON. With Chromium installed, the time from
navigation to the rendered episode table is measured in a real headless browser too.
Run: ``python benchmarks/viewer.py [--episodes 100000]``. Figures are noisy on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

import agentgym
from agentgym.viewer import ViewerThread


def build_store(path: Path, episodes: int) -> tuple[str, str]:
    """Real evals, then the random run copied as samples 1..k-1; returns (expert, random) ids."""
    expert = agentgym.evaluate("clarify/test", "expert", db=path).run_id
    result = agentgym.evaluate("clarify/test", "random", db=path)
    per_copy = len(result.episode_rows())
    copies = max(1, episodes // per_copy)
    db = result.store.db
    ep_cols = [c.name for c in db["episodes"].columns]
    st_cols = [c.name for c in db["steps"].columns]

    def copy_sql(table: str, cols: list[str]) -> str:
        picked = ", ".join("sample + k.i" if c == "sample" else c for c in cols)
        return (
            f"with recursive k(i) as (select 1 union all select i + 1 from k where i < ?) "
            f"insert into {table} ({', '.join(cols)}) select {picked} from {table}, k "
            f"where run_id = ? and sample = 0"
        )

    with db.conn:
        db.conn.execute(copy_sql("episodes", ep_cols), [copies - 1, result.run_id])
        db.conn.execute(copy_sql("steps", st_cols), [copies - 1, result.run_id])
    result.store.close()
    return expert, result.run_id


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Seconds of the first call, and the median of ``repeats`` calls after it."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return first, statistics.median(samples)


def requests(url: str, expert: str, random_id: str) -> dict[str, list[str]]:
    """What the browser fetches for each page (run in sequence here: an upper bound)."""
    run = f"runs/{random_id}"
    some_task = httpx.get(f"{url}api/{run}/episodes", params={"page_size": 1}).json()["rows"][0]
    last = httpx.get(f"{url}api/{run}/episodes").json()["pages"]
    ep = f"episode?run={random_id}&task={some_task['task_id']}&sample=250"
    return {
        "runs page": ["version", "runs", "training"],
        "run page (list first)": [run, f"{run}/episodes"],
        "run page: tag plot": [f"{run}/summary"],
        "filter success=no": [f"{run}/episodes?success=no"],
        "filter tag=hard": [f"{run}/episodes?tag=hard"],
        "search 'products'": [f"{run}/episodes?q=products"],
        "steps >= 6, sort by steps": [f"{run}/episodes?min_steps=6&sort=steps&desc=true"],
        f"last page ({last})": [f"{run}/episodes?page={last}"],
        "episode page": [ep],
        "compare 100k vs 200": [f"compare?a={random_id}&b={expert}&only=differ"],
    }


def baseline(path: Path, run_id: str) -> float:
    store = agentgym.Store(path)
    try:
        return timed(lambda: json.dumps(store.episode_rows(run_id)), 2)[1]
    finally:
        store.close()


def browser_open(url: str, run_id: str, repeats: int) -> tuple[float, float] | None:
    """Seconds from navigation to the rendered first page of episodes in headless Chromium."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
    except ImportError:
        return None
    if not Path("/usr/bin/chromium").is_file() or not Path("/usr/bin/chromedriver").is_file():
        return None
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    flags = "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
    flags += "--disable-background-networking --disable-component-update --disable-sync"
    for flag in [*flags.split(), f"--user-data-dir={tempfile.mkdtemp()}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)

    def open_run() -> None:
        driver.get("about:blank")
        driver.get(f"{url}#/run/{run_id}")
        WebDriverWait(driver, 60, poll_frequency=0.02).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, "table#episodes tbody tr")) == 50
        )

    try:
        return timed(open_run, repeats)
    finally:
        driver.quit()


PROPOSED_INDEX = (
    "create index if not exists episodes_list on episodes (run_id, task_id, sample, success, "
    "status, steps, score, reward, duration_s, prompt_tokens, completion_tokens, cost, "
    "started_at, tags)"
)


def measure(
    path: Path, expert: str, random_id: str, repeats: int
) -> dict[str, tuple[float, float]]:
    """(first call on a fresh viewer, median of repeats after it) per page, over HTTP and, when
    it is installed, in Chromium. The viewer caches whole-run aggregates per store version, so
    the first call is what opening the page after an eval wrote to the store costs."""
    out = {}
    with ViewerThread(path) as viewer:
        pages = requests(viewer.url, expert, random_id)
    for label, urls in pages.items():
        with ViewerThread(path) as viewer, httpx.Client(base_url=viewer.url + "api/") as client:
            run = lambda urls=urls: [client.get(u).raise_for_status() for u in urls]  # noqa: E731
            out[label] = timed(run, repeats)
    with ViewerThread(path) as viewer:
        shown = browser_open(viewer.url, random_id, repeats)
    if shown is not None:
        out["Chromium: open run, 50 rows drawn"] = shown
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    console = Console(width=120)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.db"
        t0 = time.perf_counter()
        expert, random_id = build_store(path, args.episodes)
        store = agentgym.Store(path)
        n = store.db.execute("select count(*) from episodes where run_id = ?", [random_id])
        n = n.fetchone()[0]
        console.print(
            f"store: {n:,} episodes in one run, {path.stat().st_size / 1e6:.0f} MB, "
            f"built in {time.perf_counter() - t0:.1f} s"
        )
        base = baseline(path, random_id)
        plain = measure(path, expert, random_id, args.repeats)
        t0 = time.perf_counter()
        store.db.execute(PROPOSED_INDEX)
        store.db.conn.commit()
        built = time.perf_counter() - t0
        store.close()
        indexed = measure(path, expert, random_id, args.repeats)
        console.print(
            f"proposed index built in {built:.1f} s, file now {path.stat().st_size / 1e6:.0f} MB"
        )
    table = Table(
        title=f"viewer on a {n:,}-episode run: first / median of next {args.repeats} "
        "(seconds; noisy: shared machine)"
    )
    table.add_column("page")
    for col in ("store as today", "with episodes_list index", "whole-run load / first"):
        table.add_column(col, justify="right")
    table.add_row("baseline: every episode row of the run as JSON", f"{base:.3f}", "", "1.0")
    for label, (first, warm) in indexed.items():
        p_first, p_warm = plain[label]
        table.add_row(
            label,
            f"{p_first:.3f} / {p_warm:.3f}",
            f"{first:.3f} / {warm:.3f}",
            f"{base / p_first:.0f} / {base / first:.0f}",
        )
    console.print(table)


if __name__ == "__main__":
    main()
