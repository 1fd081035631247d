"""float32 against bfloat16 in the local engine, on the prompts a Household eval really sends.

``python benchmarks/precision.py [--model experiments/checkpoints/household-notes-decisions]``
builds the bounded prompts (history 2, household notes) of the searcher's episodes on the first
``--tasks`` valid_unseen tasks, then times one greedy turn for all of them (``--new`` tokens
each, ``--batch`` at a time, prefix cache off: every prompt token is computed) in each precision
of :class:`~agentgym.llm.engine.LocalEngine`. It prints one table: seconds, prompt tokens per
second, the speed ratio against float32 measured in the same run, and how many greedy completions
are the same text as float32's (an eval in bfloat16 plays other episodes where they differ).

``--trainer`` times the trainer's precision instead (``model.precision``: float32 weights, bf16
autocast or none): one rollout turn through ``load_engine`` over the trainable LoRA
model, as the trainer's rollouts run it, and one forward and backward over ``--rows`` of the
prompts, ``--micro-batch`` at a time, as its update runs. The arms alternate ``--repeat`` times,
so a load that drifts during the run reaches both.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's agentgym, not an installed copy elsewhere


def household_prompts(tasks: int) -> list[str]:
    """The user message of every step of the searcher's episodes on the first ``tasks``
    valid_unseen tasks, as ``hf:CKPT?history=2&notes=household`` shows them."""
    from agentgym.agents.context import play_rows
    from agentgym.envs.household.env import HouseholdEnv
    from agentgym.envs.household.searcher import SearchAgent
    from agentgym.task import TaskSuite

    users = []
    for task in list(TaskSuite.load("household/valid_unseen"))[:tasks]:
        rows, _ = play_rows(HouseholdEnv(), SearchAgent(), task, history=2, notes="household")
        users += [r["messages"][0]["content"] for r in rows]
    return users


def one_turn(engine: Any, users: list[str], new: int, batch: int) -> tuple[float, int, list[str]]:
    """(seconds, prompt tokens, greedy texts) of one turn for every prompt, ``batch`` at a time."""
    from agentgym.llm.engine import SamplingSpec

    prompts = [engine.render([{"role": "user", "content": u}], None) for u in users]
    engine.generate_batch(prompts[:1], SamplingSpec(max_tokens=2))  # warm
    texts: list[str] = []
    start = time.perf_counter()
    for i in range(0, len(prompts), batch):
        texts += [
            g.text
            for g in engine.generate_batch(prompts[i : i + batch], SamplingSpec(max_tokens=new))
        ]
    return time.perf_counter() - start, sum(map(len, prompts)), texts


def trainer_arms(args: argparse.Namespace, users: list[str]) -> Table:
    """Rollout turn and update seconds of the trainer's model in fp32 and in bf16 autocast."""
    import contextlib

    import torch

    from agentgym.llm.engine import load_engine
    from agentgym.train.policy import LoraConfig, load_model, load_tokenizer

    model = load_model(args.model, "cpu", LoraConfig(r=16, alpha=32))  # adapters keep training
    engine = load_engine("local", model, args.batch, tokenizer=load_tokenizer(args.model))
    ids = [engine.render([{"role": "user", "content": u}], None) for u in users[: args.rows]]
    width = max(map(len, ids))
    rows = torch.tensor([i + [0] * (width - len(i)) for i in ids])
    arms = {
        "fp32": contextlib.nullcontext,
        "bf16 autocast": lambda: torch.autocast("cpu", dtype=torch.bfloat16),
    }
    seen: dict[str, list[tuple[float, float, list[str]]]] = {name: [] for name in arms}
    for _ in range(args.repeat):
        for name, precision in arms.items():
            model.eval()
            with torch.no_grad(), precision():
                turn, _, texts = one_turn(engine, users, args.new, args.batch)
            model.train()
            start = time.perf_counter()
            for i in range(0, len(rows), args.micro_batch):
                with precision():
                    logits = model(input_ids=rows[i : i + args.micro_batch]).logits
                logits.float().log_softmax(-1).mean().backward()
            model.zero_grad(set_to_none=True)
            seen[name].append((turn, time.perf_counter() - start, texts))
            print(f"{name}: turn {turn:.1f} s, update {seen[name][-1][1]:.1f} s, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    table = Table(title=f"the trainer's precision: one rollout turn for {len(users)} prompts, "
                  f"forward+backward of {len(rows)} rows x {width} tokens, {args.threads} threads,"
                  f" best of {args.repeat}")  # fmt: skip
    for column in ("precision", "rollout turn s", "speed", "update s", "speed", "same text"):
        table.add_column(column, justify="right")
    base = seen["fp32"]
    for name, runs in seen.items():
        turn, update = min(r[0] for r in runs), min(r[1] for r in runs)
        same = sum(a == b for a, b in zip(runs[0][2], base[0][2], strict=True))
        table.add_row(name, f"{turn:.1f}", f"{min(r[0] for r in base) / turn:.2f}x",
                      f"{update:.1f}", f"{min(r[1] for r in base) / update:.2f}x",
                      f"{same}/{len(users)}")  # fmt: skip
    return table


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model", default="smollm2", help="a known model or a checkpoint folder")
    p.add_argument("--tasks", type=int, default=4, help="valid_unseen tasks whose steps prompt")
    p.add_argument("--new", type=int, default=12, help="greedy tokens per prompt")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--trainer", action="store_true", help="time the trainer's fp32 vs autocast")
    p.add_argument("--rows", type=int, default=8, help="--trainer: rows of the update")
    p.add_argument("--micro-batch", type=int, default=4, help="--trainer: rows per forward")
    p.add_argument("--repeat", type=int, default=2, help="--trainer: rounds of both arms")
    args = p.parse_args()
    import torch

    from agentgym.llm.engine import DTYPES, LocalEngine, native_bf16

    torch.set_num_threads(args.threads)
    print(f"native bf16 on this CPU: {native_bf16()} ({torch.backends.cpu.get_cpu_capability()})")
    users = household_prompts(args.tasks)
    if args.trainer:
        Console().print(trainer_arms(args, users))
        return
    table = Table(title=f"one greedy turn for {len(users)} Household prompts, {args.model}, "
                  f"{args.threads} threads, batch {args.batch}, {args.new} new tokens")  # fmt: skip
    for column in ("dtype", "seconds", "prompt tok/s", "speed vs float32", "same text as float32"):
        table.add_column(column, justify="right")
    base: tuple[float, list[str]] | None = None
    for dtype in DTYPES:
        engine = LocalEngine(args.model, max_batch_size=args.batch, prefix_cache_mb=0, dtype=dtype)
        seconds, tokens, texts = one_turn(engine, users, args.new, args.batch)
        engine.close()
        base = base or (seconds, texts)
        same = sum(a == b for a, b in zip(texts, base[1], strict=True))
        print(f"{dtype}: {seconds:.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)
        table.add_row(dtype, f"{seconds:.1f}", f"{tokens / seconds:.0f}",
                      f"{base[0] / seconds:.2f}x", f"{same}/{len(texts)}")  # fmt: skip
    Console().print(table)


if __name__ == "__main__":
    main()
