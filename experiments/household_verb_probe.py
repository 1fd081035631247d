"""Is the verb learnable? Continue SFT of kept adapters on a remixed set of rows, then ``agree``.

The household notes arms copy receptacle names well but never choose ``take`` or ``put`` (the first
action token carries all the loss; docs/results.md). This probe trains the adapters ``--steps``
more steps on a remix of the rows (``--mix``, drawn with ``--seed``) and prints the teacher-forced
agreement per verb of :func:`experiments.household_full.agreement` on the first ``--limit``
valid_unseen tasks. The mixes:

``verbs``      every row whose command is not ``go to``/``open``, and as many of those. It
               taught ``take``, but closed loop the model then took whatever it saw and put it
               back, again and again: the rows that teach *not* to take were thinned out.
``decisions``  every row where a ``take`` or ``put`` is admissible (whatever the searcher did
               there: the ``go to`` rows among them are the contrast that teaches which object),
               with the ``take``/``put`` rows twice, every other row not a ``go to``/``open``,
               and a quarter of the remaining ``go to``/``open`` rows, so the search order is
               not forgotten.

``--extra`` adds DAgger's rows (:func:`with_dagger`, from one or more ``household_full dagger``
rounds), each correction ``--dagger-weight`` times.

    python -m experiments.household_verb_probe --data runs/household-notes2/sft.jsonl \\
        --from experiments/checkpoints/household-notes-sft --out runs/verb-probe --steps 32

(``household-notes-sft`` is no longer in the tree: ``git checkout e35db7d --
experiments/checkpoints/household-notes-sft`` brings it back.)
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

from experiments import household_full as recipe

SEARCH = ("go to ", "open ")


def rebalance(rows: list[dict], seed: int) -> list[dict]:
    """``verbs``: every row not a ``go to``/``open``, plus as many of those, shuffled."""
    common: list[dict] = []
    rare: list[dict] = []
    for r in rows:
        (common if r["messages"][1]["content"].startswith(SEARCH) else rare).append(r)
    rng = random.Random(seed)
    picked = rare + rng.sample(common, min(len(rare), len(common)))
    rng.shuffle(picked)
    return picked


def decisions(rows: list[dict], seed: int) -> list[dict]:
    """``decisions``: see the module docstring."""
    rng = random.Random(seed)
    picked: list[dict] = []
    for r in rows:
        command = r["messages"][1]["content"]
        if command.startswith(("take ", "put ")):
            picked += [r, r]
        elif recipe.is_decision(r) or not command.startswith(SEARCH):
            picked.append(r)  # a decision, or a rare verb
        elif rng.random() < 0.25:  # a plain search step
            picked.append(r)
    rng.shuffle(picked)
    return picked


MIXES = {"verbs": rebalance, "decisions": decisions}


STEP_NUMBERS = re.compile(r"\d+ step\(s\)|step \d+|Observation \d+|Action \d+")


def distinct_states(rows: list[dict]) -> list[dict]:
    """The first row of each state and label, step numbers aside: a learner stuck in a loop
    reaches the same state (same notes, history and observation) dozens of times, and the first DAgger
    round's 588 corrections were 251 states, one of them 44 times."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for r in rows:
        key = (STEP_NUMBERS.sub("#", r["messages"][0]["content"]), r["messages"][1]["content"])
        if key not in seen:
            seen.add(key)
            kept.append(r)
    return kept


def with_dagger(picked: list[dict], extra: list[dict], seed: int, weight: int = 1) -> list[dict]:
    """``picked`` plus DAgger's rows (``household_full dagger``): every state where the learner
    did not do what the searcher would (the corrections), each distinct state once
    (:func:`distinct_states`) and ``weight`` times, and the ``decisions`` mix of the rest;
    shuffled together, without the learner's command."""
    fixes = distinct_states([r for r in extra if r["learner"] != r["messages"][1]["content"]])
    rest = [r for r in extra if r["learner"] == r["messages"][1]["content"]]
    rows = picked + fixes * weight + decisions(rest, seed)
    random.Random(seed).shuffle(rows)
    return [{k: v for k, v in r.items() if k != "learner"} for r in rows]


def sft_knobs(args: argparse.Namespace) -> argparse.Namespace:
    """household_full's SFT settings, read from its own command line's defaults (a hand copy
    once fell behind the recipe and crashed), for ``--steps`` more steps in ``--dtype``."""
    return recipe.parser().parse_args(
        ["sft", "--sft-steps", str(args.steps), "--seed", str(args.seed),
         "--threads", str(args.threads), "--dtype", args.dtype]
    )  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", type=Path, required=True, help="a data stage's sft.jsonl")
    p.add_argument("--from", dest="start", type=Path, required=True, help="adapters to continue")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--mix", choices=sorted(MIXES), default="verbs")
    p.add_argument("--extra", type=Path, nargs="+", default=[], help="DAgger rows: dagger.jsonl")
    p.add_argument("--dagger-weight", type=int, default=1, help="copies of each correction")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=8,
                   help="agree: first N valid_unseen tasks (0: no agree)")  # fmt: skip
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dtype", choices=recipe.DTYPES, default="float32",
                   help="training precision (bfloat16 only where the CPU has it natively)")  # fmt: skip
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from agentgym.train.trainer import Trainer

    args.out.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in args.data.read_text().splitlines()]
    picked = MIXES[args.mix](rows, args.seed)
    extra = [json.loads(line) for path in args.extra for line in path.read_text().splitlines()]
    if extra:
        picked = with_dagger(picked, extra, args.seed, args.dagger_weight)
    (args.out / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in picked))
    print(f"{len(picked)} rows from {len(rows)} SFT rows and {len(extra)} DAgger rows", flush=True)
    config = recipe.sft_config(args.out, sft_knobs(args), start=str(args.start))
    trainer = Trainer(config)
    trainer.run()
    trainer.close()
    if not args.limit:
        return
    agree = argparse.Namespace(
        concurrency=16, limit=args.limit, history=2, seed=0, notes="household"
    )
    print(recipe.agreement(args.out, "sft", agree))


if __name__ == "__main__":
    main()
