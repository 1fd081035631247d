"""TRL's GRPOTrainer (through ``agentgym.integrations.trl``) against agentgym's own GRPO on the same
env, tasks, steps and seeds: held-out success before and after training, and seconds per step.

    python -m experiments.trl_vs_ours --quick      # the tiny model, 1 step each: the plumbing
    python -m experiments.trl_vs_ours --model smollm2 --steps 10 --tasks 8 --heldout 50 --seeds 0 1

Both train the same model in float32 (LoRA on the attention projections for a checkpoint such
as smollm2; all weights for ``--quick``'s tiny model) on the first ``--tasks`` tasks of
``clarify/train``: each step ``--tasks-per-step`` tasks x ``--group`` episodes of at most
``--max-turns`` actions of ``--max-tokens`` tokens, sampled at temperature 1, group-normalised
GRPO advantages, token-level loss averaging (TRL's default ``dapo`` loss, our ``token-mean``),
the same learning rate, no KL. Held out: the first ``--heldout`` tasks of ``clarify/test``,
played by ``agentgym eval``'s ``hf:`` agent on the merged checkpoint (the same evaluation for
both), with a 95% Wilson interval. Seconds per step are wall time on this machine (shared: noisy).
``--arms trl`` (or ``agentgym``) runs one trainer only.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

ENV = "Clarify-v0"


def heldout(model_dir: Path, n: int, seed: int) -> tuple[float, float, float]:
    """Success of ``hf:model_dir`` on the first ``n`` held-out tasks, with its interval."""
    import agentgym
    from agentgym.metrics import wilson_interval
    from agentgym.task import TaskSuite

    tasks = TaskSuite.load("clarify/test").filter(limit=n)
    result = agentgym.evaluate(tasks, f"hf:{model_dir}", db=":memory:", seed=seed, concurrency=8)
    wins = sum(r["success"] for r in result.episode_rows())
    lo, hi = wilson_interval(wins, len(tasks))
    return wins / len(tasks), lo, hi


def train_ours(model: str, lora: bool, args: Any, seed: int, out: Path) -> tuple[Path, float]:
    from agentgym.train.config import TrainConfig
    from agentgym.train.trainer import Trainer

    cfg = TrainConfig.model_validate(
        {
            "model": {"path": model, **({"lora": {"r": 16, "alpha": 32}} if lora else {})},
            "env": {"id": ENV, "suite": "clarify/train", "limit": args.tasks},
            "algo": {"name": "grpo", "kl_coef": 0.0},
            "rollout": {
                "tasks_per_step": args.tasks_per_step,
                "group_size": args.group,
                "max_turns": args.max_turns,
                "max_tokens": args.max_tokens,
                "temperature": 1.0,
            },
            "optim": {"lr": args.lr, "micro_batch_size": args.tasks_per_step * args.group},
            "steps": args.steps,
            "seed": seed,
            "out_dir": str(out / "ours"),
            "threads": args.threads,
        }
    )
    trainer = Trainer(cfg)
    started = time.perf_counter()
    trainer.run()
    seconds = (time.perf_counter() - started) / args.steps
    return trainer.merged(out / "ours-merged"), seconds


def train_trl(model: str, lora: bool, args: Any, seed: int, out: Path) -> tuple[Path, float]:
    from peft import LoraConfig
    from transformers import AutoTokenizer
    from trl import GRPOConfig

    from agentgym.integrations.trl import grpo_trainer

    tokenizer = AutoTokenizer.from_pretrained(model)
    config = GRPOConfig(
        output_dir=str(out / "trl"),
        max_steps=args.steps,
        per_device_train_batch_size=args.tasks_per_step * args.group,
        num_generations=args.group,
        max_completion_length=args.max_turns * (args.max_tokens + 256),
        learning_rate=args.lr,
        beta=0.0,
        use_cpu=True,
        save_strategy="no",
        report_to=[],
        logging_steps=1,
        seed=seed,
        bf16=False,  # TRL's default on a CPU too; float32 as agentgym's trainer (and no emulated bf16)
    )
    peft = (
        LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
        if lora
        else None
    )
    trainer = grpo_trainer(
        model,
        ENV,
        config,
        suite="clarify/train",
        limit=args.tasks,
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        processing_class=tokenizer,
        peft_config=peft,
    )
    started = time.perf_counter()
    trainer.train()
    seconds = (time.perf_counter() - started) / args.steps
    merged = trainer.model.merge_and_unload() if lora else trainer.model
    merged.save_pretrained(out / "trl-merged")
    tokenizer.save_pretrained(out / "trl-merged")
    return out / "trl-merged", seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--quick", action="store_true", help="tiny model, 1 step, 4 tasks")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--tasks-per-step", type=int, default=2)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-turns", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--heldout", type=int, default=50)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--arms", nargs="+", choices=["agentgym", "trl"], default=["agentgym", "trl"],
                        help="which trainers to run (each row is independent of the other)")  # fmt: skip
    args = parser.parse_args()

    import torch
    from rich.console import Console
    from rich.table import Table

    from agentgym.llm.models import resolve_model_path

    torch.set_num_threads(args.threads)
    root = Path(tempfile.mkdtemp(prefix="trl-vs-ours-"))
    if args.quick:
        from agentgym.llm.tiny import TinyModelConfig, init_model

        model, lora = str(init_model(root / "tiny", TinyModelConfig())), False
        args.steps, args.tasks, args.heldout, args.lr = 1, 4, 4, 1e-3
    else:
        model, lora = resolve_model_path(args.model), True
    table = Table(title=f"GRPO on {ENV}: TRL vs agentgym ({args.steps} steps, seeds {args.seeds})")
    for col in ("trainer", "seed", "held-out before", "after", "s/step"):
        table.add_column(col, justify="left" if col == "trainer" else "right")
    for seed in args.seeds:
        before = heldout(Path(model), args.heldout, seed)
        print(f"seed {seed}: held-out before {_fmt(before)}", flush=True)
        arms = {"agentgym": ("agentgym", train_ours), "trl": ("TRL GRPOTrainer", train_trl)}
        for name, train in (arms[a] for a in args.arms):
            torch.manual_seed(seed)
            folder, seconds = train(model, lora, args, seed, root / f"{name.split()[0]}-{seed}")
            after = heldout(folder, args.heldout, seed)
            row = (name, str(seed), _fmt(before), _fmt(after), f"{seconds:.1f}")
            print(" | ".join(row), flush=True)  # a row survives a later arm's failure
            table.add_row(*row)
    Console().print(table)


def _fmt(rate: tuple[float, float, float]) -> str:
    return f"{rate[0]:.3f} [{rate[1]:.2f}, {rate[2]:.2f}]"


if __name__ == "__main__":
    main()
