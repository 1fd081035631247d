"""SFT then GRPO on Clarify with a tiny model on this CPU: held-out success before SFT, after SFT,
after RL (seeds x Wilson intervals), and rollout throughput with batched generation vs batch 1.

    python -m experiments.train_demo                # full: 3 seeds
    python -m experiments.train_demo --quick        # one seed, fewer steps
    python -m experiments.train_demo --env Household-v0   # 16 turns
    python -m experiments.train_demo --model smollm2 --env KBQA-v0 --quick   # experiments.train_real

The demo's task distribution is chosen for a 2-layer model trained for minutes from random
weights: product tasks of ``clarify/train`` and ``clarify/test`` narrowed to ``--candidates``
candidates (the target and distractors drawn by a seeded RNG; every pair still separable; the
held-out split brings products never seen in training), renamed ``P1``..``Pk`` in listing order.
Opaque ten-digit ids are beyond such a model: it has to copy them from its context, and ids of
held-out tasks are tokens it never produced in training (with one token per task-specific id, or
with a 40-id pool shared by both splits, it did not learn them). The model is built like ``agentgym model init`` but its tokenizer is trained on these
observations. SFT adds a language-modelling loss on the observations (``sft.context_weight``).
Evaluation samples at temperature 1, the policy RL optimises. Figures are noisy: the machine is
shared.

``--env Household-v0`` runs the same stages on ``examine``/``put`` tasks: held out, the rooms of
every fourth small floorplan as they are; for training, every other floorplan's tasks in rooms
narrowed to 5..``--max-receptacles`` receptacles (:func:`narrow_room`: eleven small floorplans
are layouts a tiny model memorises). SFT data is the observation-grounded searcher
(``agentgym.envs.household.searcher``: visits receptacles in listing order, takes the object
when seen), not the env's expert, whose first ``go to`` uses the hidden scene; every ``type N``
name is one token. Figures: docs/results.md.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

import agentgym
from agentgym.episode import Episode
from agentgym.metrics import wilson_interval
from agentgym.rollout import rollout
from agentgym.task import Task, TaskSuite, write_tasks
from agentgym.train.config import TrainConfig, set_dotted
from agentgym.train.rollout import Job, derive_seed
from agentgym.train.trainer import Trainer

NAME = re.compile(r"\b[a-z]+ [0-9]+\b")
"""A receptacle or object name as Household prints it (``cabinet 3``)."""


# ============================================================================ tasks and model
def narrow(task: Task, k: int, max_turns: int, seed: int) -> Task:
    """``task`` with only its target and ``k - 1`` seeded distractors as candidates, renamed
    ``P1``..``Pk`` in listing order (the target's place stays random)."""
    rng = random.Random(f"{seed}:{task.id}")
    candidates, target = task.config["candidates"], task.gold["target"]
    keep_ids = {
        target,
        *(c["id"] for c in rng.sample([c for c in candidates if c["id"] != target], k - 1)),
    }
    kept = [c for c in candidates if c["id"] in keep_ids]
    new_ids = {c["id"]: f"P{i}" for i, c in enumerate(kept, 1)}
    kept = [{**c, "id": new_ids[c["id"]]} for c in kept]
    n = str(len(candidates))
    out = task.model_copy(
        update={
            "id": f"{task.id}-k{k}",
            "config": {**task.config, "candidates": kept, "max_turns": max_turns},
            "gold": {**task.gold, "target": new_ids[target]},
            "instruction": task.instruction.replace(n, str(k), 1),
        }
    )
    agentgym.make("Clarify-v0").unwrapped.validate_task(out)
    return out


def demo_tasks(directory: Path, k: int, max_turns: int) -> dict[str, Path]:
    """Narrowed product tasks of both splits, written as suites under ``directory``."""
    paths = {}
    for split in ("train", "test"):
        tasks = [
            narrow(t, k, max_turns, 0)
            for t in TaskSuite.load(f"clarify/{split}")
            if t.config["domain"] == "products"
        ]
        paths[split] = directory / f"{split}.jsonl"
        write_tasks(paths[split], tasks)
    return paths


def household_tasks(
    directory: Path, max_receptacles: int, max_turns: int, variants: int = 1
) -> dict[str, Path]:
    """``examine`` and ``put`` tasks of ``household/train``, split by floorplan: the held-out
    split is every fourth floorplan with rooms of at most ``max_receptacles`` receptacles, as
    they are; training uses every other floorplan, each task's room narrowed ``variants`` times
    (:func:`narrow_room`) to at most ``max_receptacles``, as many layouts as tasks."""
    env = agentgym.make("Household-v0")
    tasks = [t for t in TaskSuite.load("household/train") if t.tags[0] in ("examine", "put")]
    small = [t for t in tasks if _room_size(env, t) <= max_receptacles]
    held_out = set(sorted({t.config["floorplan"] for t in small})[3::4])
    test = [_with_turns(t, max_turns) for t in small if t.config["floorplan"] in held_out]
    train = [
        _with_turns(narrow_room(t, max_receptacles, v), max_turns)
        for t in tasks
        if t.config["floorplan"] not in held_out
        for v in range(variants)
    ]
    if not test or not train:  # ALFWorld's smallest put/examine rooms have 7 receptacles
        raise ValueError(
            f"rooms of at most {max_receptacles} receptacles left {len(train)} training and "
            f"{len(test)} held-out tasks; use a larger --max-receptacles (10 gives 43 held-out)"
        )
    paths = {"train": directory / "train.jsonl", "test": directory / "test.jsonl"}
    write_tasks(paths["train"], train)
    write_tasks(paths["test"], test)
    return paths


def _room_size(env: Any, task: Task) -> int:
    return int(env.reset(options={"task": task})[0].split("\n")[0].count(", ") + 1)


def _with_turns(task: Task, max_turns: int) -> Task:
    return task.model_copy(update={"config": {**task.config, "max_turns": max_turns}})


def narrow_room(task: Task, max_receptacles: int, variant: int) -> Task:
    """``task`` in a room of its floorplan's receptacles cut to a seeded size in
    [5, ``max_receptacles``]: it keeps one receptacle holding the goal object, one of the
    destination type (``put``) or holding the lamp (``examine``), and seeded others; what lay
    in a dropped receptacle is gone. Eleven small floorplans are too few layouts: a tiny model
    memorises them (it then goes to receptacles held-out rooms do not have)."""
    from agentgym.envs.household.config import HouseholdConfig, type_of
    from agentgym.envs.household.goals import parse_goal

    rng = random.Random(f"{variant}:{task.id}")
    scene = HouseholdConfig.model_validate(task.config).parsed()
    goal, names = parse_goal(task.instruction), list(scene.receptacles)
    holding = [
        r for r, objs in scene.contents.items() if any(type_of(o) == goal.object for o in objs)
    ]
    keep = {rng.choice(sorted(holding))}
    if goal.lamp:
        placed = {
            **scene.contents,
            **{r: scene.contents.get(r, []) + o for r, o in scene.floor.items()},
        }
        keep.add(
            rng.choice(
                sorted(r for r, o in placed.items() if any(type_of(x) == goal.lamp for x in o))
            )
        )
    else:
        keep.add(rng.choice(sorted(r for r in names if type_of(r) == goal.receptacle)))
    size = rng.randint(min(5, len(names)), min(max_receptacles, len(names)))
    rest = [r for r in names if r not in keep]
    keep |= set(rng.sample(rest, max(0, size - len(keep))))
    spec = ", ".join(r + "*" * o for r, o in zip(names, scene.openable, strict=True) if r in keep)
    config = {k: v for k, v in task.config.items() if k != "floorplan"}
    groups = [[r for r in group if r in keep] for group in scene.shared]
    config |= {
        "receptacles": spec,
        "contents": _placements(scene.contents, keep),
        "floor": _placements(scene.floor, keep),
        "shared": "; ".join(", ".join(g) for g in groups if len(g) > 1),  # the floorplan's spots
    }
    out = task.model_copy(update={"id": f"{task.id}-r{variant}", "config": config})
    agentgym.make("Household-v0").unwrapped.validate_task(out)
    return out


def _placements(placed: dict[str, list[str]], keep: set[str]) -> str:
    return "; ".join(f"{r}: {', '.join(objs)}" for r, objs in placed.items() if r in keep and objs)


def searcher_episodes(tasks: list[Task]) -> list[Episode]:
    """Household's searcher (which acts on what it has seen, unlike the env's all-knowing
    expert, whose first ``go to`` cannot be imitated from the room overview) on ``tasks``."""
    from agentgym.envs.household.searcher import SearchAgent

    env = agentgym.make("Household-v0")
    return [rollout(env, SearchAgent(), task, seed=0) for task in tasks]


def searcher_data(directory: Path, suites: dict[str, Path]) -> Path:
    """The searcher's training episodes as JSONL for ``sft.data``."""
    path = directory / "searcher.jsonl"
    episodes = searcher_episodes(list(TaskSuite.load(suites["train"])))
    path.write_text("".join(e.model_dump_json() + "\n" for e in episodes), encoding="utf-8")
    return path


def tokenizer_texts(env_id: str, tasks: list[Task]) -> list[str]:
    """The tokenizer's corpus: Clarify's first observations (they hold every word of an episode);
    Household's every searcher observation and action (rooms are revealed step by step)."""
    if env_id == "Clarify-v0":
        env = agentgym.make(env_id)
        return [env.reset(options={"task": task})[0] for task in tasks]
    return [
        text
        for ep in searcher_episodes(tasks)
        for text in (
            ep.first_observation,
            *(t for s in ep.steps for t in (s.action, s.observation)),
        )
    ]


def demo_model(
    directory: Path,
    suites: dict[str, Path],
    hidden: int,
    layers: int,
    seed: int,
    env_id: str,
    extra_texts: Sequence[str] = (),
    name_tokens: bool = False,
) -> Path:
    """A tiny Llama (as ``agentgym model init``) with a tokenizer fitted to the demo's texts
    (and to ``extra_texts``, e.g. early experience's next states and rationales).
    ``name_tokens``: every ``type N`` name in them (``drawer 2``) becomes one token, so going
    somewhere seen is copying one token (Household; whether it helps: docs/results.md)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from agentgym.llm.tiny import train_tokenizer

    tasks = [t for p in suites.values() for t in TaskSuite.load(p)]
    texts = [*tokenizer_texts(env_id, tasks), *extra_texts]
    tokenizer = train_tokenizer(iter(texts), 1024)
    if env_id == "Clarify-v0":
        tokenizer.add_tokens(sorted({c["id"] for t in tasks for c in t.config["candidates"]}))
    if name_tokens:
        tokenizer.add_tokens(sorted({m for text in texts for m in NAME.findall(text)}))
    torch.manual_seed(seed)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=2048,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            tie_word_embeddings=True,
        )
    )
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


# ============================================================================ one seed
def config(model: Path, suites: dict[str, Path], out: Path, args: Any, **over: Any) -> TrainConfig:
    """The demo's trainer config (``over``: dotted overrides)."""
    return trainer_config(
        model, suites, out, args.env, args, **{"env.eval_limit": args.eval_tasks, **over}
    )


def trainer_config(
    model: Path, suites: dict[str, Path], out: Path, env_id: str, args: Any, **over: Any
) -> TrainConfig:
    """A tiny-model trainer config on ``suites`` (train/test paths) of ``env_id``, sized by
    ``args`` (tasks_per_step, group_size, max_turns, sft_lr, eval_samples, threads); ``over``:
    dotted overrides. The method experiments build theirs from it too."""
    data: dict[str, Any] = {
        "model": {"path": str(model)},
        "env": {
            "id": env_id,
            "suite": str(suites["train"]),
            "eval_suite": str(suites["test"]),
            "system_prompt": False,
        },
        "rollout": {
            "tasks_per_step": args.tasks_per_step,
            "group_size": args.group_size,
            "max_turns": args.max_turns,
            "max_new_tokens": 12 if env_id == "Clarify-v0" else 16,
        },
        "sft": {"batch_size": 16, "context_weight": 1.0},
        "optim": {"lr": args.sft_lr, "micro_batch_size": 16},
        "eval_temperature": 1.0,
        "eval_samples": args.eval_samples,
        "out_dir": str(out),
        "resume": False,
        "threads": args.threads,
    }
    for key, value in over.items():
        set_dotted(data, key, value)
    return TrainConfig.model_validate(data)


def run_seed(seed: int, args: Any, root: Path, suites: dict[str, Path]) -> dict[str, Any]:
    """Before SFT, after SFT, after GRPO on held-out tasks, for one seed."""
    household = args.env == "Household-v0"
    model = demo_model(
        root / f"model-{seed}", suites, args.hidden, args.layers, seed, args.env,
        name_tokens=household,
    )  # fmt: skip
    data = "expert" if args.env == "Clarify-v0" else str(root / "searcher.jsonl")
    sft = Trainer(
        config(
            model,
            suites,
            root / f"sft-{seed}",
            args,
            seed=seed,
            steps=args.sft_steps,
            **{"algo.name": "sft", "sft.data": data},
        )
    )
    before = sft.evaluate()
    started = time.perf_counter()
    sft.run()
    sft_s = time.perf_counter() - started
    after_sft = sft.evaluate()
    sft.close()
    rl = Trainer(
        config(
            root / f"sft-{seed}" / "final",
            suites,
            root / f"rl-{seed}",
            args,
            seed=seed,
            steps=args.rl_steps,
            **{"algo.name": "grpo", "optim.lr": args.rl_lr, "algo.clip_high": 0.28},
        )
    )
    started = time.perf_counter()
    rl.run()
    rl_s = time.perf_counter() - started
    after_rl = rl.evaluate()
    rl.close()
    return {
        "seed": seed,
        "before": before,
        "sft": after_sft,
        "rl": after_rl,
        "sft_s": sft_s,
        "rl_s": rl_s,
        "rl_history": rl.history,
    }


def throughput(
    model: Path, suites: dict[str, Path], args: Any, root: Path
) -> list[tuple[int, float, float]]:
    """(batch size, episodes/s, generated tokens/s) of the same rollouts, batched and one by one."""
    rows = []
    for batch in (1, args.group_size * args.tasks_per_step):
        cfg = config(model, suites, root / "tp", args, **{"rollout.max_batch_size": batch})
        trainer = Trainer(cfg)
        tasks = trainer.train_tasks()[: args.tasks_per_step]
        jobs = [
            Job(t, t.id, k, derive_seed(0, t.id, k)) for t in tasks for k in range(args.group_size)
        ]
        _, stats = trainer.rollout(jobs, 0, 1.0)
        rows.append((batch, stats.episodes_per_s, stats.tokens_per_s))
        trainer.close()
    return rows


# ============================================================================ report
def pooled(results: list[dict[str, Any]], stage: str) -> tuple[float, float, float, int]:
    wins = sum(round(r[stage]["eval_success"] * r[stage]["eval_n"]) for r in results)
    n = sum(int(r[stage]["eval_n"]) for r in results)
    lo, hi = wilson_interval(wins, n)
    return wins / n if n else 0.0, lo, hi, n


def report(
    results: list[dict[str, Any]], tp: list[tuple[int, float, float]], console: Console
) -> None:
    table = Table(title="Clarify (narrowed product tasks), held-out success, sampled at T=1")
    for col in ("stage", *(f"seed {r['seed']}" for r in results), "pooled", "95% Wilson", "vs SFT"):
        table.add_column(col)
    base = pooled(results, "sft")[0]
    for stage, label in (("before", "before SFT"), ("sft", "after SFT"), ("rl", "after GRPO")):
        p, lo, hi, n = pooled(results, stage)
        per_seed = [f"{r[stage]['eval_success']:.1%}" for r in results]
        ratio = f"{p / base:.2f}x" if base else "-"
        table.add_row(label, *per_seed, f"{p:.1%} (n={n})", f"[{lo:.1%}, {hi:.1%}]", ratio)
    console.print(table)
    (p_sft, *_, n_sft), (p_rl, *_, n_rl) = pooled(results, "sft"), pooled(results, "rl")
    se = math.sqrt(p_sft * (1 - p_sft) / n_sft + p_rl * (1 - p_rl) / n_rl) if n_sft else 0.0
    gains = sum(r["rl"]["eval_success"] > r["sft"]["eval_success"] for r in results)
    console.print(
        f"GRPO - SFT: {p_rl - p_sft:+.1%} (95% CI {p_rl - p_sft - 1.96 * se:+.1%} .. "
        f"{p_rl - p_sft + 1.96 * se:+.1%}, two-proportion normal approximation); "
        f"GRPO above SFT in {gains} of {len(results)} seeds"
    )
    tt = Table(title="Rollout throughput (same episodes)")
    for col in ("generation batch", "episodes/s", "tokens/s", "vs batch 1"):
        tt.add_column(col)
    for batch, eps, toks in tp:
        tt.add_row(str(batch), f"{eps:.2f}", f"{toks:.0f}", f"{toks / tp[0][2]:.1f}x")
    console.print(tt)
    mean_sft = sum(r["sft_s"] for r in results) / len(results)
    mean_rl = sum(r["rl_s"] for r in results) / len(results)
    console.print(
        f"time per seed: SFT {mean_sft:.0f}s, GRPO {mean_rl:.0f}s (shared machine, noisy)"
    )


def parse(argv: list[str] | None = None) -> Any:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--model",
        choices=["tiny"],
        default="tiny",
        help="tiny: from scratch; any other (smollm2): experiments.train_real",
    )
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="one seed, fewer steps (the test's run)")
    p.add_argument("--env", choices=["Clarify-v0", "Household-v0"], default="Clarify-v0")
    p.add_argument("--candidates", type=int, default=2, help="Clarify: candidates per task")
    p.add_argument("--max-receptacles", type=int, default=10, help="Household: room size")
    p.add_argument("--max-turns", type=int, help="default: Clarify 4, Household 16")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--sft-steps", type=int, default=300)
    p.add_argument("--sft-lr", type=float, default=5e-3)
    p.add_argument("--rl-steps", type=int, default=30)
    p.add_argument("--rl-lr", type=float, default=5e-4)
    p.add_argument("--tasks-per-step", type=int, default=8)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--eval-tasks", type=int, default=50)
    p.add_argument("--eval-samples", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    if args.max_turns is None:
        args.max_turns = 4 if args.env == "Clarify-v0" else 16
    if args.quick:
        args.seeds, args.sft_steps, args.rl_steps, args.eval_tasks = 1, 150, 6, 30
        args.tasks_per_step = 4
    return args


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--model", default="tiny")
    if pre.parse_known_args(argv)[0].model != "tiny":  # a pretrained model: train_real.py
        from experiments import train_real

        return train_real.main(train_real.parse(argv))
    args = parse(argv)
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.env == "Clarify-v0":
            suites = demo_tasks(root, args.candidates, args.max_turns)
        else:
            suites = household_tasks(root, args.max_receptacles, args.max_turns)
            searcher_data(root, suites)
        results = []
        for seed in range(args.seeds):
            results.append(run_seed(seed, args, root, suites))
            r = results[-1]
            console.print(
                f"seed {seed}: before {r['before']['eval_success']:.1%}, after SFT "
                f"{r['sft']['eval_success']:.1%}, after GRPO {r['rl']['eval_success']:.1%}"
            )
        tp = throughput(root / "sft-0" / "final", suites, args, root)
        report(results, tp, console)
    return results


if __name__ == "__main__":
    main()
