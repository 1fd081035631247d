"""Where one GRPO step's time goes with a real model on this CPU: prefill, generation, the
environment, the reference/old-policy passes and the forward/backward of the update.

    python benchmarks/profile_step.py                       # SmolLM2 + LoRA on KBQA-v0
    python benchmarks/profile_step.py --baseline            # without this issue's optimisations

Each rollout turn's prefill is measured by running the same left-padded prompts through the model
once more (no grad) just before the engine's ``generate``; generation is the rest of the
``generate`` call. The update is timed as a whole (``Trainer.update``: forward, backward,
optimiser). ``--baseline`` switches off what this issue added (skipping rows with zero gradient,
length-sorted micro-batches, loss-position-only logits) so both figures come from one script.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from agentgym.train.config import TrainConfig
from agentgym.train.rollout import Job, derive_seed
from agentgym.train.trainer import Trainer


class TimedEngine:
    """The trainer's engine with every ``generate_batch`` split into prefill and the rest."""

    def __init__(self, engine: Any) -> None:
        self.engine, self.prefill_s, self.generate_s = engine, 0.0, 0.0
        self.prefill_tokens, self.calls = 0, 0

    def generate_batch(self, prompts: list[list[int]], *args: Any, **kwargs: Any) -> Any:
        model, pad = self.engine.model, self.engine.tokenizer.pad_token_id
        width = max(map(len, prompts))
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        t0 = time.perf_counter()
        with torch.inference_mode():
            model(input_ids=ids, attention_mask=mask, logits_to_keep=1)
        t1 = time.perf_counter()
        out = self.engine.generate_batch(prompts, *args, **kwargs)
        t2 = time.perf_counter()
        self.prefill_s += t1 - t0
        self.generate_s += max(0.0, (t2 - t1) - (t1 - t0))
        self.prefill_tokens += sum(map(len, prompts))
        self.calls += 1
        return out


def kbqa_suite(root: Path, n: int, max_shown: int) -> Path:
    """``n`` training questions of ``kbqa/comp-train`` (results narrowed to ``max_shown``)."""
    from agentgym.task import TaskSuite, write_tasks

    tasks = [
        t.model_copy(update={"config": {**t.config, "max_shown": max_shown}})
        for t in TaskSuite.load("kbqa/comp-train").tasks[::50][:n]
    ]
    path = root / "train.jsonl"
    write_tasks(path, tasks)
    return path


def config(args: argparse.Namespace, suite: Path, out: Path) -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "model": {
                "path": args.model,
                "lora": {"r": args.lora_r, "alpha": 2 * args.lora_r},
                "gradient_checkpointing": args.gradient_checkpointing,
            },
            "env": {
                "id": "KBQA-v0",
                "suite": str(suite),
                "kwargs": {"handles": True},
                "system_prompt": args.system_prompt,
            },
            "rollout": {
                "tasks_per_step": args.tasks,
                "group_size": args.group,
                "max_turns": args.max_turns,
                "max_tokens": args.max_tokens,
                "max_context_tokens": args.max_context,
            },
            "algo": {"name": "grpo", "kl_coef": args.kl, "clip_high": 0.28,
                     "skip_zero_advantage": not (args.baseline or args.keep_tied),
                     "loss_logits_only": not args.baseline},
            "optim": {"lr": 1e-5, "micro_batch_size": args.micro_batch,
                      "sort_by_length": not args.baseline},
            "steps": 1,
            "out_dir": str(out),
            "resume": False,
            "threads": args.threads,
        }
    )  # fmt: skip


def profile(args: argparse.Namespace) -> dict[str, float]:
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        trainer = Trainer(config(args, kbqa_suite(root, args.tasks, args.max_shown), root / "o"))
        timed = TimedEngine(trainer.engine)
        trainer._engine = timed
        tasks = trainer.train_tasks()
        jobs = [
            Job(t, f"0:{t.id}", k, derive_seed(0, t.id, k))
            for t in tasks
            for k in range(args.group)
        ]
        t0 = time.perf_counter()
        episodes, stats = trainer.rollout(jobs, derive_seed(0, "gen"), 1.0)
        t1 = time.perf_counter()
        metrics = trainer.rl_update(episodes, stats)
        t2 = time.perf_counter()
        trainer.close()
    rows = [ep for ep in episodes if ep.ok]
    return {
        "rollout_s": t1 - t0,
        "prefill_s": timed.prefill_s,
        "generation_s": timed.generate_s,
        "env_s": stats.env_s,
        "update_s": t2 - t1,
        "step_s": t2 - t0,
        "episodes": len(episodes),
        "generation_calls": timed.calls,
        "prefill_tokens": timed.prefill_tokens,
        "generated_tokens": stats.generated_tokens,
        "episode_tokens": sum(len(ep.ids) for ep in rows),
        "loss_tokens": metrics.get("loss_tokens", 0.0),
        "trained_rows": metrics.get("trained_rows", float(len(rows))),
        "reward": metrics["reward"],
        "acr": metrics["acr"],
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2")
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--max-turns", type=int, default=4)
    p.add_argument("--max-tokens", type=int, default=40)
    p.add_argument("--max-context", type=int, default=1024)
    p.add_argument("--max-shown", type=int, default=3)
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--lora-r", type=int, default=16)
    p.add_argument("--kl", type=float, default=0.0)
    p.add_argument("--system-prompt", action="store_true")
    p.add_argument("--gradient-checkpointing", action="store_true")
    p.add_argument("--baseline", action="store_true", help="without this issue's optimisations")
    p.add_argument("--keep-tied", action="store_true", help="train zero-advantage rows too")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", default=None, help="append the figures to this JSONL file")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = parse(argv)
    result = {"baseline": float(args.baseline), "keep_tied": float(args.keep_tied)}
    result.update(profile(args))
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "a", encoding="utf-8") as f:
            f.write(json.dumps({"args": vars(args), **result}) + "\n")
    return result


if __name__ == "__main__":
    main()
