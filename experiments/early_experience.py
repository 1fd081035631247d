"""Research methods on the trainer, at CPU scale with tiny models; writes docs/results.md.

**Early experience** (``early-experience``): IL vs IWM-then-IL vs SR+IL vs SR with shuffled
rationales, equal optimiser steps, few expert trajectories, held-out goals. ``--setting demo``
(the default) uses the trainer demo's narrowed Clarify tasks (``benchmarks/train_demo.py``), on
which a tiny model learns in minutes; each seed draws its expert tasks, branches K alternatives
per expert state, builds one tiny model (tokenizer fitted to the observations, next states and
rationales) and trains every arm from it through the trainer (``train_phases``); held-out
success is sampled at temperature 1, with the share of invalid actions and the held-out NLL of
the expert's actions. ``--setting suite`` uses an env's own splits (``--env``), the path for a
real model (the full Clarify suite is beyond a from-scratch tiny model: every arm scored 0).

    python benchmarks/methods.py early-experience --seeds 0 1 2

Real scale (a Hugging Face model, a GPU): ``--setting suite --model PATH --device cuda
--env Household-v0 --train-tasks 256 --k 3 --steps 500``; ``configs/methods/`` has the trainer
configs of every method (InfoPO and GRPO, KBQA-R1 SFT and GRPO) for ``agentgym train``.

**PA-MoE** (``pa-moe``): PA-MoE vs one LoRA policy vs the observation-only router on a 75/25
put/clean Household mix, see ``benchmarks/methods_pa_moe.py``.

    python benchmarks/methods.py pa-moe --seeds 0 1 2

**InfoPO vs GRPO** (``infopo``): per seed the trainer demo's tiny model
(``benchmarks/train_demo.py``) is fine-tuned only briefly, so that GRPO's first groups all fail,
then GRPO and GRPO with InfoPO credit train from that checkpoint with the same seed; training
success, ACR and held-out success are logged every few steps.

    python benchmarks/methods.py infopo --seeds 0 1 2

**KBQA-R1** (``kbqa-r1``): RRS vs plain rejection sampling yields, RRS-SFT then GRPO with
KBQA-R1's settings, held-out F1 on compositional and iid MetaQA questions, see
``benchmarks/methods_kbqa.py``.

    python benchmarks/methods.py kbqa-r1 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.util
import json
import math
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from agentgym.agents import early_experience as ee
from agentgym.metrics import wilson_interval
from agentgym.registry import make
from agentgym.task import TaskSuite

ARMS = ("IL", "IWM+IL", "SR+IL", "SR-shuffled+IL")
SUITES = {
    "Clarify-v0": ("clarify/train", "clarify/test"),
    "Household-v0": ("household/train", "household/valid_unseen"),
    "WebShop-v0": ("webshop/train", "webshop/test"),
}
DEMO = Path(__file__).resolve().parent / "train_demo.py"
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
        "max_new_tokens": 160,
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
        "max_new_tokens": 128,
        "eval_tasks": 30,
        "eval_samples": 1,
        "eval_temperature": 0.0,
    },
}
"""Per-setting defaults of the early-experience flags (an explicit flag overrides them)."""
EE_MARKER = "## Early experience (IWM, SR) vs imitation"
REAL_SCALE = (
    "python benchmarks/methods.py early-experience --setting suite --model PATH --device cuda "
    "--env Household-v0 --train-tasks 256 --k 3 --steps 500 --eval-tasks 200"
)


# ============================================================================ early experience
@functools.cache
def _sibling(name: str) -> Any:
    """``benchmarks/<name>.py`` as a module (benchmarks/ is not a package), loaded once."""
    spec = importlib.util.spec_from_file_location(name, DEMO.parent / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _train_demo() -> Any:
    return _sibling("train_demo")


def _kbqa() -> Any:
    """The KBQA-R1 experiment (benchmarks/methods_kbqa.py)."""
    return _sibling("methods_kbqa")


def _pa_moe() -> Any:
    """PA-MoE vs single policy vs observation-only router (benchmarks/methods_pa_moe.py)."""
    return _sibling("methods_pa_moe")


def _suites(args: argparse.Namespace, root: Path) -> dict[str, Path | str]:
    """Train and held-out suites: the demo's narrowed Clarify tasks, or the env's own splits."""
    if args.setting == "demo":
        return dict(_train_demo().demo_tasks(root, 2, args.max_turns))
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
    """The demo's tiny Llama (``train_demo.demo_model``) with its tokenizer fitted to the
    observations and to ``texts`` (next states, rationales), so IWM and SR targets are as cheap
    to write as the observations; one model per seed, shared by every arm."""
    demo = _train_demo()
    return demo.demo_model(
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
    """The trainer config of one arm: the demo's (``train_demo.config``) or the env's suites."""
    from agentgym.train.config import TrainConfig

    over = {
        "seed": seed,
        "algo.name": "sft",
        "model.device": args.device,
        "rollout.max_new_tokens": args.max_new_tokens,
        "sft.batch_size": args.batch_size,
        "sft.context_weight": args.context_weight,
        "optim.micro_batch_size": args.batch_size,
        "eval_temperature": args.eval_temperature,
    }
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
        return _train_demo().config(model, suites, out, demo_args, **over)
    return TrainConfig.model_validate(
        {
            "model": {"path": str(model), "device": args.device},
            "env": {
                "id": args.env,
                "suite": str(suites["train"]),
                "eval_suite": str(suites["test"]),
                "eval_limit": args.eval_tasks,
                "system_prompt": False,
            },
            "rollout": {"max_turns": args.max_turns, "max_new_tokens": args.max_new_tokens},
            "sft": {"batch_size": args.batch_size, "context_weight": args.context_weight},
            "optim": {"lr": args.lr},
            "eval_samples": args.eval_samples,
            "eval_temperature": args.eval_temperature,
            "seed": seed,
            "out_dir": str(out),
            "threads": args.threads,
        }
    )


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


def _settings(args: argparse.Namespace) -> str:
    if args.setting == "demo":
        where = (
            "the trainer demo's narrowed Clarify product tasks (`benchmarks/train_demo.py`: 2 "
            f"candidates renamed P1/P2, {args.max_turns} turns; held-out test products), "
            f"success on the first {args.eval_tasks} held-out tasks x {args.eval_samples} "
            f"samples at temperature {args.eval_temperature}"
        )
        model = (
            f"a tiny Llama (hidden {args.hidden}, {args.layers} layers) initialised per seed, "
            "its tokenizer fitted to the observations, next states and rationales"
        )
    else:
        where = (
            f"{args.env} (train {SUITES[args.env][0]}, held out {SUITES[args.env][1]}), success "
            f"on the first {args.eval_tasks} held-out tasks x {args.eval_samples} samples at "
            f"temperature {args.eval_temperature}"
        )
        model = args.model or f"a tiny Llama (hidden {args.hidden}) initialised per seed"
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
    cols = _columns(args)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(row) + " |" for row in _summary(args, results)]
    command = "python benchmarks/methods.py early-experience " + " ".join(args.argv)
    section = "\n".join(
        [
            EE_MARKER,
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
    replace_section(path, EE_MARKER, section)


def add_early_experience(sub: Any) -> None:
    """The ``early-experience`` subcommand; flags left unset take their setting's default."""
    p = sub.add_parser("early-experience", help="IL vs IWM+IL vs SR+IL vs SR-shuffled+IL")
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
        ("--max-new-tokens", int),
        ("--eval-tasks", int),
        ("--eval-samples", int),
        ("--eval-temperature", float),
    ):
        p.add_argument(flag, type=kind)
    p.add_argument("--model", default=None, help="a Hugging Face checkpoint instead of tiny")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--results", default="docs/results.md")


def early_experience_args(args: argparse.Namespace) -> argparse.Namespace:
    """Fill unset flags from the setting's defaults; the demo is Clarify only."""
    if args.setting == "demo" and args.env not in (None, "Clarify-v0"):
        raise ValueError(f"--setting demo runs on Clarify-v0 only, not {args.env}")
    for key, value in EE_DEFAULTS[args.setting].items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    return args


# ============================================================================ InfoPO vs GRPO
INFOPO_MARKER = "## InfoPO vs GRPO (Clarify)"
INFOPO_ARMS = ("GRPO", "InfoPO")
INFOPO_REAL_SCALE = (
    "`agentgym train configs/methods/grpo_clarify.yaml` vs "
    "`agentgym train configs/methods/infopo_clarify.yaml`, with `model.path` a Hugging Face "
    "chat model after SFT (e.g. Qwen2.5-1.5B-Instruct), `model.device: cuda`, "
    "`model.precision: bf16`, `rollout.tasks_per_step: 32`, `steps: 200`"
)


def _action_stats(episodes: list[Any]) -> dict[str, float]:
    """What a rollout batch did: share of valid actions, of valid questions, of episodes that
    ended with an answer (METHODS.md: with InfoPO "asking rises first")."""
    steps = [s for ep in episodes for s in ep.episode.steps]
    if not steps:
        return {"valid": 0.0, "asks": 0.0, "answered": 0.0}
    asks = [s.valid and s.action.strip().lower().startswith("ask[") for s in steps]
    ended = [bool(ep.episode.steps) and ep.episode.steps[-1].terminated for ep in episodes]
    return {
        "valid": float(np.mean([s.valid for s in steps])),
        "asks": float(np.mean(asks)),
        "answered": float(np.mean(ended)),
    }


def _infopo_trainer(cfg: Any) -> Any:
    """A Trainer whose per-step metrics also describe the sampled actions."""
    import agentgym.agents.infopo  # noqa: F401  (registers `infopo` before a trainer resolves it)
    from agentgym.train.trainer import Trainer

    class Described(Trainer):
        def rl_update(self, episodes: list[Any], stats: Any) -> dict[str, float]:
            metrics = super().rl_update(episodes, stats)
            return {**metrics, **_action_stats([e for e in episodes if e.ok])}

    return Described(cfg)


def _arm_overrides(args: argparse.Namespace, arm: str) -> dict[str, Any]:
    """The demo config's RL settings for one arm; the arms differ only in ``algo.credit``."""
    over: dict[str, Any] = {
        "algo.name": "grpo",
        "algo.clip_high": args.clip_high,
        "optim.lr": args.rl_lr,
        "steps": args.rl_steps,
        "eval_every": args.eval_every,
    }
    if arm == "InfoPO":
        over["algo.credit"] = "infopo"
        over["algo.options"] = {"beta": args.beta, "tau": args.tau}
    return over


def infopo_seed(
    demo: Any, args: argparse.Namespace, seed: int, root: Path, suites: dict[str, Path]
) -> dict[str, Any]:
    """One seed: the demo's tiny model, brief SFT, then GRPO and InfoPO from that checkpoint
    with the same seed (so their first rollout batch is the same episodes)."""
    model = demo.demo_model(
        root / f"model-{seed}", suites, args.hidden, args.layers, seed, args.env
    )
    sft_out = root / f"sft-{seed}"
    sft = _infopo_trainer(
        demo.config(
            model, suites, sft_out, args, seed=seed, steps=args.sft_steps, **{"algo.name": "sft"}
        )
    )
    sft.run()
    sft.close()
    out: dict[str, Any] = {"seed": seed}
    for arm in INFOPO_ARMS:
        cfg = demo.config(
            sft_out / "final",
            suites,
            root / f"{arm}-{seed}",
            args,
            seed=seed,
            **_arm_overrides(args, arm),
        )
        trainer = _infopo_trainer(cfg)
        if "start" not in out:  # both arms start from the same weights: evaluate them once
            out["start"] = trainer.evaluate()
        trainer.run()
        trainer.close()
        out[arm] = trainer.history
    return out


def _block(results: list[dict[str, Any]], arm: str, lo: int, hi: int, key: str) -> float:
    """Mean of ``key`` over steps ``lo..hi`` (1-based, inclusive) and every seed."""
    vals = [h[key] for r in results for h in r[arm] if lo <= h["step"] <= hi and key in h]
    return float(np.mean(vals)) if vals else float("nan")


def _heldout(results: list[dict[str, Any]], arm: str, step: int) -> tuple[int, int]:
    """Held-out (wins, episodes) pooled over seeds at ``step`` (0: the shared start)."""
    evals = [r["start"] if step == 0 else _at(r[arm], step) for r in results]
    wins = sum(round(e["eval_success"] * e["eval_n"]) for e in evals)
    return wins, sum(int(e["eval_n"]) for e in evals)


def _at(history: list[dict[str, float]], step: int) -> dict[str, float]:
    return next(h for h in history if h["step"] == step and "eval_success" in h)


def _wilson(wins: int, n: int) -> str:
    lo, hi = wilson_interval(wins, n)
    return f"{wins / n:.1%} [{lo:.1%}, {hi:.1%}]" if n else "-"


def infopo_rows(args: argparse.Namespace, results: list[dict[str, Any]]) -> list[list[str]]:
    """Success over training steps: per block of ``eval_every`` steps the training success and
    ACR (mean over steps and seeds), then held-out success at the block's end (pooled, Wilson)."""
    rows = [["0 (after SFT)", "both", "-", "-", "-", "-", _wilson(*_heldout(results, "GRPO", 0))]]
    for end in range(args.eval_every, args.rl_steps + 1, args.eval_every):
        lo = end - args.eval_every + 1
        label = f"{lo}-{end}" if lo < end else str(end)
        for arm in INFOPO_ARMS:
            stats = [_block(results, arm, lo, end, k) for k in ("success", "acr", "valid", "asks")]
            rows.append(
                [
                    label,
                    arm,
                    *(f"{v:.1%}" for v in stats),
                    _wilson(*_heldout(results, arm, end)),
                ]
            )
    return rows


INFOPO_COLUMNS = (
    "steps",
    "arm",
    "train success",
    "ACR",
    "valid actions",
    "valid asks",
    "held-out success [95% Wilson]",
)


def _per_seed(args: argparse.Namespace, results: list[dict[str, Any]]) -> list[list[str]]:
    """Per seed: the first batch (identical for both arms) and each arm's final held-out."""
    rows = []
    for r in results:
        first = r["GRPO"][0]
        finals = [_at(r[arm], args.rl_steps)["eval_success"] for arm in INFOPO_ARMS]
        rows.append(
            [
                str(r["seed"]),
                f"{first['success']:.1%}",
                f"{first['acr']:.1%}",
                f"{r['start']['eval_success']:.1%}",
                *(f"{v:.1%}" for v in finals),
            ]
        )
    return rows


def _print_table(console: Console, title: str, columns: Any, rows: list[list[str]]) -> None:
    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _markdown(columns: Any, rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _infopo_settings(args: argparse.Namespace) -> str:
    return (
        f"the trainer demo's narrowed Clarify product tasks (2 candidates, {args.max_turns} turns) "
        f"and tiny Llama (hidden {args.hidden}, {args.layers} layers, tokenizer fitted to the "
        f"tasks) built per seed; SFT on expert episodes for {args.sft_steps} steps (lr "
        f"{args.sft_lr}, context weight 1.0); then from that checkpoint GRPO and GRPO with InfoPO "
        f"credit (beta {args.beta}, tau {args.tau}) for {args.rl_steps} steps each, lr "
        f"{args.rl_lr}, clip-high {args.clip_high}, {args.tasks_per_step} tasks x group "
        f"{args.group_size} per step, 12 new tokens per action, sampling at T=1; held-out success "
        f"on the first {args.eval_tasks} test tasks x {args.eval_samples} samples at T=1 every "
        f"{args.eval_every} steps; seeds {' '.join(map(str, args.seeds))}; "
        f"{args.elapsed_s / 60:.0f} min on the shared 2-core CPU"
    )


def _infopo_finding(args: argparse.Namespace, results: list[dict[str, Any]]) -> str:
    """The run's outcome in one sentence, computed from the numbers above."""
    tied = sum(r["GRPO"][0]["acr"] == 1.0 for r in results)
    finals = {arm: _heldout(results, arm, args.rl_steps) for arm in INFOPO_ARMS}
    (gw, gn), (iw, i_n) = finals["GRPO"], finals["InfoPO"]
    return (
        f"First rollout batch: every group failed (ACR 100%) in {tied} of {len(results)} seeds. "
        f"Held-out success after {args.rl_steps} steps, pooled over seeds: GRPO "
        f"{_wilson(gw, gn)}, InfoPO {_wilson(iw, i_n)}; difference "
        f"{(iw / i_n if i_n else 0) - (gw / gn if gn else 0):+.1%}. Mean gradient norm on "
        f"steps where every group tied: {_tied_grad(results)}; InfoPO's mean information gain "
        f"per scored turn {_block(results, 'InfoPO', 1, args.rl_steps, 'infopo_ig'):.4f} nats."
    )


def _tied_grad(results: list[dict[str, Any]]) -> str:
    """Each arm's mean gradient norm over the steps whose groups all tied (ACR 100%)."""
    parts = []
    for arm in INFOPO_ARMS:
        norms = [h.get("grad_norm", 0.0) for r in results for h in r[arm] if h["acr"] == 1.0]
        parts.append(f"{arm} {np.mean(norms):.3f} ({len(norms)} steps)" if norms else f"{arm} -")
    return ", ".join(parts)


def infopo(args: argparse.Namespace) -> list[dict[str, Any]]:
    """InfoPO vs GRPO on Clarify from a briefly fine-tuned tiny model, every seed; the tables."""
    if args.eval_every < 1 or args.rl_steps % args.eval_every:
        raise ValueError(
            f"--eval-every {args.eval_every} must divide --rl-steps {args.rl_steps} "
            "(held-out success is measured at the end of every block of steps)"
        )
    demo, console = _train_demo(), Console()
    args.env = "Clarify-v0"  # the demo's config reads it
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suites = demo.demo_tasks(root, 2, args.max_turns)
        for seed in args.seeds:
            r = infopo_seed(demo, args, seed, root, suites)
            results.append(r)
            ends = [f"{arm} {r[arm][-1].get('eval_success', 0):.1%}" for arm in INFOPO_ARMS]
            console.print(
                f"seed {seed} done ({time.perf_counter() - started:.0f} s): first batch ACR "
                f"{r['GRPO'][0]['acr']:.0%}; held-out after SFT "
                f"{r['start']['eval_success']:.1%}, at the end {', '.join(ends)}"
            )
    args.elapsed_s = time.perf_counter() - started
    _print_table(
        console,
        "InfoPO vs GRPO on Clarify: success over steps",
        INFOPO_COLUMNS,
        infopo_rows(args, results),
    )
    _print_table(console, "Per seed", INFOPO_SEED_COLUMNS, _per_seed(args, results))
    console.print(_infopo_finding(args, results))
    if args.results:
        write_infopo_results(Path(args.results), args, results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return results


INFOPO_SEED_COLUMNS = (
    "seed",
    "first batch success",
    "first batch ACR",
    "held-out after SFT",
    "GRPO held-out (end)",
    "InfoPO held-out (end)",
)


def write_infopo_results(
    path: Path, args: argparse.Namespace, results: list[dict[str, Any]]
) -> None:
    """The InfoPO section of docs/results.md: a shared head, then one subsection per SFT length
    (a rerun replaces its own subsection, so runs from differently trained starts sit side by
    side)."""
    argv = list(args.argv)
    if "--json" in argv:  # a local dump, not part of the experiment
        del argv[argv.index("--json") : argv.index("--json") + 2]
    command = "python benchmarks/methods.py infopo " + " ".join(argv)
    marker = f"### After {args.sft_steps} SFT steps"
    sub = "\n".join(
        [
            marker,
            "",
            f"Settings: {_infopo_settings(args)}.",
            "",
            f"Command: `{command.strip()}`",
            "",
            *_markdown(INFOPO_COLUMNS, infopo_rows(args, results)),
            "",
            *_markdown(INFOPO_SEED_COLUMNS, _per_seed(args, results)),
            "",
            _infopo_finding(args, results),
            "",
        ]
    )
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    body = INFOPO_HEAD
    if INFOPO_MARKER in text:
        _, _, rest = text.partition(INFOPO_MARKER)
        body = INFOPO_MARKER + (rest[: rest.find("\n## ") + 1] if "\n## " in rest else rest)
    replace_section(path, INFOPO_MARKER, _put_subsection(body, marker, sub))


def _put_subsection(body: str, marker: str, sub: str) -> str:
    """``body`` with the subsection headed ``marker`` replaced by ``sub``, or ``sub`` appended."""
    if marker not in body:
        return body.rstrip("\n") + "\n\n" + sub
    before, _, rest = body.partition(marker)
    after = rest[rest.find("\n### ") + 1 :] if "\n### " in rest else ""
    return before + sub + ("\n" + after if after else "")


INFOPO_HEAD = "\n".join(
    [
        INFOPO_MARKER,
        "",
        "Per seed the trainer demo's tiny model is fine-tuned only briefly, so that GRPO's first "
        "groups (nearly) all fail, then GRPO and GRPO with InfoPO credit train from that same "
        "checkpoint with the same seed (their first rollout batch is the same episodes). Train "
        "success, ACR (advantage collapse rate: share of groups whose rewards all tie, where "
        "GRPO's gradient is zero), valid actions (share the env accepted) and valid asks (share "
        "that are valid questions) are means over the block's steps and the seeds; held-out "
        "success is at the block's last step, pooled over seeds with a 95% Wilson interval.",
        "",
        f"Real scale (a GPU): {INFOPO_REAL_SCALE}.",
        "",
    ]
)


def replace_section(path: Path, marker: str, section: str) -> None:
    """Put ``section`` (headed ``marker``) in place of that section of ``path``, or append it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if marker in text:
        before, _, rest = text.partition(marker)
        after = rest[rest.find("\n## ") :] if "\n## " in rest else ""
        text = before + section + after
    else:
        text = (text.rstrip() + "\n\n" if text else "") + section
    path.write_text(text, encoding="utf-8")


def add_infopo(sub: Any) -> None:
    """The ``infopo`` subcommand: InfoPO vs GRPO on the demo's Clarify tasks."""
    p = sub.add_parser("infopo", help="InfoPO vs GRPO on Clarify when early groups all fail")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument(
        "--sft-steps",
        type=int,
        default=12,
        help="brief SFT, so that the first GRPO groups all fail (12: every group of the first "
        "batch failed in seeds 0-2)",
    )
    p.add_argument("--sft-lr", type=float, default=5e-3)
    p.add_argument("--rl-steps", type=int, default=20)
    p.add_argument("--rl-lr", type=float, default=5e-4)
    p.add_argument("--clip-high", type=float, default=0.28)
    p.add_argument("--beta", type=float, default=0.5)
    p.add_argument("--tau", type=float, default=0.5)
    p.add_argument("--tasks-per-step", type=int, default=8)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-turns", type=int, default=4)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--eval-tasks", type=int, default=40)
    p.add_argument("--eval-samples", type=int, default=2)
    p.add_argument("--eval-every", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--results", default="docs/results.md")
    p.add_argument("--json", default=None, help="also write the per-step metrics here")


def main(argv: list[str] | None = None) -> None:
    import sys

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="experiment", required=True)
    add_early_experience(sub)
    add_infopo(sub)
    _kbqa().add_parser(sub)
    _pa_moe().add_parser(sub)
    args = parser.parse_args(argv)
    args.argv = (argv if argv is not None else sys.argv[1:])[1:]
    if args.experiment == "early-experience":
        early_experience(early_experience_args(args))
    elif args.experiment == "infopo":
        infopo(args)
    elif args.experiment == "kbqa-r1":
        results = _kbqa().run(args)
        if args.results:
            replace_section(
                Path(args.results), _kbqa().MARKER, _kbqa().section(args, results, _markdown)
            )
    elif args.experiment == "pa-moe":
        results = _pa_moe().run(args)
        if args.results:
            replace_section(
                Path(args.results), _pa_moe().MARKER, _pa_moe().section(args, results, _markdown)
            )


if __name__ == "__main__":
    main()
