"""SmolLM2 on ALFWorld's valid splits: SFT on the searcher's demonstrations, then RL.

    python -m experiments.household_full data --out /work/runs/household     # searcher rows
    python -m experiments.household_full sft  --out /work/runs/household     # LoRA SFT
    python -m experiments.household_full eval --out /work/runs/household --stage sft
    python -m experiments.household_full table --out /work/runs/household

Stages, each resumable from what it left in ``--out`` (rerun the same command):

``data``  the observation-grounded searcher (:mod:`agentgym.envs.household.searcher`) plays the
          training split (all six types, full rooms, 50 turns); its successful episodes become
          one SFT row per step, each the bounded-context prompt (:mod:`agentgym.agents.context`:
          task, last ``--history`` steps, observation, admissible actions) and the searcher's
          command. ``--episodes`` episodes, drawn evenly per type with ``--seed``. Writes
          ``sft.jsonl`` and ``data.json`` (counts, prompt tokens).
``sft``   LoRA SFT of SmolLM2 on those rows (rank ``--lora-r`` on every projection of the top
          ``--lora-layers`` layers; the layers below are frozen, their states cached). The
          trainer checkpoints the adapters every ``--save-every`` steps under ``sft/`` (a few
          MB each) and resumes from the newest.
``eval``  ``agentgym eval`` of ``hf:CKPT?history=K`` (the same bounded prompt) on
          ``household/valid_unseen`` (134) and ``household/valid_seen`` (140), greedy, each task
          with its own turn limit (50); results in ``eval.db`` (resumable: finished episodes are
          kept). ``--dtype bfloat16`` plays in bfloat16 (about 1.7x faster here, other greedy
          episodes): its runs are told apart by their spec, and ``compare`` pairs one precision.
          ``--shards N`` plays each split as N processes side by side (one per core).
``rl``    GiGPO (``--rl-algo``) from the SFT adapters, one run per ``--seeds`` seed, with the
          same bounded prompt in its rollouts (``rollout.history``, step rows); adapters and
          optimizer saved every step under ``rl-SEED/`` (resumes from the newest). ``--dtype
          bfloat16`` (sft, rl) computes rollouts and updates under bf16 autocast, the float32
          weights and optimizer kept (about 1.7x faster here: ``benchmarks/precision.py
          --trainer``).
``table`` success per split and task type for every evaluated stage, from ``eval.db``.
``losses`` the lost episodes of every evaluated stage by failure mode (:func:`failure_mode`)
          and task type, from ``eval.db``.
``onpolicy`` how often each evaluated stage's commands are the searcher's in its own episodes
          (won, lost, at decision states): :func:`on_policy`.
``compare`` RL minus SFT paired per task on both splits, per seed, and the t-interval over the
          seeds (the plan in docs/results.md); then the same on each split alone.
``versus`` two checkpoints paired per task (``--stage`` against ``--against``, whose runs may be
          in another folder's store, ``--against-out``), per split and both: the difference,
          its 95% interval and the exact McNemar p.
``progress`` each training run's steps so far (SFT: NLL of the searcher's commands; RL: success)
          and seconds per step, from ``train.db``.
``dagger`` DAgger's rows: the ``--stage`` checkpoint plays ``--episodes`` training tasks, and
          the searcher labels every state it reached (``dagger.jsonl``; train on them with
          ``experiments/household_verb_probe.py --extra``). ``--shards N`` plays them as N
          processes side by side.
``snapshot`` / ``restore`` (``--to DIR``): the stores and the newest checkpoint of each
          training folder into a folder of the git tree, and back on a new machine, so a run
          spanning sessions resumes where the last commit left it
          (:mod:`experiments.run_snapshot`).
``keep``  copy a stage's adapters (``--stage``) to ``--to`` (in the git tree, a few MB), naming
          the base model ``smollm2`` rather than this machine's cache folder, so a new machine
          evaluates it (``eval --stage DIR``) or starts RL from it (``rl --sft-checkpoint DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from agentgym.agents.context import play_rows
from agentgym.envs.household.env import HouseholdEnv
from agentgym.envs.household.goals import SHORT, TASK_TYPES
from agentgym.envs.household.searcher import SearchAgent
from agentgym.envs.household.text import NOTHING_HAPPENS
from agentgym.llm.engine import DTYPES
from agentgym.llm.factory import split_spec
from agentgym.task import Task, TaskSuite

SPLITS = ("valid_unseen", "valid_seen")
MODEL = "smollm2"


# ============================================================================ data
def searcher_rows(
    task: Task, history: int, stutter: float = 0.0, seed: int = 0, notes: str | None = None
) -> list[dict[str, Any]] | None:
    """One SFT row per step of the searcher's episode on ``task`` (None if it did not win):
    the prompt ``hf:CKPT?history=K`` is shown at that step and the searcher's command; with
    ``stutter``, repeated ``go to`` commands in the history; with ``notes``, that notes line
    (:func:`play_rows`)."""
    rows, won = play_rows(HouseholdEnv(), SearchAgent(), task, history, stutter, seed, notes)
    return rows if won else None


def pick_tasks(episodes: int, seed: int, kinds: tuple[str, ...] = TASK_TYPES) -> list[Task]:
    """``episodes`` training tasks, as even over ``kinds`` (task types) as the split allows."""
    by_type: dict[str, list[Task]] = defaultdict(list)
    for t in TaskSuite.load("household/train"):
        by_type[t.config["task_type"]].append(t)
    rng = random.Random(seed)
    for tasks in by_type.values():
        rng.shuffle(tasks)
    picked: list[Task] = []
    per_type = -(-episodes // len(kinds))
    for kind in kinds:
        picked += by_type[kind][: per_type + 16]  # spares for the searcher's misses
    return picked


def make_data(
    out: Path,
    episodes: int,
    history: int,
    seed: int,
    stutter: float = 0.0,
    notes: str | None = None,
) -> dict[str, Any]:
    """Write ``sft.jsonl`` and ``data.json`` (see the module docstring); reuse them if present
    and made with the same settings."""
    stats_path = out / "data.json"
    asked = {"history": history, "seed": seed, "stutter": stutter, "notes": notes}
    if stats_path.is_file():
        stats = dict(json.loads(stats_path.read_text()))
        before = {"stutter": 0.0, "notes": None}  # folders from before these options
        made = {k: stats.get(k, before.get(k)) for k in asked}
        if made != asked:
            raise ValueError(f"{out} holds SFT data made with {made}, not {asked}: "
                             "use another --out, or delete sft.jsonl and data.json")  # fmt: skip
        return stats
    from transformers import AutoTokenizer

    from agentgym.llm.models import resolve_model_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(MODEL, announce=False))
    per_type = -(-episodes // len(TASK_TYPES))
    kept: dict[str, int] = Counter()
    missed: dict[str, int] = Counter()
    rows: list[dict[str, Any]] = []
    for task in pick_tasks(episodes, seed):
        kind = task.config["task_type"]
        if kept[kind] >= per_type:
            continue
        got = searcher_rows(task, history, stutter, seed, notes)
        if got is None:
            missed[kind] += 1
            continue
        kept[kind] += 1
        rows += got
    tokens = [len(tokenizer(tokenizer.apply_chat_template(r["messages"], tokenize=False))
                  ["input_ids"]) for r in rows]  # fmt: skip
    with open(out / "sft.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    stats = {
        "episodes": dict(kept),
        "searcher_missed": dict(missed),
        "rows": len(rows),
        "history": history,
        "seed": seed,
        "stutter": stutter,
        "notes": notes,
        "tokens_per_row_mean": sum(tokens) / len(tokens),
        "tokens_per_row_max": max(tokens),
        "tokens_total": sum(tokens),
    }
    stats_path.write_text(json.dumps(stats, indent=1))
    return stats


def _model(path: str, args: argparse.Namespace) -> dict[str, Any]:
    """SmolLM2 at ``path`` with LoRA on every projection of its top ``--lora-layers`` layers: the
    SFT stage and the RL stages train the same adapters, in ``--dtype`` (bfloat16: autocast over
    float32 weights, rollouts and updates alike)."""
    from agentgym.train.config import PRECISION_DTYPES

    layers = 30  # SmolLM2-135M
    return {
        "path": path,
        "device": args.device,
        "precision": next(p for p, dtype in PRECISION_DTYPES.items() if dtype == args.dtype),
        "lora": {
            "r": args.lora_r,
            "alpha": 2 * args.lora_r,
            "layers": list(range(layers - args.lora_layers, layers)),
            "target_modules": [f"{m}_proj" for m in ("q", "k", "v", "o", "gate", "up", "down")],
        },
    }


# ============================================================================ sft
def sft_config(out: Path, args: argparse.Namespace, start: str = MODEL) -> Any:
    """The trainer config of the SFT stage on ``out/sft.jsonl``: new adapters on ``start`` (the
    base), or, for an adapter folder, those adapters trained on."""
    from agentgym.train.config import TrainConfig

    return TrainConfig.model_validate(
        {
            "model": _model(start, args),
            "env": {"id": "Household-v0", "suite": "household/train", "system_prompt": False},
            "algo": {"name": "sft"},
            "sft": {"data": str(out / "sft.jsonl"), "batch_size": args.sft_batch},
            "optim": {"lr": args.sft_lr, "micro_batch_size": args.micro_batch},
            "steps": args.sft_steps,
            "seed": args.seed,
            "out_dir": str(out / "sft"),
            "save_every": args.save_every,
            "resume": True,
            "threads": args.threads,
            "db": str(out / "train.db"),
            "run_name": "household-sft",
        }
    )


def run_sft(out: Path, args: argparse.Namespace) -> Path:
    """Train to ``--sft-steps`` (resuming from the newest ``sft/step-N``); ``sft/done.json``
    records the steps reached, so a rerun with more steps continues and one with as many
    returns at once."""
    from agentgym.train.trainer import Trainer

    final, done = out / "sft" / "final", out / "sft" / "done.json"
    if done.is_file() and json.loads(done.read_text())["steps"] >= args.sft_steps:
        return final
    if final.is_dir() and done.is_file():  # a longer run: continue from the last step-N
        import shutil

        shutil.rmtree(final)
    trainer = Trainer(sft_config(out, args))
    started = time.perf_counter()
    trainer.run()
    trainer.close()
    seconds = time.perf_counter() - started
    done.write_text(json.dumps({"steps": args.sft_steps, "last_session_s": round(seconds)}))
    print(f"sft: {seconds:.0f} s", flush=True)
    return final


# ============================================================================ rl
def sft_checkpoint(out: Path, args: argparse.Namespace) -> Path:
    """Where RL starts: ``--sft-checkpoint`` (a kept copy), else the sft stage's final."""
    return args.sft_checkpoint or out / "sft" / "final"


def rl_config(out: Path, args: argparse.Namespace, seed: int) -> Any:
    """GiGPO (or ``--rl-algo``) from the SFT adapters, with the bounded context of eval."""
    from agentgym.train.config import TrainConfig

    return TrainConfig.model_validate(
        {
            "model": _model(str(sft_checkpoint(out, args)), args),
            "env": {"id": "Household-v0", "suite": "household/train", "system_prompt": False},
            "rollout": {
                "tasks_per_step": args.rl_tasks,
                "group_size": args.group_size,
                "max_turns": 50,
                "max_tokens": 16,
                "temperature": 1.0,
                "max_context_tokens": 1536,
                "history": args.history,
                "notes": args.notes,
            },
            "algo": {"name": args.rl_algo, "layout": "step", "clip_high": 0.28},
            "optim": {"lr": args.rl_lr, "micro_batch_size": args.micro_batch},
            "steps": args.rl_steps,
            "seed": seed,
            "out_dir": str(out / f"rl-{seed}"),
            "save_every": 1,
            "resume": True,
            "threads": args.threads,
            "db": str(out / "train.db"),
            "run_name": f"household-rl-{seed}",
        }
    )


def run_rl(out: Path, args: argparse.Namespace, seed: int) -> Path:
    """One RL seed from the SFT checkpoint; resumes from its newest ``rl-SEED/step-N``."""
    from agentgym.train.trainer import Trainer

    final = out / f"rl-{seed}" / "final"
    if final.is_dir():
        return final
    if not sft_checkpoint(out, args).is_dir():
        raise FileNotFoundError(
            f"no SFT checkpoint at {sft_checkpoint(out, args)}: run the sft stage"
        )
    trainer = Trainer(rl_config(out, args, seed))
    trainer.run()
    trainer.close()
    return final


# ============================================================================ dagger
def played_episodes(db: Path, spec: str, tasks: dict[str, Task]) -> dict[str, Any]:
    """Task id -> the episode ``spec`` played on it, over every run of ``db`` (one run per
    suite file: the whole draw, or each shard of each start)."""
    from agentgym.store import Store

    if not db.is_file():
        return {}
    store = Store(db, read_only=True)
    played = {e.task_id: e for r in store.runs() if r["agent"] == spec
              for e in store.episodes(r["id"]) if e.task_id in tasks}  # fmt: skip
    store.close()
    return played


def run_dagger(out: Path, stage: str, args: argparse.Namespace) -> dict[str, Any]:
    """DAgger's data: the stage's checkpoint plays ``--episodes`` training tasks (drawn evenly
    over the ``--types`` with ``--seed`` + 1, so not the SFT draw) greedily through ``agentgym eval``
    (``dagger.db``, resumable), and every state it reached is labelled with the searcher's
    command (:func:`~agentgym.agents.context.relabel_rows`). Writes ``dagger.jsonl`` and
    ``dagger.json`` (episodes won, rows, how often the learner already did what the searcher
    would). ``--shards N``: N ``agentgym eval`` processes side by side, each on every N-th
    task not yet played (one per core, each on ``--threads``); a restart plays only what no
    earlier start finished."""
    from agentgym.agents.context import relabel_rows
    from agentgym.envs.household.searcher import next_command

    kinds = tuple(k for k in TASK_TYPES if SHORT[k] in args.types)
    per_type = -(-args.episodes // len(kinds))
    drawn = pick_tasks(args.episodes, args.seed + 1, kinds)
    tasks = [t for kind in kinds
             for t in [t for t in drawn if t.config["task_type"] == kind][:per_type]]  # fmt: skip
    suite = out / "dagger-tasks.jsonl"
    suite.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    spec = agent_spec(out, stage, args)
    by_id = {t.id: t for t in tasks}
    if args.shards == 1:
        cli_eval(str(suite), spec, out / "dagger.db", args)
    else:
        cli_eval_shards(tasks, spec, out / "dagger.db", out / "dagger", args)
    played = played_episodes(out / "dagger.db", spec, by_id)
    rows: list[dict[str, Any]] = []
    for task_id, episode in sorted(played.items()):
        actions = [s.action for s in episode.steps]
        rows += relabel_rows(
            HouseholdEnv(), by_id[task_id], actions, next_command, args.history, args.notes
        )
    with open(out / "dagger.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    agree = sum(r["learner"] == r["messages"][1]["content"] for r in rows)
    won = sum(e.success for e in played.values())
    stats = {"learner": spec, "episodes": len(played), "won": won, "rows": len(rows),
             "learner_agrees": agree}  # fmt: skip
    (out / "dagger.json").write_text(json.dumps(stats, indent=1))
    return stats


# ============================================================================ eval
def checkpoint(out: Path, stage: str) -> str:
    """The model an eval stage plays: ``base`` (untrained), ``sft`` or ``rl-SEED`` (their
    ``final``), a saved step such as ``sft/step-000096``, or a kept copy's folder."""
    if stage == "base":
        return MODEL
    if Path(stage).is_absolute() or Path(stage, "adapter_config.json").is_file():
        return str(Path(stage).resolve())
    final = out / stage / "final"
    return str(final if final.is_dir() or "/" not in stage else out / stage)


def agent_spec(out: Path, stage: str, args: argparse.Namespace) -> str:
    """The stage's checkpoint as a greedy ``hf:`` agent with the bounded prompt of its rows
    (``--unstick T``: sampling at T after two identical steps)."""
    notes = f"&notes={args.notes}" if args.notes else ""
    precision = f"&dtype={args.dtype}" if args.dtype != "float32" else ""
    unstick = f"&unstick={args.unstick:g}" if args.unstick else ""
    return (f"hf:{checkpoint(out, stage)}?history={args.history}{notes}"
            f"&temperature=0&max_format_errors=0{precision}{unstick}")  # fmt: skip


def cli_eval(
    suite: str, spec: str, db: Path, args: argparse.Namespace, limit: int | None = None
) -> None:
    """``agentgym eval SUITE -a SPEC`` (resumable from ``db``; its first ``limit`` tasks, or
    all), ``--concurrency`` episodes at a time (the engine batches their turns), on
    ``--threads`` torch threads."""
    cmd = eval_command(suite, spec, db, args, limit)
    subprocess.run(cmd, check=True, env=eval_env(args))


def eval_command(
    suite: str, spec: str, db: Path, args: argparse.Namespace, limit: int | None = None
) -> list[str]:
    """``agentgym eval``'s command line, printed as it starts."""
    cmd = [sys.executable, "-m", "agentgym.cli", "eval", suite, "-a", spec,
           "--db", str(db), "-c", str(args.concurrency)]  # fmt: skip
    if limit:
        cmd += ["--limit", str(limit)]
    print(" ".join(cmd), flush=True)
    return cmd


def eval_env(args: argparse.Namespace) -> dict[str, str]:
    """An eval process's environment: ``--threads`` torch threads."""
    return {**os.environ, "OMP_NUM_THREADS": str(args.threads)}


def cli_eval_shards(
    tasks: list[Task], spec: str, db: Path, name: Path, args: argparse.Namespace
) -> None:
    """``agentgym eval`` of the ``tasks`` no run of ``spec`` in ``db`` has finished, as
    ``--shards`` processes at once into ``db``, shard k on every ``--shards``-th of them (suite
    file ``NAME-part-K.jsonl``): a restart plays only what is left."""
    done = played_episodes(db, spec, {t.id: t for t in tasks})
    left = [t for t in tasks if t.id not in done]
    procs = []
    for k in range(args.shards):
        part = left[k :: args.shards]
        if not part:
            continue
        suite = name.with_name(f"{name.name}-part-{k}.jsonl")
        suite.write_text("".join(t.model_dump_json() + "\n" for t in part))
        cmd = eval_command(str(suite), spec, db, args)
        procs.append(subprocess.Popen(cmd, env=eval_env(args)))
    failed = [" ".join(map(str, p.args)) for p in procs if p.wait() != 0]
    if failed:
        raise RuntimeError(f"{len(failed)} eval shard(s) failed: {'; '.join(failed)}")


def run_eval(out: Path, stage: str, args: argparse.Namespace) -> None:
    """``agentgym eval`` of the stage's checkpoint on the valid splits (greedy, resumable).
    ``--shards N``: N processes side by side (one per core), each on every N-th task of the
    split that no earlier start of the same spec finished (suites ``SPLIT-part-K``)."""
    spec = agent_spec(out, stage, args)
    for split in args.splits:
        if args.shards == 1:
            cli_eval(f"household/{split}", spec, out / "eval.db", args, args.limit)
            continue
        tasks = list(TaskSuite.load(f"household/{split}"))[: args.limit]
        cli_eval_shards(tasks, spec, out / "eval.db", out / split, args)


def task_types() -> dict[str, str]:
    """Task id -> task type, over both valid splits."""
    return {t.id: t.config["task_type"] for s in SPLITS for t in TaskSuite.load(f"household/{s}")}


def markdown_header(*names: str) -> list[str]:
    """A markdown table's header lines."""
    return ["| " + " | ".join(names) + " |", "|---" * len(names) + "|"]


def type_columns(*first: str) -> list[str]:
    """A markdown table's header: ``first`` columns, one per task type, then ``all``."""
    return markdown_header(*first, *(SHORT[k] for k in TASK_TYPES), "all")


def run_label(run: dict[str, Any]) -> str:
    """A run's row name: its suite and checkpoint (relative to the working directory), with the
    prompt options but not the greedy settings every eval stage shares."""
    _, model, query = split_spec(str(run["agent"]))
    if Path(model).is_relative_to(Path.cwd()):
        model = str(Path(model).relative_to(Path.cwd()))
    greedy = {"temperature": "0", "max_format_errors": "0"}
    options = [f"{k}={v}" for k, v in query.items() if greedy.get(k) != v]
    return f"{run['suite']} {model}" + (f" ({', '.join(options)})" if options else "")


def whole_suite(suite: str) -> str:
    """The split an ``eval --shards`` suite was cut from (``valid_unseen-part-0`` ->
    ``household/valid_unseen``); any other suite as it is."""
    shard = re.fullmatch(r"(.+)-part-\d+", suite)
    return f"household/{shard[1]}" if shard and shard[1] in SPLITS else suite


def eval_runs(store: Any) -> dict[str, list[dict[str, Any]]]:
    """``eval.db``'s runs by row name (:func:`run_label`), a split's shards under one name."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in store.runs():
        whole = {**run, "suite": whole_suite(str(run["suite"]))}
        grouped[run_label(whole)].append(whole)
    return grouped


def table(out: Path) -> str:
    """Success per split, stage and task type from ``eval.db``."""
    from agentgym.store import Store

    store = Store(out / "eval.db", read_only=True)
    types, lines = task_types(), type_columns("run")
    for label, runs in eval_runs(store).items():
        won: dict[str, list[bool]] = defaultdict(list)
        for row in (row for run in runs for row in store.episode_rows(run["id"])):
            won[types[row["task_id"]]].append(bool(row["success"]))
        cells = [f"{sum(won[k])}/{len(won[k])}" for k in TASK_TYPES]
        every = [w for k in TASK_TYPES for w in won[k]]
        share = 100 * sum(every) / max(len(every), 1)
        lines.append(f"| {label} | " + " | ".join(cells)
                     + f" | {sum(every)}/{len(every)} ({share:.1f}%) |")  # fmt: skip
    store.close()
    return "\n".join(lines)


LOSS_MODES = ("take/put loop", "stuck on a no-op", "go-to cycle", "searching")


def failure_mode(actions: list[str], observations: list[str]) -> str:
    """Why a lost episode was lost, read from its last steps (first rule that holds):

    ``take/put loop``    the same object taken twice and put twice in the last 12 commands;
    ``stuck on a no-op`` 3 of the last 5 commands answered ``Nothing happens.`` (a greedy policy
                         whose bounded prompt no longer changes repeats itself);
    ``go-to cycle``      the last 10 commands hold 6 ``go to`` of at most 3 places;
    ``searching``        anything else: still going somewhere new at the turn limit.
    """
    last = actions[-12:]
    for obj in {" ".join(a.split()[1:3]) for a in last if a.startswith("take ")}:
        takes = sum(a.startswith(f"take {obj} ") for a in last)
        puts = sum(a.startswith(f"put {obj} ") for a in last)
        if takes >= 2 and puts >= 2:
            return "take/put loop"
    if sum(o.startswith(NOTHING_HAPPENS) for o in observations[-5:]) >= 3:
        return "stuck on a no-op"
    goes = [a for a in actions[-10:] if a.startswith("go to ")]
    if len(goes) >= 6 and len(set(goes)) <= 3:
        return "go-to cycle"
    return "searching"


def losses(out: Path) -> str:
    """Lost episodes per run of ``eval.db``, by :func:`failure_mode` and task type."""
    from agentgym.store import Store

    store = Store(out / "eval.db", read_only=True)
    types, lines = task_types(), type_columns("run", "mode")
    for label, runs in eval_runs(store).items():
        count: Counter[tuple[str, str]] = Counter()
        for e in (e for run in runs for e in store.episodes(run["id"])):
            if not e.success:
                mode = failure_mode([s.action for s in e.steps], [s.observation for s in e.steps])
                count[mode, types[e.task_id]] += 1
        if not count:  # nothing lost yet: no rows of zeros
            continue
        for mode in LOSS_MODES:
            cells = [str(count[mode, k]) for k in TASK_TYPES]
            total = sum(count[mode, k] for k in TASK_TYPES)
            lines.append(f"| {label} | {mode} | " + " | ".join(cells)
                         + f" | {total} |")  # fmt: skip
    store.close()
    return "\n".join(lines)


def on_policy(out: Path, history: int = 2, notes: str | None = None) -> str:
    """How often each evaluated run's commands are the searcher's, in the run's own episodes:
    every state it reached is replayed and labelled (:func:`~agentgym.agents.context.relabel_rows`),
    counted apart in won and lost episodes and at decision states (:func:`is_decision`). The
    searcher is one good policy among several, so this is a floor on a command being right;
    what it shows is the gap between the learner's states and the demonstrations' (teacher-
    forced agreement: the ``agree`` stage)."""
    from agentgym.agents.context import relabel_rows
    from agentgym.envs.household.searcher import next_command
    from agentgym.store import Store

    store = Store(out / "eval.db", read_only=True)
    lines = markdown_header("run", "won episodes", "lost episodes", "decision states")
    tasks: dict[str, dict[str, Task]] = {}
    for label, runs in eval_runs(store).items():
        suite = runs[0]["suite"]
        if suite not in tasks:
            tasks[suite] = {t.id: t for t in TaskSuite.load(suite)}
        agree: dict[str, list[bool]] = defaultdict(list)
        for e in (e for run in runs for e in store.episodes(run["id"])):
            actions = [s.action for s in e.steps]
            task = tasks[suite][e.task_id]
            for row in relabel_rows(HouseholdEnv(), task, actions, next_command, history, notes):
                same = row["learner"] == row["messages"][1]["content"]
                agree["won episodes" if e.success else "lost episodes"].append(same)
                if is_decision(row):
                    agree["decision states"].append(same)
        cells = [f"{sum(v)}/{len(v)} ({100 * sum(v) / max(len(v), 1):.1f}%)"
                 for v in (agree["won episodes"], agree["lost episodes"], agree["decision states"])]  # fmt: skip
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    store.close()
    return "\n".join(lines)


def successes(
    out: Path, stage: str, dtype: str = "float32", unstick: float | None = None
) -> dict[str, bool]:
    """Task id -> success of ``stage``'s runs in ``dtype`` (and ``unstick``, None: greedy
    throughout) on both valid splits, from ``eval.db``. A run is the stage's by the last two
    parts of its checkpoint's path (``rl-1/final``, ``checkpoints/NAME``), so runs stored from
    a checkout at another path still pair."""
    from agentgym.store import Store

    store = Store(out / "eval.db", read_only=True)
    won: dict[str, bool] = {}
    wanted = Path(checkpoint(out, stage)).parts[-2:]  # a checkout elsewhere stores another root
    for run in store.runs():
        _, model, query = split_spec(str(run["agent"]))
        if (
            Path(model).parts[-2:] == wanted
            and query.get("dtype", "float32") == dtype
            and query.get("unstick") == (None if unstick is None else f"{unstick:g}")
        ):
            won |= {r["task_id"]: bool(r["success"]) for r in store.episode_rows(run["id"])}
    store.close()
    return won


def versus(
    out: Path, stage: str, against: str, against_out: Path | None = None, dtype: str = "float32"
) -> str:
    """Two checkpoints paired per task, greedy in ``dtype``: ``stage`` from ``out/eval.db``
    against ``against`` from ``against_out/eval.db`` (default the same store), per valid
    split and both: tasks won by both and by one only, the difference with a normal 95%
    interval over the paired tasks, and the exact McNemar p (a binomial test of the tasks only
    one won)."""
    from scipy.stats import binomtest

    from experiments.results import mean_interval

    a, b = successes(out, stage, dtype), successes(against_out or out, against, dtype)
    lines = markdown_header("split", "tasks", "A", "B", "both", "only A", "only B", "A - B [95%]",
                            "McNemar p")  # fmt: skip
    ids = {split: {t.id for t in TaskSuite.load(f"household/{split}")} for split in SPLITS}
    ids["both"] = set().union(*ids.values())
    for split, split_ids in ids.items():
        shared = sorted(set(a) & set(b) & split_ids)
        if not shared:
            continue
        only_a = sum(a[t] and not b[t] for t in shared)
        only_b = sum(b[t] and not a[t] for t in shared)
        m, lo, hi = mean_interval([float(a[t]) - float(b[t]) for t in shared])
        p = binomtest(only_a, only_a + only_b).pvalue if only_a + only_b else 1.0
        lines.append(f"| {split} | {len(shared)} | {sum(a[t] for t in shared)} | "
                     f"{sum(b[t] for t in shared)} | {sum(a[t] and b[t] for t in shared)} | "
                     f"{only_a} | {only_b} | {m:+.1%} [{lo:+.1%}, {hi:+.1%}] | {p:.2g} |")  # fmt: skip
    return "\n".join(lines)


def compare(
    out: Path,
    seeds: list[int],
    dtype: str = "float32",
    sft_stage: str = "sft",
    unstick: float | None = None,
    split: str | None = None,
) -> str:
    """The primary figure: per seed, RL minus SFT success paired per task over the tasks both
    played (274 when complete), every arm evaluated in ``dtype`` and with ``unstick``; the
    t-interval of those means over the seeds. ``sft_stage`` is where RL started: the sft stage,
    or a kept copy's folder (``rl --sft-checkpoint``). ``split`` (``valid_unseen``): that
    split's tasks alone, a secondary figure."""
    from experiments.results import t_interval

    sft = successes(out, sft_stage, dtype, unstick)
    if split is not None:
        ids = {t.id for t in TaskSuite.load(f"household/{split}")}
        sft = {t: won for t, won in sft.items() if t in ids}
    lines, diffs = [], []
    for seed in seeds:
        rl = successes(out, f"rl-{seed}", dtype, unstick)
        shared = sorted(set(sft) & set(rl))
        if not shared:
            lines.append(f"seed {seed}: not evaluated")
            continue
        d = sum(rl[t] - sft[t] for t in shared) / len(shared)
        wins = sum(rl[t] and not sft[t] for t in shared)
        losses = sum(sft[t] and not rl[t] for t in shared)
        diffs.append(d)
        lines.append(f"seed {seed}: {100 * d:+.1f} points on {len(shared)} tasks "
                     f"(RL only {wins}, SFT only {losses})")  # fmt: skip
    if len(diffs) >= 2:
        m, lo, hi = t_interval(diffs)
        lines.append(f"RL - SFT over {len(diffs)} seeds: {100 * m:+.1f} [{100 * lo:+.1f}, "
                     f"{100 * hi:+.1f}] points (95% t-interval)")  # fmt: skip
    return "\n".join(lines)


def progress(out: Path) -> str:
    """Steps done per training run in ``train.db``: loss and wall seconds per step."""
    from agentgym.store import Store

    if not (out / "train.db").is_file():
        return "no training run yet"
    store = Store(out / "train.db", read_only=True)
    lines = []
    for run in store.runs():
        by_step: dict[int, dict[str, float]] = defaultdict(dict)
        for m in store.train_metrics(run["id"]):
            by_step[int(m["step"])][m["name"]] = float(m["value"])
        for step, m in sorted(by_step.items()):
            loss = m.get("nll", m.get("success", float("nan")))
            lines.append(f"{run['name']} step {step}: {loss:.3f} ({m.get('step_s', 0):.0f} s)")
    return "\n".join(lines)


# ============================================================================ agree
def is_decision(row: dict[str, Any]) -> bool:
    """Whether a ``take`` or ``put`` was admissible at the row's step: a state where the policy
    must see whether what is here (or in hand) is what the task wants."""
    admissible = row["messages"][0]["content"].rsplit("Admissible actions: [", 1)[-1]
    return "take " in admissible or "put " in admissible


def verb_of(row: dict[str, Any]) -> str:
    """The row's command verb; a ``go to`` at a decision (:func:`is_decision`) is told apart:
    ``go to, not take/put``."""
    command = row["messages"][1]["content"]
    if not command.startswith("go to"):
        return command.split()[0]
    return "go to, not take/put" if is_decision(row) else "go to"


def agreement(out: Path, stage: str, args: argparse.Namespace) -> str:
    """Teacher-forced imitation: on the searcher's own won episodes of the first ``--limit``
    valid_unseen tasks, how often the checkpoint's greedy command is the searcher's, per verb.
    A closed-loop episode needs nearly every step right (0.97 per step over 20 steps is 54%);
    this says which commands are not, without the compounding of an eval."""
    from agentgym.llm.engine import LocalEngine, SamplingSpec

    engine = LocalEngine(checkpoint(out, stage), max_batch_size=args.concurrency)
    rows: list[dict[str, Any]] = []
    for task in list(TaskSuite.load("household/valid_unseen"))[: args.limit or 16]:
        rows += searcher_rows(task, args.history, 0.0, args.seed, args.notes) or []
    prompts = [engine.render(r["messages"][:1], None) for r in rows]
    gens = engine.generate_batch(prompts, SamplingSpec(max_tokens=16, stop=("\n",)))
    engine.close()
    right: dict[str, list[bool]] = defaultdict(list)
    for row, gen in zip(rows, gens, strict=True):
        right[verb_of(row)].append(gen.text.strip() == row["messages"][1]["content"])
    every = [ok for oks in right.values() for ok in oks]
    lines = [f"{verb}: {sum(oks)}/{len(oks)}" for verb, oks in sorted(right.items())]
    return "\n".join(
        [*lines, f"all: {sum(every)}/{len(every)} ({100 * sum(every) / len(every):.1f}%)"]
    )


KEPT = ("adapter_config.json", "adapter_model.safetensors")
"""What a kept checkpoint holds: the adapters alone; the base model's tokenizer serves them and
no optimizer state is kept."""


def keep(out: Path, stage: str, to: Path) -> Path:
    """Copy ``stage``'s adapters to ``to`` with the base model named ``smollm2`` (resolved on
    any machine by ``agentgym model fetch smollm2``), not this machine's cache path."""
    import shutil

    from experiments.run_snapshot import name_base

    source = Path(checkpoint(out, stage))
    to.mkdir(parents=True, exist_ok=True)
    for name in KEPT:
        shutil.copyfile(source / name, to / name)
    name_base(to, MODEL)
    return to


def carry(stage: str, out: Path, to: Path) -> dict[str, Any]:
    """``snapshot``: the stores of ``out`` and the newest checkpoint of every training folder
    (``sft``, ``rl-SEED``) into ``to``, to commit; ``restore``: back into ``out`` on a new
    machine, where the stage's own command then resumes (:mod:`experiments.run_snapshot`)."""
    from experiments import run_snapshot

    if stage == "restore":
        return run_snapshot.restore(to, out)
    training = sorted(p.name for p in out.glob("*") if p.name == "sft" or p.name.startswith("rl-"))
    return run_snapshot.snapshot(out, to, training, base=MODEL)


# ============================================================================ cli
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    stages = ["data", "sft", "rl", "eval", "agree", "dagger", "table", "losses", "compare",
              "versus", "progress", "onpolicy", "keep", "snapshot", "restore"]  # fmt: skip
    p.add_argument("stage", choices=stages)
    p.add_argument("--out", type=Path, default=Path("runs/household"))
    p.add_argument("--history", type=int, default=2, help="past steps in the bounded prompt")
    p.add_argument("--notes", default=None,
                   help="notes line in the bounded prompt (household), in data, rl and eval")  # fmt: skip
    p.add_argument("--episodes", type=int, default=240, help="searcher episodes for SFT")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--types", nargs="+", choices=list(SHORT.values()), default=list(SHORT.values()),
                   help="dagger: draw the learner's episodes from these task types only")  # fmt: skip
    p.add_argument("--stutter", type=float, default=0.0,
                   help="data: chance of repeating a `go to` in the demonstrations' history")  # fmt: skip
    p.add_argument("--lora-r", type=int, default=16)
    p.add_argument("--lora-layers", type=int, default=8)
    p.add_argument("--sft-steps", type=int, default=96)
    p.add_argument("--sft-batch", type=int, default=8)
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--sft-lr", type=float, default=1e-3)
    p.add_argument("--save-every", type=int, default=8)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="rl, compare")
    p.add_argument("--rl-algo", default="gigpo")
    p.add_argument("--sft-checkpoint", type=Path, default=None,
                   help="rl, compare: RL starts from this adapter folder (a kept copy), not "
                        "OUT/sft/final")  # fmt: skip
    p.add_argument("--rl-steps", type=int, default=8)
    p.add_argument("--rl-tasks", type=int, default=4, help="tasks per RL step")
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--rl-lr", type=float, default=5e-5)
    p.add_argument("--stage", dest="eval_stage", default="sft",
                   help="eval, agree, dagger, keep: base, sft, rl-SEED, sft/step-N, or an "
                   "adapter folder")  # fmt: skip
    p.add_argument("--against", default=None,
                   help="versus: the checkpoint --stage is paired with (as --stage takes it)")  # fmt: skip
    p.add_argument("--against-out", type=Path, default=None,
                   help="versus: the run folder whose eval.db holds --against (default --out)")  # fmt: skip
    p.add_argument("--to", type=Path, default=None,
                   help="keep: the folder to copy to; snapshot, restore: the snapshot's folder "
                        "in the git tree")  # fmt: skip
    p.add_argument("--limit", type=int, default=None, help="eval: first N tasks of each split")
    p.add_argument("--splits", nargs="+", choices=SPLITS, default=list(SPLITS), help="eval")
    p.add_argument("--concurrency", type=int, default=8, help="eval: episodes at a time")
    p.add_argument("--shards", type=int, default=1,
                   help="dagger, eval: eval processes side by side (one per core)")  # fmt: skip
    p.add_argument("--threads", type=int, default=1, help="torch threads of sft, rl and eval")
    p.add_argument("--dtype", choices=DTYPES, default="float32",
                   help="eval, dagger, compare: the engine's precision (hf:...&dtype=); "
                        "sft, rl: the trainer's (bf16 autocast over float32 weights)")  # fmt: skip
    p.add_argument("--device", default="cpu", help="sft, rl: cpu, cuda or auto")
    p.add_argument("--unstick", type=float, default=None,
                   help="eval, compare: sample at this temperature after two identical steps "
                        "(hf:...&unstick=); default greedy throughout")  # fmt: skip
    return p


def main(argv: list[str] | None = None) -> None:
    p = parser()
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.stage == "data":
        stats = make_data(
            args.out, args.episodes, args.history, args.seed, args.stutter, args.notes
        )
        print(json.dumps(stats, indent=1))
    elif args.stage == "sft":
        make_data(args.out, args.episodes, args.history, args.seed, args.stutter, args.notes)
        print(run_sft(args.out, args))
    elif args.stage == "rl":
        for seed in args.seeds:
            print(run_rl(args.out, args, seed), flush=True)
    elif args.stage == "eval":
        run_eval(args.out, args.eval_stage, args)
    elif args.stage == "compare":
        sft = str(args.sft_checkpoint or "sft")
        print(compare(args.out, args.seeds, args.dtype, sft, args.unstick))
        for split in SPLITS:  # the secondary figures
            print(f"\n{split} alone:")
            print(compare(args.out, args.seeds, args.dtype, sft, args.unstick, split))
    elif args.stage == "versus":
        if args.against is None:
            p.error("versus needs --against CHECKPOINT (the stage --stage is paired with)")
        print(versus(args.out, args.eval_stage, args.against, args.against_out, args.dtype))
    elif args.stage == "losses":
        print(losses(args.out))
    elif args.stage == "progress":
        print(progress(args.out))
    elif args.stage == "onpolicy":
        print(on_policy(args.out, args.history, args.notes))
    elif args.stage == "agree":
        print(agreement(args.out, args.eval_stage, args))
    elif args.stage == "dagger":
        print(json.dumps(run_dagger(args.out, args.eval_stage, args), indent=1))
    elif args.stage == "keep":
        if args.to is None:
            p.error("keep needs --to FOLDER")
        print(keep(args.out, args.eval_stage, args.to))
    elif args.stage in ("snapshot", "restore"):
        if args.to is None:
            p.error(f"{args.stage} needs --to FOLDER (the snapshot in the git tree)")
        print(json.dumps(carry(args.stage, args.out, args.to), indent=1))
    else:
        print(table(args.out))


if __name__ == "__main__":
    main()
