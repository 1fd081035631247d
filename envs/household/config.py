"""``Task.config`` of ``agentgym/Household-v0``: a scene in a compact text encoding, and a goal.

A scene is the room's receptacles and what lies in them, written the way the game prints names::

    receptacles: "cabinet 1*, cabinet 2*, countertop 1, fridge 1*, sinkbasin 1"   (* = openable)
    contents:    "countertop 1: apple 1, knife 2; fridge 1: egg 1"

Generated tasks name a floor plan instead of listing receptacles (``floorplan: "FloorPlan12"``);
its receptacles, and which of them share a location, come from ``data/layouts.json``, built from
ALFRED's 120 floor plans.

Receptacles stand at locations, as in ALFWorld's PDDL problems (``receptacleAtLocation``): each
at a location of its own unless ``shared`` groups some at one spot (adjacent drawers, cabinets or
shelves, reached from one pose)::

    shared:      "cabinet 1, cabinet 2; drawer 2, drawer 3, drawer 4"
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from agentgym.envs.household.catalog import catalog, read_data
from agentgym.envs.household.goals import Goal, TaskType

NAME = re.compile(r"^[a-z]+ [1-9][0-9]*$")


class HouseholdConfig(BaseModel):
    """One household game: a room, where things are, and what the agent must achieve."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_type: TaskType
    """One of ALFWorld's six task types."""
    object: str = Field(pattern=r"^[a-z]+$")
    """Display type of the object to handle (``apple``)."""
    receptacle: str | None = Field(default=None, pattern=r"^[a-z]+$")
    """Display type of the destination (``sidetable``); None only for ``look_at_obj_in_light``."""
    lamp: str | None = Field(default=None, pattern=r"^[a-z]+$")
    """``desklamp`` or ``floorlamp`` for ``look_at_obj_in_light``, else None."""
    floorplan: str | None = None
    """Name of a floor plan in ``data/layouts.json`` supplying the receptacles."""
    receptacles: str | None = None
    """Receptacle names, comma-separated, ``*`` after openable ones (when no ``floorplan``)."""
    contents: str = ""
    """``receptacle: object, object; receptacle: ...`` — where every object starts."""
    floor: str = ""
    """Objects standing on the floor next to a receptacle (same format), e.g. floor lamps."""
    start: str | None = None
    """Receptacle the agent starts next to; None = the middle of the room (ALFWorld's start)."""
    allow: list[str] = Field(default_factory=list)
    """Extra ``object>receptacle`` type pairs that ``put`` accepts beyond ALFRED's table."""
    max_turns: int = Field(default=50, ge=1, le=10_000)
    """Actions before the episode is truncated (valid or not, each uses a turn)."""
    arrive: Literal["none", "name", "loc"] = "none"
    """``go to`` prefix: none (ReAct/AgentGym text), ``You arrive at fridge 1.``, ``You arrive at loc 5.``."""
    intro: Literal["react", "raw"] = "react"
    """First observation as ReAct prints it, or raw with TextWorld's welcome banner."""
    put_verb: Literal["put", "move"] = "put"
    """Admissible form of placing: ``put X in/on Y`` (ALFWorld 0.2/0.3) or ``move X to Y`` (newer)."""
    locs: dict[str, int] | None = None
    """Location number per receptacle for ``arrive="loc"`` (default: its location's position,
    from 1)."""
    shared: str | None = None
    """Receptacles that stand at one location, ``;`` between groups (``"cabinet 1, cabinet 2;
    drawer 2, drawer 3"``); every other receptacle is a location of its own. None: the floor
    plan's groups (``data/layouts.json``) with ``floorplan``, none with ``receptacles``."""

    _parsed: ParsedScene | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self) -> HouseholdConfig:
        scene = parse_scene(self)
        check_goal(self.goal(), scene)
        self._parsed = scene
        return self

    def parsed(self) -> ParsedScene:
        """The parsed scene (parsed once, at validation)."""
        if self._parsed is None:
            self._parsed = parse_scene(self)
        return self._parsed

    def goal(self) -> Goal:
        """The goal this config states."""
        return Goal(self.task_type, self.object, self.receptacle, self.lamp)


class ParsedScene:
    """The scene strings, parsed and checked: names in order, openable flags, placements."""

    def __init__(
        self,
        receptacles: tuple[str, ...],
        openable: tuple[bool, ...],
        contents: dict[str, list[str]],
        floor: dict[str, list[str]],
        shared: tuple[tuple[str, ...], ...] = (),
    ) -> None:
        self.receptacles = receptacles
        self.openable = openable
        self.contents = contents
        self.floor = floor
        self.shared = shared
        """Groups of receptacles at one location (two or more each; the rest stand alone)."""
        self.objects = [o for group in (contents, floor) for objs in group.values() for o in objs]


@cache
def layouts() -> dict[str, dict[str, str]]:
    """Floor plan name -> ``{"room": ..., "receptacles": ...}`` (``data/layouts.json``)."""
    return read_data("layouts.json")  # type: ignore[no-any-return]


def parse_scene(config: HouseholdConfig) -> ParsedScene:
    """Parse receptacles, contents and floor; ``ValueError`` naming the first problem."""
    names, openable = parse_receptacles(_receptacle_spec(config))
    known = set(names)
    contents = parse_placements(config.contents, "contents", known)
    floor = parse_placements(config.floor, "floor", known)
    objects = [o for group in (contents, floor) for objs in group.values() for o in objs]
    if len(set(objects)) != len(objects):
        dup = next(o for o in objects if objects.count(o) > 1)
        raise ValueError(f"contents: object {dup!r} is placed twice")
    if known & set(objects):
        raise ValueError("contents: a name is used for both a receptacle and an object")
    if config.start is not None and config.start not in known:
        raise ValueError(f"start: {config.start!r} is not one of the receptacles")
    for pair in config.allow:
        if not re.fullmatch(r"[a-z]+>[a-z]+", pair):
            raise ValueError(f"allow: {pair!r} must look like 'object>receptacle' (type names)")
    shared = parse_shared(_shared_spec(config), known)
    return ParsedScene(names, openable, contents, floor, shared)


def _shared_spec(config: HouseholdConfig) -> str:
    if config.shared is not None:
        return config.shared
    if config.floorplan is not None:
        return str(layouts()[config.floorplan].get("shared", ""))
    return ""


def parse_shared(spec: str, receptacles: set[str]) -> tuple[tuple[str, ...], ...]:
    """``"cabinet 1, cabinet 2; drawer 2, drawer 3"`` -> groups of receptacles at one location."""
    groups: list[tuple[str, ...]] = []
    placed: set[str] = set()
    for group in filter(None, (g.strip() for g in spec.split(";"))):
        names = tuple(n.strip() for n in group.split(",") if n.strip())
        for name in names:
            if name not in receptacles:
                raise ValueError(f"shared: {name!r} is not one of the receptacles")
            if name in placed:
                raise ValueError(f"shared: {name!r} is in two groups (or twice in one)")
            placed.add(name)
        if len(names) < 2:
            raise ValueError(
                f"shared: {group!r} names one receptacle; a group is two or more that stand "
                "at one location, e.g. 'cabinet 1, cabinet 2'"
            )
        groups.append(names)
    return tuple(groups)


@lru_cache(maxsize=1024)
def parse_receptacles(spec: str) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """``"cabinet 1*, sinkbasin 1"`` -> names and openable flags (cached: floor plans repeat)."""
    names, openable = [], []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name = item.removesuffix("*").strip()
        _check_name(name, "receptacles")
        names.append(name)
        openable.append(item.endswith("*"))
    if not names:
        raise ValueError("receptacles: the scene needs at least one receptacle")
    if len(set(names)) != len(names):
        raise ValueError(f"receptacles: duplicate name in {spec!r}")
    return tuple(names), tuple(openable)


def _receptacle_spec(config: HouseholdConfig) -> str:
    if (config.floorplan is None) == (config.receptacles is None):
        raise ValueError("give exactly one of 'floorplan' and 'receptacles'")
    if config.receptacles is not None:
        return config.receptacles
    plans = layouts()
    if config.floorplan not in plans:
        raise ValueError(
            f"floorplan: unknown {config.floorplan!r}; use one of FloorPlan1 ... FloorPlan430 "
            f"({len(plans)} in data/layouts.json)"
        )
    return plans[config.floorplan]["receptacles"]


def parse_placements(text: str, field: str, receptacles: set[str]) -> dict[str, list[str]]:
    """``"r 1: a 1, b 2; r 2: c 1"`` -> ``{"r 1": ["a 1", "b 2"], "r 2": ["c 1"]}``."""
    placed: dict[str, list[str]] = {}
    for group in filter(None, (g.strip() for g in text.split(";"))):
        where, sep, items = group.partition(":")
        where = where.strip()
        if not sep:
            raise ValueError(
                f"{field}: {group!r} must look like 'receptacle 1: object 1, object 2'"
            )
        if where not in receptacles:
            raise ValueError(f"{field}: {where!r} is not one of the receptacles")
        if where in placed:
            raise ValueError(f"{field}: {where!r} is listed twice")
        objs = [o.strip() for o in items.split(",") if o.strip()]
        for o in objs:
            _check_name(o, field)
        placed[where] = objs
    return placed


def _check_name(name: str, field: str) -> None:
    if not NAME.match(name):
        raise ValueError(f"{field}: {name!r} is not a name like 'cabinet 3' (type, space, number)")


@cache
def type_of(name: str) -> str:
    """``"cabinet 3"`` -> ``"cabinet"``."""
    return name.rpartition(" ")[0]


def check_goal(goal: Goal, scene: ParsedScene) -> None:
    """The goal must be reachable in the scene: its object, destination and appliance exist."""
    obj_types = {type_of(o) for o in scene.objects}
    rec_types = {type_of(r) for r in scene.receptacles}
    if goal.object not in obj_types:
        raise ValueError(
            f"object: no {goal.object!r} in the scene ({', '.join(sorted(obj_types))})"
        )
    if goal.task_type == "look_at_obj_in_light":
        if goal.lamp is None or goal.lamp not in obj_types:
            raise ValueError(
                f"lamp: look_at_obj_in_light needs a lamp in the scene, got {goal.lamp!r}"
            )
        return
    if goal.receptacle is None or goal.receptacle not in rec_types:
        raise ValueError(
            f"receptacle: {goal.receptacle!r} is not a receptacle type of the scene "
            f"({', '.join(sorted(rec_types))})"
        )
    appliance = APPLIANCE.get(goal.task_type)
    if appliance is not None and appliance not in rec_types:
        raise ValueError(f"task_type: {goal.task_type} needs a {appliance} in the scene")
    wanted = 2 if goal.task_type == "pick_two_obj_and_place" else 1
    if sum(type_of(o) == goal.object for o in scene.objects) < wanted:
        raise ValueError(f"object: {goal.task_type} needs {wanted} {goal.object}(s) in the scene")


APPLIANCE = {
    "pick_clean_then_place_in_recep": "sinkbasin",
    "pick_heat_then_place_in_recep": "microwave",
    "pick_cool_then_place_in_recep": "fridge",
}
"""Receptacle type each treatment needs."""


def homes(config: HouseholdConfig, object_type: str) -> frozenset[str]:
    """Receptacle types ``put`` accepts this object type in: ALFRED's table plus ``allow``."""
    extra = {p.partition(">")[2] for p in config.allow if p.partition(">")[0] == object_type}
    return catalog().homes(object_type) | extra if extra else catalog().homes(object_type)
