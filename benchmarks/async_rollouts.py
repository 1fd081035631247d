"""Synchronous against asynchronous rollouts (``rollout.mode``) on Clarify, the same wall clock each.

Per seed: the train demo's tiny Llama (``experiments.train_demo``: narrowed Clarify product
tasks, a tokenizer fitted to them) is SFT'd on the expert, then GRPO runs from that checkpoint
for ``--budget`` seconds in each arm: sync with one torch thread (the learner samples), sync with
two (both cores to one process), and async with one thread in the learner and one in the
rollout worker, at ``max_staleness`` K=1 and K=2 (``stale: drop``). Reported per arm: episodes
per hour (episodes of the steps trained, over the budget's wall clock, worker start included),
the ratio to sync at one thread, the share of episodes dropped as stale, the share spanning
versions, and held-out success after the budget (every arm's final policy on the same held-out
tasks and sampling seeds), with the per-task paired difference to sync at one thread.

    python benchmarks/async_rollouts.py --seeds 3 --budget 60
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))  # the clone's experiments package

ARMS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("sync, 1 thread", {"threads": 1}),
    ("sync, 2 threads", {"threads": 2}),
    ("async K=1", {"threads": 1, "rollout.mode": "async", "rollout.max_staleness": 1}),
    ("async K=2", {"threads": 1, "rollout.mode": "async", "rollout.max_staleness": 2}),
)
"""Each arm's overrides of the RL config (the first is the reference of the ratios)."""


def parse(argv: list[str] | None = None) -> Any:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--budget", type=float, default=60.0, help="seconds of GRPO per arm")
    p.add_argument("--sft-steps", type=int, default=150)
    p.add_argument("--eval-tasks", type=int, default=40)
    p.add_argument("--eval-samples", type=int, default=2)
    p.add_argument("--tasks-per-step", type=int, default=4)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--json", type=Path, help="also write the rows here")
    p.add_argument(
        "--arms", type=int, nargs="+", default=list(range(len(ARMS))),
        help="which arms to run, by index (0: sync at one thread, the ratios' reference)",
    )  # fmt: skip
    args = p.parse_args(argv)
    # what experiments.kit's tiny Clarify config reads
    args.env, args.max_turns, args.candidates, args.hidden, args.layers = "Clarify-v0", 4, 2, 128, 2
    args.sft_lr, args.rl_lr, args.threads = 5e-3, 5e-4, 1
    return args


def rl_arm(
    start: Path, suites: dict[str, Path], out: Path, args: Any, seed: int, over: dict[str, Any]
) -> dict[str, Any]:
    """GRPO from ``start`` for ``args.budget`` seconds; its throughput and held-out episodes."""
    from agentgym.train.trainer import Trainer
    from experiments import kit

    rl = {"algo.name": "grpo", "optim.lr": args.rl_lr, "algo.clip_high": 0.28, "steps": 10_000}
    trainer = Trainer(kit.demo_config(start, suites, out, args, seed=seed, **rl, **over))
    started = time.perf_counter()
    ends: list[float] = []

    def stop_at_budget(row: dict[str, float]) -> None:
        ends.append(time.perf_counter())
        if ends[-1] - started >= args.budget:
            trainer.cfg.steps = trainer.step  # the loop ends after this step

    trainer.runlog.on_log = stop_at_budget
    try:
        trainer.run()
        held_out = trainer.eval_episodes()
    finally:
        trainer.close()
    rows = trainer.history
    per_step = args.tasks_per_step * args.group_size
    steady = (len(ends) - 1) * per_step / (ends[-1] - ends[0]) * 3600 if len(ends) > 1 else 0.0
    return {
        "steps": len(rows),
        "wall_s": ends[-1] - started,
        "first_step_s": ends[0] - started,
        "episodes_per_h": steady,
        "episodes_per_h_budget": len(rows) * per_step / (ends[-1] - started) * 3600,
        "step_s": statistics.mean(r["step_s"] for r in rows[1:]) if len(rows) > 1 else 0.0,
        "generate_s": statistics.mean(r["generate_s"] for r in rows[1:]) if len(rows) > 1 else 0.0,
        "wait_s": statistics.mean(r.get("rollout_wait_s", 0.0) for r in rows[1:])
        if len(rows) > 1
        else 0.0,
        "dropped": statistics.mean(r.get("stale_dropped", 0.0) for r in rows),
        "spanning": statistics.mean(r.get("spanning_versions", 0.0) for r in rows),
        "per_task": per_task(held_out),
    }


def per_task(episodes: list[Any]) -> dict[str, float]:
    """Held-out success per task (mean over its samples)."""
    wins: dict[str, list[float]] = {}
    for ep in episodes:
        wins.setdefault(ep.episode.task_id, []).append(float(bool(ep.episode.success)))
    return {task: statistics.mean(v) for task, v in wins.items()}


def run_seed(seed: int, args: Any, root: Path, suites: dict[str, Path]) -> list[dict[str, Any]]:
    from agentgym.train.trainer import Trainer
    from experiments import kit

    model = kit.demo_model(root / f"model-{seed}", suites, args.hidden, args.layers, seed, args.env)
    sft = Trainer(
        kit.demo_config(
            model, suites, root / f"sft-{seed}", args, seed=seed, steps=args.sft_steps,
            **{"algo.name": "sft"},
        )
    )  # fmt: skip
    try:
        sft.run()
    finally:
        sft.close()
    start = root / f"sft-{seed}" / "final"
    rows = []
    for name, over in [ARMS[i] for i in args.arms]:
        arm = rl_arm(start, suites, root / f"rl-{seed}-{len(rows)}", args, seed, over)
        rows.append({"seed": seed, "arm": name, **arm})
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "per_task"}), flush=True)
    return rows


def paired(rows: list[dict[str, Any]], arm: str, reference: str) -> tuple[float, float, int]:
    """Mean per-task difference of held-out success (``arm`` minus ``reference``) over every
    seed's tasks, and its 95% half-width (normal approximation)."""
    diffs = []
    for seed in sorted({r["seed"] for r in rows}):
        a = next(r for r in rows if r["seed"] == seed and r["arm"] == arm)["per_task"]
        b = next(r for r in rows if r["seed"] == seed and r["arm"] == reference)["per_task"]
        diffs += [a[t] - b[t] for t in sorted(a.keys() & b.keys())]
    if len(diffs) < 2:
        return (diffs[0] if diffs else 0.0), float("nan"), len(diffs)
    half = 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs))
    return statistics.mean(diffs), half, len(diffs)


def table(rows: list[dict[str, Any]]) -> str:
    reference = ARMS[0][0]
    seeds = sorted({r["seed"] for r in rows})
    lines = [
        "| arm | episodes/h after step 1 (per seed) | ratio to sync 1 thread | first step s "
        "| episodes/h over the budget | steps | s / step (sampling; learner waiting) "
        "| dropped stale | spanning versions | held-out success "
        "| paired diff to sync 1 thread (95%) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(r["arm"] for r in rows):
        mine = [r for r in rows if r["arm"] == name]
        ref = [r for r in rows if r["arm"] == reference]
        ratios = [m["episodes_per_h"] / f["episodes_per_h"] for m, f in zip(mine, ref, strict=True)]
        success = statistics.mean(statistics.mean(r["per_task"].values()) for r in mine)
        diff, half, n = paired(rows, name, reference)
        per_hour = " / ".join(f"{r['episodes_per_h']:,.0f}" for r in mine)
        lines.append(
            f"| {name} | {per_hour} "
            f"| {statistics.mean(ratios):.2f}x ({' / '.join(f'{x:.2f}' for x in ratios)}) "
            f"| {statistics.mean(r['first_step_s'] for r in mine):.1f} "
            f"| {statistics.mean(r['episodes_per_h_budget'] for r in mine):,.0f} "
            f"| {' / '.join(str(r['steps']) for r in mine)} "
            f"| {statistics.mean(r['step_s'] for r in mine):.2f} "
            f"({statistics.mean(r['generate_s'] for r in mine):.2f}; "
            f"{statistics.mean(r['wait_s'] for r in mine):.2f}) "
            f"| {statistics.mean(r['dropped'] for r in mine):.1%} "
            f"| {statistics.mean(r['spanning'] for r in mine):.1%} | {success:.1%} "
            f"| {diff:+.3f} ± {half:.3f} (n={n}) |"
        )
    lines.append(f"\n{len(seeds)} seed(s): {', '.join(map(str, seeds))}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    args = parse(argv)
    from experiments import kit

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suites = kit.demo_tasks(root, args.candidates, args.max_turns)
        for seed in range(args.seeds):
            rows += run_seed(seed, args, root, suites)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()
