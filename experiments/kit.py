"""What the experiments share (a kit, not another experiment): the demo's task sets and tiny
model, the tiny-model trainer config every method harness starts from, and the flags and settings
that run a harness on a pretrained model instead.

Experiments import this module and :mod:`experiments.results` (tables and docs/results.md
sections), never each other as libraries.
"""

from __future__ import annotations

import argparse
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

import agentgym
from agentgym.episode import Episode
from agentgym.rollout import rollout
from agentgym.task import Task, TaskSuite, write_tasks
from agentgym.train.config import TrainConfig, set_dotted

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


# ============================================================================ trainer config
def demo_config(
    model: Path, suites: dict[str, Path], out: Path, args: Any, **over: Any
) -> TrainConfig:
    """The demo's trainer config: :func:`trainer_config` for ``args.env`` with its held-out limit
    (``over``: dotted overrides)."""
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
            "max_tokens": 12 if env_id == "Clarify-v0" else 16,
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


# ============================================================================ a pretrained model instead
def lora_settings(args: Any) -> dict[str, Any]:
    """LoRA r=``args.lora_r`` on every projection of the top ``args.lora_layers`` decoder layers
    (of ``args.model_layers``); the layers below stay frozen, so SFT caches their states."""
    return {
        "r": args.lora_r,
        "alpha": 2 * args.lora_r,
        "layers": list(range(args.model_layers - args.lora_layers, args.model_layers)),
        "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                           "down_proj"],
    }  # fmt: skip


def cpu_overrides(args: Any) -> dict[str, Any]:
    """A method harness's dotted overrides for a pretrained model (``--model``): LoRA on its top
    layers (:func:`lora_settings`), contexts of at most ``args.max_context`` tokens, small
    batches for a CPU, and no LM loss on observations (the model already reads text)."""
    return {
        "model.lora": lora_settings(args),
        "rollout.max_context_tokens": args.max_context,
        "sft.batch_size": args.sft_batch,
        "sft.context_weight": 0.0,
        "optim.micro_batch_size": args.micro_batch,
    }


def add_pretrained_flags(
    p: argparse.ArgumentParser,
    max_context: int | None,
    lora_r: int | None = 16,
    batches: bool = True,
) -> None:
    """The flags a method harness takes to run a pretrained model (``--model``) instead of its
    tiny one: what :func:`lora_settings` and :func:`cpu_overrides` read (``lora_r`` None: the
    harness has its own ``--lora-r``; ``batches`` False: its own batch flags; ``max_context``
    None: no rollouts, so no ``--max-context``)."""
    p.add_argument(
        "--model", default=None, help="a named model (smollm2) or checkpoint instead of tiny"
    )
    if lora_r is not None:
        p.add_argument("--lora-r", type=int, default=lora_r, help="with --model")
    p.add_argument("--lora-layers", type=int, default=8, help="with --model: the top N layers")
    p.add_argument("--model-layers", type=int, default=30, help="with --model (SmolLM2: 30)")
    if max_context is not None:
        p.add_argument("--max-context", type=int, default=max_context, help="with --model")
    if batches:
        p.add_argument("--sft-batch", type=int, default=8, help="with --model")
        p.add_argument("--micro-batch", type=int, default=2, help="with --model")


def pretrained_words(args: Any) -> str:
    """How a method harness's results name a ``--model`` run's model."""
    return (
        f"{args.model} with LoRA r={args.lora_r} on its top {args.lora_layers} layers, contexts "
        f"of at most {args.max_context} tokens"
    )
