"""Deterministic generator of the ``household`` suites from ALFRED's floor plans.

    python -m agentgym.envs.household.generate [--out tasks/household]

Splits mirror ALFWorld's: ``train`` 3,553 tasks and ``valid_seen`` 140 on the 96 training floor
plans, ``valid_unseen`` 134 on the 24 floor plans ALFRED holds out (1-6, 201-206, 301-306,
401-406), with ALFWorld's count of each task type per split. A scene keeps the floor plan's
receptacles; each object type the floor plan has goes, with probability ``KEEP``, as 1-2
instances (the goal object 1-3, two to four for pick-two) into random receptacles that can hold
it (ALFRED's ``canContain``), never already satisfying the goal. Every task is played by the
expert before it is written; its step count is the task's ``difficulty``.

Shared locations are the floor plan's own, not sampled: a task names its floor plan, whose
``shared`` groups in ``data/layouts.json`` are the receptacles with one pose in ALFRED's
``-openable.json``, the pose ALFWorld's problem writer makes their ``receptacleAtLocation``. So
every task of a floor plan has the same groups, as every ALFWorld game of it does, and each type
shares at its real rate: 16.0% of the 1,755 posed receptacles (drawer 28.1% of 474, shelf 27.8%
of 187, cabinet 17.2% of 436, tvstand 3 of 14, diningtable 3 of 43, microwave and dresser 2 of
30, sidetable 3 of 74, countertop 1 of 99; ``python -m agentgym.envs.household.layouts --rates``)
in 67 of the 120 floor plans. Receptacle types without a pose there (stove burners, coffee
machines, toasters ...) stand alone.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentgym.cache import sha256_file
from agentgym.envs.household.catalog import catalog
from agentgym.envs.household.config import APPLIANCE, HouseholdConfig, layouts, type_of
from agentgym.envs.household.engine import won
from agentgym.envs.household.goals import SHORT, Goal, TaskType
from agentgym.envs.household.scene import compile_scene
from agentgym.task import Task, write_manifest, write_tasks

ENV_ID = "agentgym/Household-v0"
SEED = 20240917
KEEP = 0.55
"""Chance that a non-goal object type of the floor plan appears in a scene."""
SPLITS: dict[str, dict[TaskType, int]] = {
    "train": {
        "pick_and_place_simple": 790,
        "pick_clean_then_place_in_recep": 650,
        "pick_heat_then_place_in_recep": 459,
        "pick_cool_then_place_in_recep": 533,
        "look_at_obj_in_light": 308,
        "pick_two_obj_and_place": 813,
    },
    "valid_seen": {
        "pick_and_place_simple": 35,
        "pick_clean_then_place_in_recep": 27,
        "pick_heat_then_place_in_recep": 16,
        "pick_cool_then_place_in_recep": 25,
        "look_at_obj_in_light": 13,
        "pick_two_obj_and_place": 24,
    },
    "valid_unseen": {
        "pick_and_place_simple": 24,
        "pick_clean_then_place_in_recep": 31,
        "pick_heat_then_place_in_recep": 23,
        "pick_cool_then_place_in_recep": 21,
        "look_at_obj_in_light": 18,
        "pick_two_obj_and_place": 17,
    },
}
"""Tasks per type and split: ALFWorld's numbers (3,553 / 140 / 134)."""
SHARED_LOCATIONS = "the floor plan's (data/layouts.json: receptacles with one -openable.json pose)"
"""Where a task's shared locations come from (they are not sampled: see the module docstring)."""
REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE = (
    "ALFRED floor plans (object types per room, receptacle instances) and ALFWorld's type tables "
    "(alfworld/alfworld: data/alfred.pddl, gen/constants.py), via ../shared/data/alfworld"
)


def floorplans(split: str, task_type: TaskType) -> list[str]:
    """Floor plans a split draws from whose room suits the task type (ALFRED's GOALS_VALID)."""
    raw = catalog().raw
    unseen = {f"FloorPlan{n}" for n in raw["unseen_floorplans"]}
    rooms = set(raw["goal_rooms"][task_type])
    return [
        name
        for name, plan in layouts().items()
        if plan["room"] in rooms and (name in unseen) == (split == "valid_unseen")
    ]


def choose_goal(rng: random.Random, plan: dict[str, Any], task_type: TaskType) -> Goal | None:
    """A goal the floor plan supports (object present, destination present and fitting)."""
    cat = catalog()
    objects = [o for o in plan["objects"] if o in cat.pickupable]
    rec_types = sorted({type_of(r.strip().rstrip("*")) for r in plan["receptacles"].split(",")})
    if task_type == "look_at_obj_in_light":
        lamps = [lp for lp in ("desklamp", "floorlamp") if lp in plan["objects"]]
        if not lamps or not objects:
            return None
        return Goal(task_type, rng.choice(objects), None, rng.choice(lamps))
    need = {
        "pick_clean_then_place_in_recep": cat.cleanable,
        "pick_heat_then_place_in_recep": cat.heatable,
        "pick_cool_then_place_in_recep": cat.coolable,
    }.get(task_type)
    appliance = APPLIANCE.get(task_type)
    if appliance is not None and appliance not in rec_types:
        return None
    pairs = [
        (o, r)
        for o in objects
        if need is None or o in need
        for r in rec_types
        if r != appliance and cat.fits(r, o) and _has_other_home(o, r, rec_types)
    ]
    if not pairs:
        return None
    o, r = rng.choice(pairs)
    return Goal(task_type, o, r)


def _has_other_home(obj: str, dest: str, rec_types: list[str]) -> bool:
    return any(catalog().fits(r, obj) for r in rec_types if r != dest)


def build_scene(rng: random.Random, plan: dict[str, Any], goal: Goal) -> dict[str, str]:
    """Place objects: goal objects away from the destination type, the rest anywhere they fit."""
    cat = catalog()
    receptacles = [r.strip().rstrip("*") for r in plan["receptacles"].split(",")]
    decor = {k.lower(): {t.lower() for t in v} for k, v in cat.raw["decor"].items()}
    placed: dict[str, list[str]] = {r: [] for r in receptacles}
    for otype in plan["objects"]:
        count = _count(rng, goal, otype)
        homes = [
            r
            for r in receptacles
            if (cat.fits(type_of(r), otype) or type_of(r) in decor.get(otype, ()))
            and not (otype == goal.object and type_of(r) == goal.receptacle)
        ]
        for i in range(1, count + 1 if homes else 1):
            placed[rng.choice(homes)].append(f"{otype} {i}")
    contents = "; ".join(f"{r}: {', '.join(objs)}" for r, objs in placed.items() if objs)
    return {"contents": contents}


def _count(rng: random.Random, goal: Goal, otype: str) -> int:
    if otype == goal.object:
        return (
            rng.randint(2, 4) if goal.task_type == "pick_two_obj_and_place" else rng.randint(1, 3)
        )
    if otype == goal.lamp:
        return 1
    if otype not in catalog().pickupable and otype not in _DECOR or rng.random() > KEEP:
        return 0
    return 1 if rng.random() < 0.7 else 2


_DECOR = {k.lower() for k in catalog().raw["decor"]}


def make_task(split: str, index: int, task_type: TaskType, seed: int) -> Task:
    """The ``index``-th task of a split: retried with new draws until the expert wins it."""
    plans = floorplans(split, task_type)
    for attempt in range(100):
        rng = random.Random(f"{seed}:{split}:{index}:{attempt}")
        name = rng.choice(plans)
        plan = layouts()[name]
        goal = choose_goal(rng, plan, task_type)
        if goal is None:
            continue
        config: dict[str, Any] = {
            "task_type": task_type,
            "object": goal.object,
            **({"receptacle": goal.receptacle} if goal.receptacle else {}),
            **({"lamp": goal.lamp} if goal.lamp else {}),
            "floorplan": name,
            **build_scene(rng, plan, goal),
        }
        task = Task(
            id=f"household-{split}-{index:04d}",
            env=ENV_ID,
            split=split,
            instruction=goal.sentence(rng.randrange(6)),
            config=config,
            tags=[SHORT[task_type], plan["room"].lower()],
        )
        steps = expert_steps(task)
        if steps is not None:
            return task.model_copy(update={"difficulty": steps})
    raise RuntimeError(f"no solvable {task_type} task for {split} #{index} after 100 draws")


def expert_steps(task: Task) -> int | None:
    """Steps the expert needs, or None when the scene is unusable (invalid, pre-solved, too long)."""
    from agentgym.envs.household.env import HouseholdEnv

    try:
        config = HouseholdConfig.model_validate(task.config)
    except ValueError:
        return None
    if won(compile_scene(config), compile_scene(config).initial_state()):
        return None
    env = HouseholdEnv()
    env.reset(seed=0, options={"task": task})
    for step in range(1, config.max_turns + 1):
        _, _, terminated, truncated, info = env.step(env.expert_action())
        if terminated or truncated:
            return step if info["success"] and step <= config.max_turns // 2 else None
    return None


def build_split(split: str, seed: int, seen: set[str]) -> list[Task]:
    """All tasks of a split, types interleaved; none repeats a scene and goal in ``seen``."""
    order = [t for t, n in SPLITS[split].items() for _ in range(n)]
    random.Random(f"{seed}:{split}:order").shuffle(order)
    tasks: list[Task] = []
    for i, task_type in enumerate(order):
        task, retry = make_task(split, i, task_type, seed), 0
        while json.dumps(task.config, sort_keys=True) in seen:
            retry += 1
            task = make_task(split, i, task_type, seed + retry).model_copy(update={"id": task.id})
        seen.add(json.dumps(task.config, sort_keys=True))
        tasks.append(task)
    return tasks


def manifest(out: Path, suites: dict[str, list[Task]], seed: int) -> dict[str, Any]:
    """Provenance and checksums of the written files."""
    files = sorted(f"{s}.jsonl" for s in suites)
    return {
        "generator": "agentgym.envs.household.generate",
        "env": ENV_ID,
        "seed": seed,
        "parameters": {"keep": KEEP, "splits": SPLITS, "shared_locations": SHARED_LOCATIONS},
        "counts": {s: len(t) for s, t in suites.items()},
        "task_types": {
            s: dict(Counter(t.config["task_type"] for t in ts)) for s, ts in suites.items()
        },
        "floorplans": {s: len({t.config["floorplan"] for t in ts}) for s, ts in suites.items()},
        "shared_locations": {s: _sharing(ts) for s, ts in suites.items()},
        "sources": [{"data": SOURCE, "licence": "MIT", "licence_file": "LICENSE-alfworld"}],
        "sha256": {f: sha256_file(out / f) for f in files},
    }


def _sharing(tasks: list[Task]) -> int:
    """Tasks in rooms where receptacles share a location."""
    plans = layouts()
    return sum(bool(plans[t.config["floorplan"]].get("shared")) for t in tasks)


def generate(out: Path, seed: int = SEED, splits: Sequence[str] = tuple(SPLITS)) -> dict[str, Any]:
    """Write the suites, the licence and ``manifest.json`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    suites = {split: build_split(split, seed, seen) for split in splits}
    for split, tasks in suites.items():
        write_tasks(out / f"{split}.jsonl", tasks)
    licence = Path(__file__).resolve().parent / "data" / "LICENSE-alfworld"
    shutil.copyfile(licence, out / "LICENSE-alfworld")
    return write_manifest(out, manifest(out, suites, seed))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "tasks" / "household")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    info = generate(args.out, args.seed)
    print(json.dumps(info["counts"]), "->", args.out)


if __name__ == "__main__":
    main()
