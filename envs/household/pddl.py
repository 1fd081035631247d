"""Load real ALFWorld games (``initial_state.pddl`` + ``traj_data.json`` of json_2.1.1) as tasks.

For users who have ALFWorld's game files. The PDDL problem gives the receptacles
(``receptacleType``), which open (``openable``), which stand at one location
(``receptacleAtLocation``: those with the same location become a ``shared`` group), where objects
are (``inReceptacle``; objects only ``objectAtLocation`` a receptacle's location stand on the
floor next to it), the agent's start (``atLocation``) and extra ``canContain`` pairs; ``traj_data.json`` gives the task type and its
targets (``pddl_params``). Instances are named as the text game names them, type in lower case and
a number per type (``Cabinet_bar__plus_00_dot_68...`` -> ``cabinet 1``), numbered in the order of
their PDDL ids. The goal sentence is ALFWorld's template for the task type (``variant`` picks one).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from agentgym.envs.household.catalog import catalog
from agentgym.envs.household.goals import TASK_TYPES, Goal
from agentgym.task import Task

_TOKEN = re.compile(r"[()]|[^\s()]+")


def parse_sexpr(text: str) -> list[Any]:
    """PDDL text -> nested lists of atoms (comments dropped, case kept)."""
    text = re.sub(r";[^\n]*", "", text)
    stack: list[list[Any]] = [[]]
    for tok in _TOKEN.findall(text):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) == 1:
                raise ValueError("PDDL problem: unbalanced ')'")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1:
        raise ValueError("PDDL problem: unbalanced '(' (the file is cut short?)")
    return stack[0]


def init_facts(problem_text: str) -> list[list[str]]:
    """The ``(:init ...)`` atoms of a problem (numeric ``(= ...)`` facts skipped)."""
    tree = parse_sexpr(problem_text)
    problem = next((t for t in tree if isinstance(t, list) and t[:1] == ["define"]), None)
    if problem is None:
        raise ValueError("PDDL problem: no '(define (problem ...) ...)' form")
    init = next((s for s in problem if isinstance(s, list) and s[:1] == [":init"]), None)
    if init is None:
        raise ValueError("PDDL problem: no ':init' section")
    return [
        f
        for f in init[1:]
        if isinstance(f, list) and f and f[0] != "=" and all(isinstance(a, str) for a in f)
    ]


def _type_name(pddl_type: str) -> str:
    return pddl_type.removesuffix("Type").lower()


class _Problem:
    """Facts of one problem, grouped for building the scene."""

    def __init__(self, facts: list[list[str]]) -> None:
        by: dict[str, list[list[str]]] = defaultdict(list)
        for f in facts:
            by[f[0].lower()].append(f[1:])
        self.rtype = {r: _type_name(t) for r, t in by["receptacletype"]}
        self.otype = {o: _type_name(t) for o, t in by["objecttype"]}
        self.r_loc = {r: loc for r, loc in by["receptacleatlocation"]}
        self.o_loc = {o: loc for o, loc in by["objectatlocation"]}
        self.inside = {o: r for o, r in by["inreceptacle"]}
        self.openable = {r for (r,) in by["openable"]}
        self.agent = next((loc for _, loc in by["atlocation"]), None)
        self.can_contain = {(_type_name(r), _type_name(o)) for r, o in by["cancontain"]}
        self.names = _number(self.rtype) | _number(self.otype)


def _number(types: dict[str, str]) -> dict[str, str]:
    """PDDL id -> ``type N``, numbered per type in id order."""
    counts: dict[str, int] = defaultdict(int)
    names = {}
    for pid in sorted(types):
        counts[types[pid]] += 1
        names[pid] = f"{types[pid]} {counts[types[pid]]}"
    return names


def _placements(p: _Problem) -> tuple[str, str]:
    inside: dict[str, list[str]] = defaultdict(list)
    floor: dict[str, list[str]] = defaultdict(list)
    at_loc = {loc: r for r, loc in sorted(p.r_loc.items(), reverse=True)}
    for o in sorted(p.otype):
        if o in p.inside and p.inside[o] in p.rtype:
            inside[p.names[p.inside[o]]].append(p.names[o])
        elif p.o_loc.get(o) in at_loc:
            floor[p.names[at_loc[p.o_loc[o]]]].append(p.names[o])
    return _encode(inside), _encode(floor)


def _shared(p: _Problem, receptacles: list[str]) -> str:
    """Receptacles at one location (``receptacleAtLocation``), as the config's ``shared``."""
    at: dict[str, list[str]] = defaultdict(list)
    for r in receptacles:
        if r in p.r_loc:
            at[p.r_loc[r]].append(p.names[r])
    return "; ".join(", ".join(g) for g in at.values() if len(g) > 1)


def _encode(groups: dict[str, list[str]]) -> str:
    return "; ".join(f"{r}: {', '.join(objs)}" for r, objs in sorted(groups.items()))


def goal_of(traj: dict[str, Any]) -> Goal:
    """The goal of a ``traj_data.json``; ``ValueError`` for task kinds ALFWorld's text game lacks."""
    task_type = traj.get("task_type")
    params = traj.get("pddl_params") or {}
    if task_type not in TASK_TYPES:
        raise ValueError(
            f"traj_data.json: task_type {task_type!r} is not one of ALFWorld's six ({', '.join(TASK_TYPES)})"
        )
    if params.get("object_sliced"):
        raise ValueError("traj_data.json: sliced-object goals are not supported")
    obj = str(params.get("object_target", "")).lower()
    if not obj:
        raise ValueError("traj_data.json: pddl_params.object_target is missing")
    if task_type == "look_at_obj_in_light":
        return Goal(task_type, obj, None, str(params.get("toggle_target", "")).lower() or None)
    return Goal(task_type, obj, str(params.get("parent_target", "")).lower() or None)


def load_game_files(
    problem_text: str, traj: dict[str, Any], task_id: str | None = None, variant: int = 0
) -> Task:
    """A task from the text of ``initial_state.pddl`` and the parsed ``traj_data.json``."""
    p = _Problem(init_facts(problem_text))
    if not p.rtype:
        raise ValueError("PDDL problem: no receptacles (receptacleType facts)")
    receptacles = sorted(p.rtype, key=lambda r: p.names[r])
    contents, floor = _placements(p)
    starts = [r for r in receptacles if p.agent is not None and p.r_loc.get(r) == p.agent]
    goal = goal_of(traj)
    cat = catalog()
    config = {
        "task_type": goal.task_type,
        "object": goal.object,
        "receptacle": goal.receptacle,
        "lamp": goal.lamp,
        "receptacles": ", ".join(
            p.names[r] + ("*" if r in p.openable else "") for r in receptacles
        ),
        "contents": contents,
        "floor": floor,
        "shared": _shared(p, receptacles),
        "start": p.names[starts[0]] if starts else None,
        "allow": sorted(f"{o}>{r}" for r, o in p.can_contain if not cat.fits(r, o)),
    }
    return Task(
        id=task_id or str(traj.get("task_id") or "alfworld-game"),
        env="agentgym/Household-v0",
        split="alfworld",
        instruction=goal.sentence(variant),
        config={k: v for k, v in config.items() if v not in (None, "", [])},
        tags=["alfworld", goal.task_type],
    )


def load_game(folder: str | Path, variant: int = 0) -> Task:
    """A task from an ALFWorld game folder holding ``initial_state.pddl`` and ``traj_data.json``."""
    folder = Path(folder)
    problem, traj = folder / "initial_state.pddl", folder / "traj_data.json"
    for path in (problem, traj):
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: an ALFWorld game folder holds both files")
    data = json.loads(traj.read_text(encoding="utf-8"))
    task_id = (
        f"alfworld-{folder.parent.name}-{folder.name}" if folder.name.startswith("trial_") else None
    )
    return load_game_files(problem.read_text(encoding="utf-8"), data, task_id, variant)
