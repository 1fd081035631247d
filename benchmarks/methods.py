"""Research methods on the trainer, at CPU scale with tiny models; writes docs/results.md.

Runs only what this machine can run in minutes: **early experience** (IL vs IWM-then-IL vs SR vs
SR with shuffled rationales, equal optimiser steps, few expert trajectories, held-out goals).
Each seed builds its own tiny model (``agentgym.llm.tiny``, seeded init), collects its own expert
trajectories and branches, trains every arm through the trainer (``train_phases``) and evaluates
greedy success on held-out tasks plus the held-out NLL of the expert's actions.

    python benchmarks/methods.py early-experience --seeds 0 1 2

Real scale (a Hugging Face model, a GPU): the same code with ``--model PATH --device cuda
--train-tasks 256 --steps 500 --env Household-v0``; ``configs/methods/`` has the trainer
configs of every method (InfoPO and GRPO, KBQA-R1 SFT and GRPO) for ``agentgym train``.
Not run here: InfoPO vs GRPO, PA-MoE and KBQA-R1 GRPO need many RL steps to move a model from
scratch, far beyond a shared 2-core CPU; see docs/results.md.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agentgym.agents import early_experience as ee
from agentgym.registry import make
from agentgym.task import TaskSuite

ARMS = ("IL", "IWM+IL", "SR+IL", "SR-shuffled+IL")
SUITES = {
    "Clarify-v0": ("clarify/train", "clarify/test"),
    "Household-v0": ("household/train", "household/valid_unseen"),
    "WebShop-v0": ("webshop/train", "webshop/test"),
}


def _rows(args: argparse.Namespace, seed: int, out: Path) -> dict[str, list[tuple[str, int]]]:
    """Write every arm's JSONL and return its phases at ``args.steps`` total optimiser steps."""
    env = make(args.env)
    train = TaskSuite.load(SUITES[args.env][0]).tasks
    chosen = [train[(seed * 997 + 31 * i) % len(train)] for i in range(args.train_tasks)]
    trajs = ee.collect(env, chosen, k=args.k, seed=seed)
    il = ee.imitation_rows(trajs)
    sr = ee.sr_rows(trajs, ee.template_reflector())
    files = {
        "il": il,
        "iwm": ee.iwm_rows(trajs),
        "sr": sr + il,
        "shuffled": ee.shuffle_rationales(sr, seed) + il,
    }
    for name, rows in files.items():
        ee.write_rows(rows, out / f"{name}.jsonl")
    epoch = math.ceil(len(files["iwm"]) / args.batch_size)
    k = min(epoch, args.steps // 2)  # about one IWM epoch, never more than half the budget
    p = {name: str(out / f"{name}.jsonl") for name in files}
    return {
        "IL": [(p["il"], args.steps)],
        "IWM+IL": [(p["iwm"], k), (p["il"], args.steps - k)],
        "SR+IL": [(p["sr"], args.steps)],
        "SR-shuffled+IL": [(p["shuffled"], args.steps)],
    }


def _config(args: argparse.Namespace, model: Path, seed: int, out: Path) -> Any:
    from agentgym.train.config import TrainConfig

    return TrainConfig.model_validate(
        {
            "model": {"path": str(model), "device": args.device},
            "env": {
                "id": args.env,
                "suite": SUITES[args.env][0],
                "eval_suite": SUITES[args.env][1],
                "eval_limit": args.eval_tasks,
                "system_prompt": False,
            },
            "rollout": {"max_turns": args.max_turns, "max_new_tokens": args.max_new_tokens},
            "sft": {"batch_size": args.batch_size, "context_weight": args.context_weight},
            "optim": {"lr": args.lr},
            "seed": seed,
            "out_dir": str(out),
            "threads": args.threads,
        }
    )


def _evaluate(cfg: Any, final: Path) -> float:
    from agentgym.train.trainer import Trainer

    done = cfg.model_copy(deep=True)
    done.model.path, done.steps, done.out_dir = str(final), 0, str(final.parent / "eval")
    trainer = Trainer(done)
    try:
        return float(trainer.evaluate()["eval_success"])
    finally:
        trainer.close()


def run_seed(args: argparse.Namespace, seed: int, root: Path) -> dict[str, float]:
    """Every arm of one seed: held-out success after ``args.steps`` optimiser steps."""
    from agentgym.llm.tiny import TinyModelConfig, init_model

    model = args.model or init_model(
        root / "model",
        TinyModelConfig(
            vocab_size=1024, hidden_size=args.hidden, intermediate_size=2 * args.hidden, seed=seed
        ),
    )
    phases = _rows(args, seed, root)
    out: dict[str, float] = {}
    for arm in ARMS:
        cfg = _config(args, Path(model), seed, root / arm)
        final = ee.train_phases(cfg, phases[arm])
        out[arm] = _evaluate(cfg, final)
    return out


def early_experience(args: argparse.Namespace) -> list[dict[str, float]]:
    console = Console()
    results = []
    for seed in args.seeds:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            results.append(run_seed(args, seed, Path(tmp)))
        console.print(f"seed {seed}: {results[-1]} ({time.perf_counter() - started:.0f} s)")
    table = Table(title=f"Early experience on {args.env} (held-out success, {args.steps} steps)")
    table.add_column("arm")
    for seed in args.seeds:
        table.add_column(f"seed {seed}", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("vs IL", justify="right")
    il = statistics.mean(r["IL"] for r in results)
    for arm in ARMS:
        vals = [r[arm] for r in results]
        mean = statistics.mean(vals)
        table.add_row(arm, *(f"{v:.3f}" for v in vals), f"{mean:.3f}", f"{mean - il:+.3f}")
    console.print(table)
    if args.results:
        write_results(Path(args.results), args, results)
    return results


def write_results(path: Path, args: argparse.Namespace, results: list[dict[str, float]]) -> None:
    """The early-experience section of docs/results.md (replaced on every run)."""
    head = "| arm | " + " | ".join(f"seed {s}" for s in args.seeds) + " | mean |"
    lines = [head, "|" + "---|" * (len(args.seeds) + 2)]
    for arm in ARMS:
        vals = [r[arm] for r in results]
        lines.append(
            f"| {arm} | "
            + " | ".join(f"{v:.3f}" for v in vals)
            + f" | {statistics.mean(vals):.3f} |"
        )
    settings = (
        f"env {args.env}, {args.train_tasks} expert trajectories, K={args.k} branches per state, "
        f"{args.steps} optimiser steps per arm (batch {args.batch_size}, lr {args.lr}), "
        f"held-out success on the first {args.eval_tasks} tasks of {SUITES[args.env][1]} "
        f"(greedy), tiny Llama hidden {args.hidden} initialised per seed"
    )
    command = "python benchmarks/methods.py early-experience " + " ".join(args.argv)
    section = "\n".join(
        [
            "## Early experience (IWM, SR) vs imitation",
            "",
            f"Settings: {settings}. Command: `{command}`.",
            "",
            *lines,
            "",
        ]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    marker = "## Early experience (IWM, SR) vs imitation"
    if marker in text:
        before, _, rest = text.partition(marker)
        after = rest[rest.find("\n## ") :] if "\n## " in rest else ""
        text = before + section + after
    else:
        text = (text.rstrip() + "\n\n" if text else "") + section
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    import sys

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="experiment", required=True)
    p = sub.add_parser("early-experience")
    p.add_argument("--env", default="Clarify-v0", choices=sorted(SUITES))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--train-tasks", type=int, default=16)
    p.add_argument("--eval-tasks", type=int, default=30)
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--context-weight", type=float, default=0.0)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--max-turns", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--model", default=None, help="a Hugging Face checkpoint instead of tiny")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--results", default="docs/results.md")
    args = parser.parse_args(argv)
    args.argv = (argv if argv is not None else sys.argv[1:])[1:]
    early_experience(args)


if __name__ == "__main__":
    main()
