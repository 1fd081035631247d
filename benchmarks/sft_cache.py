"""SFT with and without the frozen-layer cache (``sft.frozen_cache_gb``), in one run: with LoRA
on the top layers only, each row's states below them are computed once instead of every epoch.

    python benchmarks/sft_cache.py                       # SmolLM2, LoRA on its top 8 of 30 layers
    python benchmarks/sft_cache.py --rows 16 --steps 8   # shorter

Both runs train on the same rows (KBQA-v0's expert on the first ``--rows`` training questions,
topic handles, no system prompt) with the same seed, so they see the same batches; the table
gives seconds per step in the first epoch (rows computed and cached) and after it (read from
the cache), and the last step's NLL, which should agree to float rounding.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any

from agentgym.train.config import TrainConfig
from agentgym.train.trainer import Trainer


def run(args: argparse.Namespace, cache_gb: float, out: Path) -> dict[str, Any]:
    first = list(range(args.model_layers - args.lora_layers, args.model_layers))
    cfg = TrainConfig.model_validate(
        {
            "model": {"path": args.model, "lora": {"r": 16, "alpha": 32, "layers": first}},
            "env": {"id": "KBQA-v0", "suite": "kbqa/comp-train", "limit": args.rows,
                    "kwargs": {"handles": True}, "system_prompt": False},
            "algo": {"name": "sft"},
            "sft": {"data": "expert", "batch_size": args.batch, "frozen_cache_gb": cache_gb},
            "optim": {"lr": 1e-3, "micro_batch_size": args.micro_batch},
            "steps": args.steps, "out_dir": str(out), "threads": args.threads, "resume": False,
        }
    )  # fmt: skip
    trainer = Trainer(cfg)
    trainer.run()
    trainer.close()
    steps = [h["step_s"] for h in trainer.history]
    epoch = max(1, -(-args.rows // args.batch))  # steps that see the data about once
    return {
        "first": statistics.fmean(steps[:epoch]),
        "later": statistics.fmean(steps[epoch:] or steps),
        "total": sum(steps),
        "nll": trainer.history[-1]["nll"],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2")
    p.add_argument("--model-layers", type=int, default=30)
    p.add_argument("--lora-layers", type=int, default=8)
    p.add_argument("--rows", type=int, default=32, help="expert episodes (KBQA questions)")
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--micro-batch", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = run(args, 0.0, Path(tmp) / "off")
        cached = run(args, 4.0, Path(tmp) / "on")
    print(f"SFT, {args.model}, LoRA on the top {args.lora_layers} of {args.model_layers} layers, "
          f"{args.rows} rows, {args.steps} steps x {args.batch} rows, {args.threads} threads")  # fmt: skip
    print("| cache | first epoch s/step | later s/step | total s | last NLL |")
    print("|---|---|---|---|---|")
    for name, r in (("off (baseline)", base), ("on", cached)):
        print(
            f"| {name} | {r['first']:.2f} | {r['later']:.2f} | {r['total']:.1f} | {r['nll']:.4f} |"
        )
    print(f"| ratio off/on | {base['first'] / cached['first']:.2f}x | "
          f"{base['later'] / cached['later']:.2f}x | {base['total'] / cached['total']:.2f}x | |")  # fmt: skip


if __name__ == "__main__":
    main()
