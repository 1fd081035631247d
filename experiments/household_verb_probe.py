"""Is the verb learnable? Continue SFT of kept adapters on rebalanced rows, then ``agree``.

Issue 35's notes arms copy receptacle names well but never choose ``take`` or ``put`` (the first
action token carries all the loss; docs/results.md). This probe keeps every row whose command is
not ``go to`` or ``open`` and as many ``go to``/``open`` rows (drawn with ``--seed``), trains the
adapters ``--steps`` more steps on them, and prints the teacher-forced agreement per verb of
:func:`experiments.household_full.agreement` on the first ``--limit`` valid_unseen tasks:

    python -m experiments.household_verb_probe --data /work/runs/household-notes2/sft.jsonl \\
        --from experiments/checkpoints/household-notes-sft --out /work/runs/verb-probe --steps 32
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from experiments import household_full as recipe


def rebalance(rows: list[dict], seed: int) -> list[dict]:
    """Every row not a ``go to``/``open``, plus as many of those, shuffled."""
    common, rare = [], []
    for r in rows:
        (common if r["messages"][1]["content"].startswith(("go to ", "open ")) else rare).append(r)
    rng = random.Random(seed)
    picked = rare + rng.sample(common, min(len(rare), len(common)))
    rng.shuffle(picked)
    return picked


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", type=Path, required=True, help="a data stage's sft.jsonl")
    p.add_argument("--from", dest="start", type=Path, required=True, help="adapters to continue")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=8, help="agree: first N valid_unseen tasks")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    from agentgym.train.trainer import Trainer

    args.out.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in args.data.read_text().splitlines()]
    picked = rebalance(rows, args.seed)
    (args.out / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in picked))
    print(f"{len(picked)} rows of {len(rows)}", flush=True)
    knobs = argparse.Namespace(  # household_full's SFT settings, for --steps more steps
        lora_r=16, lora_layers=8, device="cpu", sft_batch=8, sft_lr=1e-3, micro_batch=4,
        sft_steps=args.steps, seed=args.seed, save_every=8, threads=args.threads,
    )  # fmt: skip
    config = recipe.sft_config(args.out, knobs, start=str(args.start))
    trainer = Trainer(config)
    trainer.run()
    trainer.close()
    agree = argparse.Namespace(
        concurrency=16, limit=args.limit, history=2, seed=0, notes="household"
    )
    print(recipe.agreement(args.out, "sft", agree))


if __name__ == "__main__":
    main()
