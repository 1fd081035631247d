"""First real-LLM baselines: SmolLM2-135M-Instruct zero-shot beside random and the expert.

    python -m experiments.baselines                      # every family, 30 tasks each (hours on 2 cores)
    python -m experiments.baselines --only clarify,bfcl-simple --n 10
    python -m experiments.baselines --write-docs         # rewrite the table in its notebook entry
    python -m experiments.baselines --stored --write-docs   # the table from the store, running nothing

Each family is a fixed, evenly spread subset of a built-in suite (every k-th task, so tags and
difficulties mix as in the full suite). Runs are greedy (temperature 0) with seed 0 and go to one
SQLite store (``--db``): rerunning the same command resumes where it stopped, and families already
done are only re-read. The table gives success and score with 95% Wilson intervals, the share of
invalid actions, mean tokens per episode and the wall time this machine spent on each run (summed
over resumed invocations, kept beside the store in ``<db>.wall.json``). The tau families and SWE
run on fewer tasks (``Family.n``): every SmolLM2 turn there prefills thousands of tokens. A family
stopped part way is shown by ``--stored`` as ``k of n`` episodes.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

import agentgym
from agentgym.metrics import summarize, wilson_interval
from agentgym.store import Store
from agentgym.task import TaskSuite

MODEL = "hf:smollm2"
AGENTS = ("random", "expert", MODEL)


@dataclass(frozen=True)
class Family:
    name: str
    suite: str
    max_steps: int | None = None
    """Step cap for every agent (None: the env's own limit)."""
    agents: tuple[str, ...] = AGENTS
    n: int | None = None
    """Tasks in the subset (None: ``--n``); tau and SWE are smaller because every SmolLM2 turn
    there prefills thousands of tokens (a tau policy and tool list, a repository's files)."""


FAMILIES = [
    Family("clarify", "clarify/test"),
    Family("bfcl-simple", "bfcl/simple"),
    Family("bfcl-multiple", "bfcl/multiple"),
    Family("bfcl-parallel", "bfcl/parallel"),
    Family("oversight", "oversight/grid", agents=("random", MODEL)),
    Family("kbqa-metaqa", "kbqa/metaqa-test", max_steps=10),
    Family("kbqa-comp", "kbqa/comp-test", max_steps=10),
    Family("household", "household/valid_unseen", max_steps=20),
    Family("webshop", "webshop/test", max_steps=15),
    Family("social-negotiation", "social/negotiation", agents=("random", MODEL)),  # no expert
    Family("tau-mock", "tooluse/mock", max_steps=15, n=10),
    Family("tau-retail", "tooluse/retail-test", max_steps=15, n=5),
    Family("tau-airline", "tooluse/airline-test", max_steps=15, n=5),
    Family("swe-humanevalfix", "swe/humanevalfix", max_steps=10, n=10),
]
"""Cheapest first, so an interrupted run has the most families done."""


def spread(suite: TaskSuite, n: int) -> TaskSuite:
    """``n`` tasks taken evenly across the suite (all of it when smaller)."""
    tasks = suite.tasks
    step = max(1, len(tasks) // n)
    return TaskSuite(f"{suite.name}[::{step}][:{n}]", tasks[::step][:n])


def run(
    families: list[Family],
    n: int,
    db: Path,
    concurrency: int,
    console: Console,
    stored_only: bool = False,
) -> list[dict]:
    """Evaluate (or resume) every family's agents and summarise each run; ``stored_only`` runs
    nothing and summarises what the store holds, so a family stopped part way shows as
    ``k of n``."""
    wall_file = db.with_suffix(db.suffix + ".wall.json")
    wall = json.loads(wall_file.read_text()) if wall_file.exists() else {}
    rows = []
    for fam in families:
        subset = spread(TaskSuite.load(fam.suite), fam.n or n)
        for agent in fam.agents:
            key = f"{fam.name}|{agent}"
            if stored_only:
                eps = _stored(db, f"baseline {fam.name} {agent}", subset.name)
                if eps:
                    rows.append(_row(fam, subset, agent, eps, wall.get(key)))
                continue
            console.print(f"[bold]{fam.name}[/bold] {agent}: {len(subset)} tasks")
            start = time.perf_counter()
            result = agentgym.evaluate(
                subset,
                agent,
                concurrency=concurrency if agent == MODEL else 4,
                db=db,
                max_steps=fam.max_steps,
                seed=0,
                name=f"baseline {fam.name} {agent}",
            )
            if result.new_episodes:
                wall[key] = wall.get(key, 0.0) + time.perf_counter() - start
                wall_file.write_text(json.dumps(wall, indent=1))
            rows.append(_row(fam, subset, agent, result.episode_rows(), wall.get(key)))
            console.print(table(rows[-1:]))
    return rows


def _stored(db: Path, name: str, suite: str) -> list[dict]:
    """The stored episodes of the latest run called ``name`` on ``suite`` (none if never run)."""
    if not db.is_file():
        return []
    store = Store(db, read_only=True)
    try:
        runs = [r for r in store.runs() if r["name"] == name and r["suite"] == suite]
        return store.episode_rows(runs[-1]["id"]) if runs else []
    finally:
        store.close()


def _row(fam: Family, subset: TaskSuite, agent: str, eps: list[dict], wall_s: float | None) -> dict:
    s = summarize(eps)
    partial = f" ({s.episodes} of {len(subset)})" if s.episodes < len(subset) else ""
    return {
        "family": fam.name,
        "suite": subset.name + partial,
        "agent": agent,
        "max_steps": fam.max_steps,
        "episodes": s.episodes,
        "successes": s.successes,
        "success_ci": wilson_interval(s.successes, s.episodes),
        "score": s.mean_score,
        "score_ci": _mean_ci([float(e["score"] or 0) for e in eps]),
        "invalid_rate": s.invalid_rate,
        "tokens": s.mean_tokens,
        "errors": s.errors,
        "wall_s": wall_s,
    }


def _mean_ci(values: list[float]) -> tuple[float, float]:
    """Normal-approximation 95% interval of a mean (scores are bounded in [0, 1])."""
    if len(values) < 2:
        return (0.0, 1.0)
    m = sum(values) / len(values)
    var = sum((v - m) ** 2 for v in values) / (len(values) - 1)
    half = 1.96 * (var / len(values)) ** 0.5
    return (max(0.0, m - half), min(1.0, m + half))


HEADER = [
    "family",
    "agent",
    "n",
    "success [95% Wilson]",
    "score [95% CI]",
    "invalid actions",
    "tokens/episode",
    "wall s",
    "errors",
]


def cells(r: dict) -> list[str]:
    """One result row as text, the same for the terminal and for the docs."""
    lo, hi = r["success_ci"]
    slo, shi = r["score_ci"]
    return [
        r["family"],
        r["agent"],
        str(r["episodes"]),
        f"{r['successes'] / max(1, r['episodes']):.2f} [{lo:.2f}, {hi:.2f}]",
        f"{r['score']:.2f} [{slo:.2f}, {shi:.2f}]",
        f"{r['invalid_rate']:.0%}",
        f"{r['tokens']:.0f}",
        "" if r["wall_s"] is None else f"{r['wall_s']:.0f}",
        str(r["errors"]),
    ]


def table(rows: list[dict]) -> Table:
    t = Table(*HEADER)
    for r in rows:
        t.add_row(*cells(r))
    return t


def markdown(rows: list[dict], command: str) -> str:
    lines = [
        f"Command: `{command}` (greedy, seed 0; resumable; the wall time of an invocation that"
        " was killed is not counted).",
        "",
        "| " + " | ".join([*HEADER, "subset"]) + " |",
        "|---" * (len(HEADER) + 1) + "|",
    ]
    for r in rows:
        cap = f", ≤{r['max_steps']} steps" if r["max_steps"] else ""
        lines.append("| " + " | ".join([*cells(r), f"`{r['suite']}`{cap}"]) + " |")
    return "\n".join(lines)


START, END = "<!-- baselines:start -->", "<!-- baselines:end -->"


BASELINES_DOC = Path("docs/notebook/2026-12-01-smollm2-zero-shot-baselines.md")


def write_docs(text: str, path: Path = BASELINES_DOC) -> None:
    """Replace the baseline table between its markers in its notebook entry."""
    doc = path.read_text()
    if START not in doc:
        raise SystemExit(f"{path} has no {START} ... {END} block to rewrite")
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{START}\n{text}\n{END}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--n", type=int, default=30, help="tasks per family")
    parser.add_argument("--only", default="", help="comma-separated family names")
    parser.add_argument("--db", type=Path, default=Path("out/baselines.db"))
    parser.add_argument(
        "-c", "--concurrency", type=int, default=16, help="episodes batched for the model"
    )
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument(
        "--stored", action="store_true", help="run nothing: summarise what the store holds"
    )
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    names = {f.name for f in FAMILIES}
    only = [x for x in args.only.split(",") if x]
    if unknown := set(only) - names:
        parser.error(f"unknown families {sorted(unknown)}; known: {', '.join(sorted(names))}")
    families = [f for f in FAMILIES if not only or f.name in only]
    console = Console()
    rows = run(families, args.n, args.db, args.concurrency, console, args.stored)
    console.print(table(rows))
    if args.write_docs:
        command = f"python -m experiments.baselines --n {args.n}" + (
            f" --only {args.only}" if only else ""
        )
        write_docs(markdown(rows, command))


if __name__ == "__main__":
    main()
