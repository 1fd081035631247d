"""KBQA-R1 at CPU scale: RRS vs plain rejection sampling, RRS-SFT, then GRPO.

    python -m experiments.kbqa_r1 --seeds 0 1 2

Per seed: Referenced Rejection Sampling (:func:`agentgym.agents.kbqa_r1.rrs`) with the offline
:class:`NoisyTeacher` on the training questions, with the hint (RRS) and without it (plain
rejection sampling, the baseline), both yields reported; the kept RRS trajectories, checked to hold
no hint text, become the SFT data of a tiny Llama built like the trainer demo's
(``kit.demo_model``: tokenizer fitted to the SFT texts); then GRPO from the SFT checkpoint
with KBQA-R1's settings (group 5, no KL, clip 0.2/0.28, at most 6 turns, observation tokens
masked). Held-out F1 and exact-match success on ``kbqa/comp-test`` (compositional and iid) after
SFT and after SFT+GRPO, the same evaluation episodes (job seeds) for both, so the difference is
paired.

What a tiny model from scratch is given (documented narrowing, not KBQA-R1's setting): the env
option ``handles=True`` (topic entities addressable as ``@1``/``@2``: no opaque id to copy),
results listing ``--max-shown`` entities, no system prompt, training questions of ``comp-train``
restricted to ``--train-tags`` (the iid operations the compositional questions combine).
The method: docs/methods.md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from agentgym.agents.kbqa_r1 import HINT_HEADER, RRSReport, leaks, make_hint, noisy_teacher, rrs
from agentgym.agents.kbqa_r1 import write_sft as write_rows
from agentgym.registry import make
from agentgym.task import Task, TaskSuite, write_tasks
from experiments import kit
from experiments.results import (
    command_line,
    markdown_table,
    paired_cells,
    print_table,
    run_experiment,
    section_text,
    stage_cells,
)

MARKER = "## KBQA-R1: RRS-SFT vs SFT+GRPO (MetaQA compositional)"
TRAIN_TAGS = ("and", "count", "argmax", "argmin", "time", "compare-gt", "compare-lt")
STAGES = (("sft", "RRS-SFT"), ("rl", "RRS-SFT + GRPO"))
HELD_OUT = ("compositional", "iid")
REAL_SCALE = (
    "RRS with an LLM teacher (`rrs(env, tasks, lambda env, hint: chat_agent(SPEC, env, hint))`, "
    "then `write_sft`), `agentgym train configs/methods/kbqa_r1_sft.yaml`, then "
    "`agentgym train configs/methods/kbqa_r1_grpo.yaml` (Qwen2.5-1.5B-Instruct, a GPU; the env "
    "without `handles`, as KBQA-R1)"
)


# ============================================================================ tasks
def _narrow(task: Task, max_shown: int) -> Task:
    return task.model_copy(update={"config": {**task.config, "max_shown": max_shown}})


def _spread(tasks: list[Task], n: int) -> list[Task]:
    """``n`` tasks spread evenly over ``tasks`` (every template represented)."""
    return tasks[:: max(1, len(tasks) // n)][:n] if n < len(tasks) else tasks


def suites(root: Path, args: argparse.Namespace) -> dict[str, Path]:
    """The training questions (``comp-train`` with ``--train-tags``) and the held-out questions
    (``comp-test``: ``--eval-compositional`` compositional, ``--eval-iid`` iid), written with
    ``max_shown`` narrowed."""
    train = [
        _narrow(t, args.max_shown)
        for t in TaskSuite.load("kbqa/comp-train")
        if set(t.tags) & set(args.train_tags)
    ]
    test_suite = TaskSuite.load("kbqa/comp-test")
    test = [
        _narrow(t, args.max_shown)
        for tag, n in (("compositional", args.eval_compositional), ("iid", args.eval_iid))
        for t in _spread(test_suite.filter([tag]).tasks, n)
    ]
    paths = {"train": root / "train.jsonl", "test": root / "test.jsonl"}
    write_tasks(paths["train"], train)
    write_tasks(paths["test"], test)
    return paths


# ============================================================================ RRS and SFT data
def sample(
    env: Any, train: list[Task], args: argparse.Namespace, seed: int
) -> tuple[RRSReport, RRSReport]:
    """RRS (hinted) and plain rejection sampling on the same questions, same teacher, same seed."""
    teacher = noisy_teacher(p_error=args.p_error, p_recover=args.p_recover)
    hinted = rrs(env, train, teacher, samples=args.samples, seed=seed)
    plain = rrs(env, train, teacher, samples=args.samples, hinted=False, seed=seed)
    return hinted, plain


def write_sft(env: Any, report: RRSReport, tasks: list[Task], path: Path) -> list[str]:
    """The kept RRS trajectories as chat rows; raises if any row holds hint text. Returns the
    rows' texts (the tokenizer's corpus)."""
    write_rows(report.episodes, path, env.unwrapped.system_prompt)
    hints = []
    for task in tasks:
        env.reset(seed=0, options={"task": task})
        hints.append(make_hint(env.unwrapped.reference_actions()))
    texts = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        body = json.dumps(row)
        if HINT_HEADER.lower() in body.lower() or any(h in body for h in hints):
            raise AssertionError(f"SFT row {n} holds hint text")
        texts += [m["content"] for m in row["messages"][1:]]
    assert not any(leaks(ep, h) for ep in report.episodes for h in hints[:1])
    return texts


# ============================================================================ training
def config(model: Path, paths: dict[str, Path], out: Path, args: Any, **over: Any) -> Any:
    """The trainer config shared by both stages: the demo's (``kit.trainer_config``) on
    KBQA with topic handles (``over``: dotted overrides)."""
    return kit.trainer_config(
        model,
        paths,
        out,
        "KBQA-v0",
        args,
        **{
            "env.kwargs": {"handles": True},
            "rollout.max_tokens": args.max_tokens,
            "rollout.max_context_tokens": 2048,
            "eval_temperature": args.eval_temperature,
            **over,
        },
    )


def evaluate(trainer: Any, tags: dict[str, str]) -> list[dict[str, Any]]:
    """Held-out episodes of ``trainer`` (the same jobs and seeds as ``Trainer.evaluate``): one
    record per episode with its tag, F1, exact match, invalid actions and turns."""
    out = []
    for ep in trainer.eval_episodes():
        e = ep.episode
        out.append(
            {
                "key": f"{e.task_id}:{e.sample}",
                "tag": tags[e.task_id],
                "ok": ep.ok,
                "f1": float(e.score) if ep.ok else 0.0,
                "success": bool(e.success) if ep.ok else False,
                "invalid": sum(not s.valid for s in e.steps),
                "turns": len(e.steps),
            }
        )
    return out


def run_seed(seed: int, args: argparse.Namespace, root: Path, paths: dict[str, Path]) -> dict:
    """One seed: RRS and plain yields, SFT on the RRS data, GRPO; held-out records per stage."""
    from agentgym.train.trainer import Trainer

    env = make("KBQA-v0", handles=True)
    train = TaskSuite.load(paths["train"]).tasks
    chosen = random.Random(f"kbqa-r1:{seed}").sample(train, min(args.train_tasks, len(train)))
    hinted, plain = sample(env, chosen, args, seed)
    data = root / f"rrs-{seed}.jsonl"
    texts = write_sft(env, hinted, chosen, data)
    model = kit.demo_model(
        root / f"model-{seed}", {}, args.hidden, args.layers, seed, "KBQA-v0", extra_texts=texts
    )
    tags = {t.id: t.tags[0] for t in TaskSuite.load(paths["test"])}
    out: dict[str, Any] = {"seed": seed, "rrs": _yields(hinted), "plain": _yields(plain)}
    out["sft_rows"] = len(hinted.episodes)
    started = time.perf_counter()
    sft = Trainer(
        config(
            model,
            paths,
            root / f"sft-{seed}",
            args,
            seed=seed,
            steps=args.sft_steps,
            **{"algo.name": "sft", "sft.data": str(data)},
        )
    )
    sft.run()
    out["sft_s"] = time.perf_counter() - started
    out["sft"] = evaluate(sft, tags)
    sft.close()
    started = time.perf_counter()
    rl = Trainer(
        config(
            root / f"sft-{seed}" / "final",
            paths,
            root / f"rl-{seed}",
            args,
            seed=seed,
            steps=args.rl_steps,
            **{
                "algo.name": "grpo",
                "algo.kl_coef": 0.0,
                "algo.clip_low": 0.2,
                "algo.clip_high": 0.28,
                "optim.lr": args.rl_lr,
            },
        )
    )
    rl.run()
    out["rl_s"] = time.perf_counter() - started
    out["rl"] = evaluate(rl, tags)
    out["rl_history"] = [
        {k: h[k] for k in ("step", "success", "reward") if k in h} for h in rl.history
    ]
    rl.close()
    return out


def _yields(report: RRSReport) -> dict[str, Any]:
    tags = sorted(t for t in report.by_tag if t not in ("all", "iid"))
    return {
        "attempted": report.attempted,
        "accepted": report.accepted,
        "yield": report.yield_rate,
        "covered": len(report.covered),
        "tasks": report.tasks,
        "leaked": report.leaked,
        "by_tag": {t: report.tag_yield(t) for t in tags},
    }


# ============================================================================ report
def heldout_rows(results: list[dict]) -> list[list[str]]:
    """Per held-out group and stage: per-seed F1, pooled F1 [95%], exact match [Wilson],
    invalid actions per episode."""
    rows = []
    for tag in HELD_OUT:
        for stage, label in STAGES:
            cells, recs = stage_cells(results, stage, lambda r, tag=tag: r["tag"] == tag, "f1")
            if recs:
                invalid = statistics.fmean(r["invalid"] for r in recs)
                rows.append([tag, label, *cells, f"{invalid:.2f}", str(len(recs))])
    return rows


def paired_rows(results: list[dict]) -> list[list[str]]:
    """GRPO minus SFT per held-out group, paired by evaluation episode (same task and seed)."""
    rows = []
    for tag in HELD_OUT:
        cells, pairs = paired_cells(results, "sft", "rl", lambda r, tag=tag: r["tag"] == tag, "f1")
        if not pairs:
            continue
        up = sum(
            statistics.fmean(r["f1"] for r in res["rl"] if r["tag"] == tag)
            > statistics.fmean(r["f1"] for r in res["sft"] if r["tag"] == tag)
            for res in results
        )
        rows.append([tag, *cells, f"{up} of {len(results)}", str(pairs)])
    return rows


def yield_rows(results: list[dict]) -> list[list[str]]:
    """RRS vs plain rejection sampling: yield (kept per rollout) overall and per question type,
    pooled over seeds."""
    tags = sorted({t for res in results for t in res["rrs"]["by_tag"]})
    rows = []
    for name, key in (("RRS (hint)", "rrs"), ("plain rejection sampling", "plain")):
        acc = sum(res[key]["accepted"] for res in results)
        att = sum(res[key]["attempted"] for res in results)
        cov = sum(res[key]["covered"] for res in results)
        n = sum(res[key]["tasks"] for res in results)
        per_tag = [
            f"{statistics.fmean(res[key]['by_tag'].get(t, 0.0) for res in results):.1%}"
            for t in tags
        ]
        rows.append([name, f"{acc / att:.1%} ({acc}/{att})", f"{cov / n:.1%}", *per_tag])
    return rows


def yield_columns(results: list[dict]) -> list[str]:
    tags = sorted({t for res in results for t in res["rrs"]["by_tag"]})
    return ["sampler", "yield", "questions covered", *tags]


def heldout_columns(results: list[dict]) -> list[str]:
    return [
        "held-out",
        "stage",
        *(f"F1 seed {r['seed']}" for r in results),
        "F1 pooled [95%]",
        "exact match [95% Wilson]",
        "invalid actions / episode",
        "episodes",
    ]


PAIRED_COLUMNS = [
    "held-out",
    "F1 GRPO - SFT [95%]",
    "success GRPO - SFT [95%]",
    "seeds up",
    "pairs",
]


def finding(results: list[dict]) -> str:
    """The run's outcome in one sentence, computed from the tables."""
    rrs_y = [res["rrs"]["yield"] for res in results]
    plain_y = [res["plain"]["yield"] for res in results]
    paired = {row[0]: row for row in paired_rows(results)}
    comp = paired.get("compositional", ["", "-", "-", "-"])
    return (
        f"RRS kept {statistics.fmean(rrs_y):.1%} of its rollouts, plain rejection sampling "
        f"{statistics.fmean(plain_y):.1%} ({statistics.fmean(rrs_y) / max(statistics.fmean(plain_y), 1e-9):.0f}x); "
        f"every SFT row was checked free of hint text. On held-out compositional questions GRPO "
        f"changed F1 by {comp[1]} (paired), above SFT in {comp[3]} seeds."
    )


def settings(args: argparse.Namespace) -> str:
    return (
        f"training questions: {args.train_tasks} per seed drawn from `kbqa/comp-train` with tags "
        f"{', '.join(args.train_tags)}; teacher NoisyTeacher (p_error {args.p_error}, p_recover "
        f"{args.p_recover}), {args.samples} rollouts per question with and without the hint; env "
        f"`KBQA-v0` with `handles=True`, results showing {args.max_shown} entities, no system "
        f"prompt; tiny Llama (hidden {args.hidden}, {args.layers} layers, tokenizer fitted to the "
        f"SFT texts) per seed; SFT {args.sft_steps} steps (lr {args.sft_lr}, batch 16, context "
        f"weight 1.0); GRPO {args.rl_steps} steps from the SFT checkpoint (lr {args.rl_lr}, "
        f"{args.tasks_per_step} questions x group {args.group_size}, no KL, clip 0.2/0.28, at "
        f"most {args.max_turns} turns, {args.max_tokens} new tokens per turn); held-out: "
        f"{args.eval_compositional} compositional and {args.eval_iid} iid questions of "
        f"`kbqa/comp-test` x {args.eval_samples} samples at T={args.eval_temperature}; seeds "
        f"{' '.join(map(str, args.seeds))}; {args.elapsed_s / 60:.0f} min on the shared 2-core CPU"
    )


def section(args: argparse.Namespace, results: list[dict]) -> str:
    """The docs/results.md section."""
    return section_text(
        MARKER,
        "Referenced Rejection Sampling (the gold logical form as a hint to the teacher, hint "
        "removed from the kept trajectories) vs plain rejection sampling; then SFT of a tiny "
        "model on the RRS data and GRPO with KBQA-R1's settings from that checkpoint. F1 is "
        "the answer-set F1 (the env's score), exact match is `success`; F1 intervals are "
        "normal intervals over the episodes pooled across seeds, the GRPO - SFT difference "
        "is paired by evaluation episode (same question, same sampling seed).",
        f"Settings: {settings(args)}.",
        command_line("kbqa_r1", args.argv, drop=("--json",)),  # --json: a local dump
        markdown_table(yield_columns(results), yield_rows(results)),
        markdown_table(heldout_columns(results), heldout_rows(results)),
        markdown_table(PAIRED_COLUMNS, paired_rows(results)),
        finding(results),
        f"Real scale: {REAL_SCALE}.",
    )


def run(args: argparse.Namespace) -> list[dict]:
    """Every seed, then the tables on the console."""
    import tempfile

    from rich.console import Console

    console, results = Console(), []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = suites(root, args)
        for seed in args.seeds:
            r = run_seed(seed, args, root, paths)
            results.append(r)
            f1 = {
                s: statistics.fmean(x["f1"] for x in r[s] if x["tag"] == "compositional")
                for s in ("sft", "rl")
            }
            console.print(
                f"seed {seed} ({time.perf_counter() - started:.0f} s): yield RRS "
                f"{r['rrs']['yield']:.1%} vs plain {r['plain']['yield']:.1%}; compositional F1 "
                f"SFT {f1['sft']:.3f}, +GRPO {f1['rl']:.3f}; SFT {r['sft_s']:.0f} s, GRPO "
                f"{r['rl_s']:.0f} s"
            )
    args.elapsed_s = time.perf_counter() - started
    for title, cols, rows in (
        ("RRS vs plain rejection sampling", yield_columns(results), yield_rows(results)),
        ("Held-out F1", heldout_columns(results), heldout_rows(results)),
        ("GRPO - SFT (paired)", PAIRED_COLUMNS, paired_rows(results)),
    ):
        print_table(console, title, cols, rows)
    console.print(finding(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return results


def parser() -> argparse.ArgumentParser:
    """The experiment's flags."""
    p = argparse.ArgumentParser(description="KBQA-R1: RRS yield, RRS-SFT vs SFT+GRPO on MetaQA")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--train-tags", nargs="+", default=list(TRAIN_TAGS))
    p.add_argument("--train-tasks", type=int, default=600, help="training questions per seed")
    p.add_argument("--samples", type=int, default=2, help="teacher rollouts per question")
    p.add_argument("--p-error", type=float, default=0.15)
    p.add_argument("--p-recover", type=float, default=0.5)
    p.add_argument("--max-shown", type=int, default=3)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--sft-steps", type=int, default=150)
    p.add_argument("--sft-lr", type=float, default=5e-3)
    p.add_argument("--rl-steps", type=int, default=15)
    p.add_argument("--rl-lr", type=float, default=5e-4)
    p.add_argument("--tasks-per-step", type=int, default=8)
    p.add_argument("--group-size", type=int, default=5)
    p.add_argument("--max-turns", type=int, default=6)
    p.add_argument("--max-tokens", type=int, default=40)
    p.add_argument("--eval-compositional", type=int, default=60)
    p.add_argument("--eval-iid", type=int, default=30)
    p.add_argument("--eval-samples", type=int, default=1)
    p.add_argument("--eval-temperature", type=float, default=0.0, help="0: greedy")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--results", default="docs/results.md")
    p.add_argument("--json", default=None, help="also write the per-episode records here")
    return p


def main(argv: list[str] | None = None) -> list[dict]:
    return run_experiment(parser(), run, MARKER, section, argv)


if __name__ == "__main__":
    main()
