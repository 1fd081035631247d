"""Early experience at CPU scale: IL vs IWM-then-IL vs SR+IL vs SR with shuffled rationales.

Equal optimiser steps, few expert trajectories, held-out goals. ``--setting demo`` (the default)
uses the trainer demo's narrowed Clarify tasks (:mod:`experiments.kit`), on which a tiny
model learns in minutes; each seed draws its expert tasks, branches K alternatives per expert
state, builds one tiny model (tokenizer fitted to the observations, next states and rationales)
and trains every arm from it through the trainer (``train_phases``); held-out success is sampled
at temperature 1, with the share of invalid actions and the held-out NLL of the expert's
actions. ``--setting suite`` uses an env's own splits (``--env``), the path for a real model.

    python -m experiments.early_experience --seeds 0 1 2

Real scale (a Hugging Face model, a GPU): ``--setting suite --model PATH --device cuda
--env Household-v0 --train-tasks 256 --k 3 --steps 500``. The method: docs/methods.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agentgym.agents import early_experience as ee
from agentgym.metrics import wilson_interval
from agentgym.registry import make
from agentgym.task import TaskSuite
from experiments import kit
from experiments.results import markdown_table, recorded, replace_section

ARMS = ("IL", "IWM+IL", "SR+IL", "SR-shuffled+IL")
SUITES = {
    "Clarify-v0": ("clarify/train", "clarify/test"),
    "Household-v0": ("household/train", "household/valid_unseen"),
    "WebShop-v0": ("webshop/train", "webshop/test"),
}
EE_DEFAULTS: dict[str, dict[str, Any]] = {
    "demo": {
        "env": "Clarify-v0",
        "train_tasks": 32,
        "k": 2,
        "steps": 120,
        "batch_size": 16,
        "lr": 5e-3,
        "context_weight": 1.0,
        "hidden": 128,
        "layers": 2,
        "max_turns": 4,
        "max_tokens": 160,
        "eval_tasks": 50,
        "eval_samples": 2,
        "eval_temperature": 1.0,
    },
    "suite": {
        "env": "Clarify-v0",
        "train_tasks": 16,
        "k": 3,
        "steps": 60,
        "batch_size": 8,
        "lr": 3e-3,
        "context_weight": 0.0,
        "hidden": 64,
        "layers": 2,
        "max_turns": 8,
        "max_tokens": 128,
        "eval_tasks": 30,
        "eval_samples": 1,
        "eval_temperature": 0.0,
    },
}
"""Per-setting defaults of the early-experience flags (an explicit flag overrides them)."""
EE_MARKER = "## Early experience (IWM, SR) vs imitation"
REAL_SCALE = (
    "python -m experiments.early_experience --setting suite --model PATH --device cuda "
    "--env Household-v0 --train-tasks 256 --k 3 --steps 500 --eval-tasks 200"
)


# ============================================================================ early experience
def _suites(args: argparse.Namespace, root: Path) -> dict[str, Path | str]:
    """Train and held-out suites: the demo's narrowed Clarify tasks, or the env's own splits."""
    if args.setting == "demo":
        return dict(kit.demo_tasks(root, 2, args.max_turns))
    train, test = SUITES[args.env]
    return {"train": train, "test": test}


def _rows(
    args: argparse.Namespace, seed: int, out: Path, suites: dict[str, Path | str]
) -> tuple[dict[str, list[tuple[str, int]]], list[str]]:
    """Every arm's phases at ``args.steps`` total optimiser steps, and every text trained on.

    The expert trajectories are ``args.train_tasks`` training tasks drawn per seed; each arm's
    rows are written to ``out`` as JSONL for :func:`ee.train_phases`.
    """
    env = make(args.env)
    train = TaskSuite.load(suites["train"]).tasks
    if args.train_tasks > len(train):
        raise ValueError(f"--train-tasks {args.train_tasks}: the suite has {len(train)} tasks")
    chosen = random.Random(f"early-experience:{seed}").sample(train, args.train_tasks)
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
    phases = {
        "IL": [(p["il"], args.steps)],
        "IWM+IL": [(p["iwm"], k), (p["il"], args.steps - k)],
        "SR+IL": [(p["sr"], args.steps)],
        "SR-shuffled+IL": [(p["shuffled"], args.steps)],
    }
    texts = [m["content"] for rows in files.values() for r in rows for m in r["messages"]]
    return phases, texts


def _demo_model(
    directory: Path,
    suites: dict[str, Path | str],
    texts: list[str],
    args: argparse.Namespace,
    seed: int,
) -> Path:
    """The demo's tiny Llama (``kit.demo_model``) with its tokenizer fitted to the
    observations and to ``texts`` (next states, rationales), so IWM and SR targets are as cheap
    to write as the observations; one model per seed, shared by every arm."""
    return kit.demo_model(
        directory, suites, args.hidden, args.layers, seed, args.env, extra_texts=texts
    )


def _model(
    args: argparse.Namespace,
    seed: int,
    root: Path,
    suites: dict[str, Path | str],
    texts: list[str],
) -> Path:
    if args.model:
        return Path(args.model)
    if args.setting == "demo":
        return _demo_model(root / "model", suites, texts, args, seed)
    from agentgym.llm.tiny import TinyModelConfig, init_model

    return init_model(
        root / "model",
        TinyModelConfig(
            vocab_size=1024,
            hidden_size=args.hidden,
            intermediate_size=2 * args.hidden,
            num_hidden_layers=args.layers,
            seed=seed,
        ),
    )


def _config(
    args: argparse.Namespace, model: Path, seed: int, out: Path, suites: dict[str, Path | str]
) -> Any:
    """The trainer config of one arm: the demo's (``kit.demo_config``) or the env's suites."""
    from agentgym.train.config import TrainConfig, set_dotted

    over = {
        "seed": seed,
        "algo.name": "sft",
        "model.device": args.device,
        "rollout.max_tokens": args.max_tokens,
        "sft.batch_size": args.batch_size,
        "sft.context_weight": args.context_weight,
        "optim.micro_batch_size": args.batch_size,
        "eval_temperature": args.eval_temperature,
    }
    real = (  # a pretrained model: LoRA on its top layers, as the real-model demo adapts
        {"model.lora": kit.lora_settings(args), "rollout.max_context_tokens": args.max_context}
        if args.model
        else {}
    )
    if args.setting == "demo":
        demo_args = argparse.Namespace(
            env=args.env,
            eval_tasks=args.eval_tasks,
            eval_samples=args.eval_samples,
            tasks_per_step=8,
            group_size=8,
            max_turns=args.max_turns,
            sft_lr=args.lr,
            threads=args.threads,
        )
        return kit.demo_config(model, suites, out, demo_args, **over, **real)
    data: dict[str, Any] = {
        "model": {"path": str(model), "device": args.device},
        "env": {
            "id": args.env,
            "suite": str(suites["train"]),
            "eval_suite": str(suites["test"]),
            "eval_limit": args.eval_tasks,
            "system_prompt": False,
        },
        "rollout": {"max_turns": args.max_turns, "max_tokens": args.max_tokens},
        "sft": {"batch_size": args.batch_size, "context_weight": args.context_weight},
        "optim": {"lr": args.lr},
        "eval_samples": args.eval_samples,
        "eval_temperature": args.eval_temperature,
        "seed": seed,
        "out_dir": str(out),
        "threads": args.threads,
    }
    for key, value in real.items():
        set_dotted(data, key, value)
    return TrainConfig.model_validate(data)


def _heldout_nll(trainer: Any) -> float:
    """Token-mean NLL of the expert's actions on the held-out tasks, each action right after
    its observation (teacher-forced, no thought before it)."""
    import torch

    from agentgym.train import sft
    from agentgym.train.batch import build_batch
    from agentgym.train.policy import token_logprobs

    cfg = trainer.cfg
    env = make(cfg.env.id, **cfg.env.kwargs)
    episodes = [
        sft.from_episode(trainer.chat, e, trainer.pool.system_prompt)
        for e in sft.expert_episodes(env, trainer.eval_tasks(), cfg.seed)
    ]
    batch = build_batch(episodes, None, "episode", "token-mean", trainer.tokenizer.pad_token_id)
    device, total = cfg.model.device, 0.0
    trainer.model.eval()
    with torch.no_grad():
        for mb in batch.micro_batches(16):
            mb = dataclasses.replace(
                mb, **{f.name: getattr(mb, f.name).to(device) for f in dataclasses.fields(mb)}
            )
            logp, _ = token_logprobs(trainer.model, mb)
            total += float(-(logp * mb.weights).sum())
    return total


def _rollout_metrics(trainer: Any) -> dict[str, float]:
    """``Trainer.evaluate``'s held-out episodes (same jobs and seeds), read for more than success:
    the wins and the share of actions the env rejected (a policy that cannot write an action)."""
    ok = [ep.episode for ep in trainer.eval_episodes() if ep.ok]
    steps = [s for ep in ok for s in ep.steps]
    wins = sum(ep.success for ep in ok)
    return {
        "eval_success": wins / len(ok) if ok else 0.0,
        "eval_n": float(len(ok)),
        "wins": float(wins),
        "invalid": sum(not s.valid for s in steps) / len(steps) if steps else 0.0,
    }


def _evaluate(cfg: Any, final: Path) -> dict[str, float]:
    """Held-out success (``eval_samples`` per task), invalid actions, the expert-action NLL."""
    from agentgym.train.trainer import Trainer

    done = cfg.model_copy(deep=True)
    done.model.path, done.steps, done.out_dir = str(final), 0, str(final.parent / "eval")
    trainer = Trainer(done)
    try:
        return {**_rollout_metrics(trainer), "nll": _heldout_nll(trainer)}
    finally:
        trainer.close()


def run_seed(args: argparse.Namespace, seed: int, root: Path) -> dict[str, dict[str, float]]:
    """Every arm of one seed after ``args.steps`` optimiser steps, all from the same model."""
    suites = _suites(args, root)
    phases, texts = _rows(args, seed, root, suites)
    model = _model(args, seed, root, suites, texts)
    out: dict[str, dict[str, float]] = {}
    for arm in ARMS:
        cfg = _config(args, Path(model), seed, root / arm, suites)
        started = time.perf_counter()
        final = ee.train_phases(cfg, phases[arm])
        trained = time.perf_counter()
        out[arm] = _evaluate(cfg, final)
        out[arm]["train_s"] = trained - started
        out[arm]["eval_s"] = time.perf_counter() - trained
    return out


def _pooled(results: list[dict[str, dict[str, float]]], arm: str) -> tuple[int, int]:
    return (
        int(sum(r[arm]["wins"] for r in results)),
        int(sum(r[arm]["eval_n"] for r in results)),
    )


def _summary(
    args: argparse.Namespace, results: list[dict[str, dict[str, float]]]
) -> list[list[str]]:
    """One row per arm: per-seed success, pooled success, its Wilson interval, the pooled
    difference to IL and the mean held-out NLL of the expert's actions."""
    il_wins, il_n = _pooled(results, "IL")
    rows = []
    for arm in ARMS:
        wins, n = _pooled(results, arm)
        lo, hi = wilson_interval(wins, n)
        diff = wins / n - il_wins / il_n if n and il_n else 0.0
        nll = statistics.mean(r[arm]["nll"] for r in results)
        invalid = statistics.mean(r[arm]["invalid"] for r in results)
        rows.append(
            [
                arm,
                *(f"{r[arm]['eval_success']:.3f}" for r in results),
                f"{wins / n:.3f} ({wins}/{n})" if n else "-",
                f"[{lo:.3f}, {hi:.3f}]",
                f"{diff:+.3f}",
                f"{invalid:.1%}",
                f"{nll:.3f}",
            ]
        )
    return rows


def _columns(args: argparse.Namespace) -> list[str]:
    return [
        "arm",
        *(f"seed {s}" for s in args.seeds),
        "pooled",
        "95% Wilson",
        "vs IL",
        "invalid actions",
        "expert-action NLL",
    ]


def early_experience(args: argparse.Namespace) -> list[dict[str, dict[str, float]]]:
    console = Console()
    results = []
    started = time.perf_counter()
    for seed in args.seeds:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            results.append(run_seed(args, seed, Path(tmp)))
        for arm, m in results[-1].items():
            console.print(
                f"seed {seed} {arm}: success {m['eval_success']:.3f}, invalid {m['invalid']:.1%}, "
                f"NLL {m['nll']:.3f}; train {m['train_s']:.0f} s, eval {m['eval_s']:.0f} s"
            )
        console.print(f"seed {seed}: {time.perf_counter() - t0:.0f} s")
    args.elapsed_s = time.perf_counter() - started
    table = Table(title=f"Early experience ({args.setting}, {args.env}): held-out success")
    for col in _columns(args):
        table.add_column(col, justify="left" if col == "arm" else "right")
    for row in _summary(args, results):
        table.add_row(*row)
    console.print(table)
    if args.results:
        write_results(Path(args.results), args, results)
    return results


def ee_marker(args: argparse.Namespace) -> str:
    """The section's heading: the tiny model's, or its own per pretrained ``--model``."""
    return f"{EE_MARKER} ({args.model})" if args.model else EE_MARKER


def _settings(args: argparse.Namespace) -> str:
    if args.setting == "demo":
        where = (
            "the trainer demo's narrowed Clarify product tasks (`experiments/train_demo.py`: 2 "
            f"candidates renamed P1/P2, {args.max_turns} turns; held-out test products), "
            f"success on the first {args.eval_tasks} held-out tasks x {args.eval_samples} "
            f"samples at temperature {args.eval_temperature}"
        )
        model = (
            f"a tiny Llama (hidden {args.hidden}, {args.layers} layers) initialised per seed, "
            "its tokenizer fitted to the observations, next states and rationales"
        )
        if args.model:
            model = kit.pretrained_words(args)
    else:
        where = (
            f"{args.env} (train {SUITES[args.env][0]}, held out {SUITES[args.env][1]}), success "
            f"on the first {args.eval_tasks} held-out tasks x {args.eval_samples} samples at "
            f"temperature {args.eval_temperature}"
        )
        model = (
            kit.pretrained_words(args)
            if args.model
            else f"a tiny Llama (hidden {args.hidden}) per seed"
        )
    return (
        f"{where}; {args.train_tasks} expert trajectories per seed, K={args.k} alternatives "
        f"per expert state (template reflector for SR); every arm {args.steps} optimiser steps "
        f"(batch {args.batch_size}, lr {args.lr}, context weight {args.context_weight}); "
        f"{model}; seeds {' '.join(map(str, args.seeds))}; "
        f"{args.elapsed_s / 60:.0f} min on the shared 2-core CPU"
    )


def write_results(
    path: Path, args: argparse.Namespace, results: list[dict[str, dict[str, float]]]
) -> None:
    """The early-experience section of docs/results.md (replaced on every run)."""
    lines = markdown_table(_columns(args), _summary(args, results))
    command = "python -m experiments.early_experience " + " ".join(recorded(args.argv))
    section = "\n".join(
        [
            ee_marker(args),
            "",
            f"Settings: {_settings(args)}.",
            "",
            f"Command: `{command}`",
            "",
            *lines,
            "",
            "Pooled = wins over all seeds' held-out episodes; vs IL = pooled difference. "
            "Invalid actions = share of held-out actions the env rejected (malformed, or an "
            "attribute the task does not have), mean over seeds. Expert-action NLL = token-mean NLL of the expert's actions on the held-out tasks, "
            "each teacher-forced right after its observation (mean over seeds; the SR arms "
            "learn to write a thought first, so theirs is not comparable with IL's).",
            "",
            f"Real scale (a Hugging Face chat model on a GPU): `{REAL_SCALE}`.",
            "",
        ]
    )
    replace_section(path, ee_marker(args), section)


def parser() -> argparse.ArgumentParser:
    """The experiment's flags; those left unset take their setting's default."""
    p = argparse.ArgumentParser(description="IL vs IWM+IL vs SR+IL vs SR-shuffled+IL")
    p.add_argument(
        "--setting",
        default="demo",
        choices=sorted(EE_DEFAULTS),
        help="demo: the trainer demo's narrowed Clarify tasks and fitted tiny model (learns on "
        "a CPU); suite: the env's own train/held-out splits (real scale with --model)",
    )
    p.add_argument("--env", choices=sorted(SUITES), help="suite setting only (demo: Clarify-v0)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    for flag, kind in (
        ("--train-tasks", int),
        ("--k", int),
        ("--steps", int),
        ("--batch-size", int),
        ("--lr", float),
        ("--context-weight", float),
        ("--hidden", int),
        ("--layers", int),
        ("--max-turns", int),
        ("--max-tokens", int),
        ("--eval-tasks", int),
        ("--eval-samples", int),
        ("--eval-temperature", float),
    ):
        p.add_argument(flag, type=kind)
    kit.add_pretrained_flags(p, max_context=768, batches=False)  # its own --batch-size
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--results", default="docs/results.md")
    return p


def early_experience_args(args: argparse.Namespace) -> argparse.Namespace:
    """Fill unset flags from the setting's defaults; the demo is Clarify only."""
    if args.setting == "demo" and args.env not in (None, "Clarify-v0"):
        raise ValueError(f"--setting demo runs on Clarify-v0 only, not {args.env}")
    for key, value in EE_DEFAULTS[args.setting].items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    return args


def main(argv: list[str] | None = None) -> list[dict[str, dict[str, float]]]:
    args = parser().parse_args(argv)
    args.argv = argv if argv is not None else sys.argv[1:]
    return early_experience(early_experience_args(args))


if __name__ == "__main__":
    main()
