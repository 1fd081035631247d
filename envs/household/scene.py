"""A config compiled into flat lists for the engine: names, capabilities, initial placement.

Everything here is fixed for an episode; what changes lives in :class:`State`. Receptacles,
locations and objects are ints (list positions). Receptacles stand at locations as in ALFWorld's
PDDL problems (``receptacleAtLocation``): one each, except the config's ``shared`` groups, whose
receptacles stand at one location; the agent stands at a location index, or -1 for the middle of
the room. Listings are kept in ALFWorld's print order (type name ascending, then number
descending: ``a bowl 2, a bowl 1, a bread 1``; ``the cabinet 2, and cabinet 1``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from agentgym.envs.household.catalog import catalog
from agentgym.envs.household.config import APPLIANCE, HouseholdConfig, homes, type_of

# static object capabilities (Scene.o_caps)
PICK, CLEANABLE, HEATABLE, COOLABLE, TOGGLE, SLICEABLE, SHARP, RECOBJ = (1 << i for i in range(8))
# dynamic object state (State.flags)
IS_CLEAN, IS_HOT, IS_COOL, IS_SLICED, IS_TOGGLED, IS_ON = (1 << i for i in range(6))
# receptacle roles
SINK, MICROWAVE, FRIDGE = 1, 2, 3
ROLE = {"sinkbasin": SINK, "microwave": MICROWAVE, "fridge": FRIDGE}
HELD = -1
"""``State.where`` of the held object; floor objects next to receptacle r have ``-2 - r``."""
# goal kinds
PLACE, TWO, LOOK = 0, 1, 2
REQUIRED = {
    "pick_clean_then_place_in_recep": IS_CLEAN,
    "pick_heat_then_place_in_recep": IS_HOT,
    "pick_cool_then_place_in_recep": IS_COOL,
}


@dataclass
class State:
    """Everything that changes in an episode; copying it is the snapshot."""

    loc: int
    """Location the agent stands at (``Scene.loc_recs`` stand there), -1 in the middle of the room."""
    held: int
    """Object in hand, -1 for none."""
    where: list[int]
    """Per object: receptacle index, ``HELD``, or ``-2 - r`` on the floor next to r."""
    contents: list[list[int]]
    """Per receptacle: objects in it, in print order."""
    opened: list[bool]
    flags: list[int]
    """Per object: IS_* bits."""
    left: list[int] = field(default_factory=list)
    """Per object: bit r set once it was taken from receptacle r and not put back in since
    (TextWorld's ``not_inreceptacle`` facts, which ``look`` lists: see :func:`text.look`)."""
    turn: int = 0
    won: bool = False
    reached: set[str] = field(default_factory=set)
    """Subgoals reached so far (for the optional shaped reward)."""

    def copy(self) -> State:
        """A deep copy, cheaper than ``copy.deepcopy``."""
        return State(
            self.loc,
            self.held,
            self.where[:],
            [c[:] for c in self.contents],
            self.opened[:],
            self.flags[:],
            self.left[:],
            self.turn,
            self.won,
            set(self.reached),
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> State:
        """:meth:`copy`, so ``TextEnv.snapshot``'s deep copy takes the cheap path."""
        return self.copy()


class Room:
    """The receptacle side of a scene, shared by every task on the same receptacles."""

    def __init__(
        self,
        names: tuple[str, ...],
        openable: tuple[bool, ...],
        shared: tuple[tuple[str, ...], ...] = (),
    ) -> None:
        self.r_names = list(names)
        self.r_types = [type_of(r) for r in names]
        self.r_openable = list(openable)
        self.r_role = [ROLE.get(t, 0) for t in self.r_types]
        self.r_index = {n: i for i, n in enumerate(names)}
        self.r_order = sorted(range(len(names)), key=lambda i: _sort_key(names[i]))
        self.r_loc, self.loc_recs = _locations(self.r_index, self.r_order, shared)
        """Per receptacle: its location; per location: its receptacles, in print order."""
        self.base_cmds: dict[str, tuple[int, int, int]] = {}
        """Commands valid everywhere but at the named receptacles' location (filled by the engine
        on first use)."""


def _locations(
    index: dict[str, int], order: list[int], shared: tuple[tuple[str, ...], ...]
) -> tuple[list[int], list[list[int]]]:
    """Locations numbered in receptacle order: a group takes the place of its first receptacle."""
    first = {r: r for r in index.values()}
    for group in shared:
        head = min(index[n] for n in group)
        for n in group:
            first[index[n]] = head
    heads = sorted(set(first.values()))
    number = {h: i for i, h in enumerate(heads)}
    r_loc = [number[first[r]] for r in range(len(index))]
    loc_recs: list[list[int]] = [[] for _ in heads]
    for r in order:
        loc_recs[r_loc[r]].append(r)
    return r_loc, loc_recs


@lru_cache(maxsize=512)
def room(
    names: tuple[str, ...], openable: tuple[bool, ...], shared: tuple[tuple[str, ...], ...] = ()
) -> Room:
    """The shared :class:`Room` of these receptacles."""
    return Room(names, openable, shared)


class Scene:
    """The compiled, read-only side of a game."""

    def __init__(self, config: HouseholdConfig) -> None:
        parsed = config.parsed()
        common = room(tuple(parsed.receptacles), tuple(parsed.openable), parsed.shared)
        self.config = config
        self.r_names, self.r_types, self.r_openable = (
            common.r_names,
            common.r_types,
            common.r_openable,
        )
        self.r_role, self.r_index, self.r_order = common.r_role, common.r_index, common.r_order
        self.r_loc, self.loc_recs = common.r_loc, common.loc_recs
        self.base_cmds = common.base_cmds
        self.o_names = parsed.objects
        self.o_types = [type_of(o) for o in self.o_names]
        self.o_index = {n: i for i, n in enumerate(self.o_names)}
        self.o_caps = [_caps(t) for t in self.o_types]
        self.o_rank = _ranks(self.o_names)
        self.o_listed = [f"a {n}" for n in self.o_names]
        by_type = {t: homes(config, t) for t in set(self.o_types)}
        self.o_homes = [by_type[t] for t in self.o_types]
        """Per object: receptacle types that accept it."""
        self.start = -1 if config.start is None else self.r_loc[self.r_index[config.start]]
        self.loc_numbers = _loc_numbers(config, self.r_names, self.r_loc)
        self._init_placement(parsed.contents, parsed.floor)
        self._init_goal(config)

    def _init_placement(self, contents: dict[str, list[str]], floor: dict[str, list[str]]) -> None:
        self.init_where = [0] * len(self.o_names)
        self.init_contents: list[list[int]] = [[] for _ in self.r_names]
        self.floor_at: list[list[int]] = [[] for _ in self.r_names]
        for rname, objs in contents.items():
            r = self.r_index[rname]
            for o in (self.o_index[n] for n in objs):
                self.init_where[o] = r
                self.init_contents[r].append(o)
            self.init_contents[r].sort(key=self.o_rank.__getitem__)
        for rname, objs in floor.items():
            r = self.r_index[rname]
            for o in (self.o_index[n] for n in objs):
                self.init_where[o] = -2 - r
                self.floor_at[r].append(o)
            self.floor_at[r].sort(key=self.o_rank.__getitem__)

    def _init_goal(self, config: HouseholdConfig) -> None:
        goal = config.goal()
        self.goal = goal
        self.goal_kind = {"look_at_obj_in_light": LOOK, "pick_two_obj_and_place": TWO}.get(
            goal.task_type, PLACE
        )
        self.goal_required = REQUIRED.get(goal.task_type, 0)
        self.goal_objs = frozenset(i for i, t in enumerate(self.o_types) if t == goal.object)
        self.goal_recs = [i for i, t in enumerate(self.r_types) if t == goal.receptacle]
        self.lamps = [i for i, t in enumerate(self.o_types) if t == goal.lamp]
        appliance = APPLIANCE.get(goal.task_type)
        self.appliances = [i for i, t in enumerate(self.r_types) if t == appliance]

    def initial_state(self) -> State:
        """The state at reset."""
        return State(
            self.start,
            HELD,
            self.init_where[:],
            [c[:] for c in self.init_contents],
            [False] * len(self.r_names),
            [0] * len(self.o_names),
            [0] * len(self.o_names),
        )

    def fits(self, o: int, r: int) -> bool:
        """Whether object ``o`` may be put in receptacle ``r``."""
        return self.r_types[r] in self.o_homes[o]

    def receptacle_of(self, state: State, o: int) -> int:
        """Receptacle object ``o`` is in or stands next to on the floor; -1 when held."""
        w = state.where[o]
        if w >= 0:
            return w
        return -1 if w == HELD else -2 - w

    def location_of(self, state: State, o: int) -> int:
        """Location where object ``o`` is (the agent's when held)."""
        w = state.where[o]
        if w == HELD:
            return state.loc
        return self.r_loc[w if w >= 0 else -2 - w]


@cache
def _sort_key(name: str) -> tuple[str, int]:
    kind, _, num = name.rpartition(" ")
    return kind, -int(num)


def _ranks(names: list[str]) -> list[int]:
    order = sorted(range(len(names)), key=lambda i: _sort_key(names[i]))
    ranks = [0] * len(names)
    for rank, i in enumerate(order):
        ranks[i] = rank
    return ranks


@cache
def _caps(object_type: str) -> int:
    cat = catalog()
    caps = 0
    for bit, group in (
        (PICK, cat.pickupable),
        (CLEANABLE, cat.cleanable),
        (HEATABLE, cat.heatable),
        (COOLABLE, cat.coolable),
        (TOGGLE, cat.toggleable),
        (SLICEABLE, cat.sliceable),
        (SHARP, cat.sharp),
        (RECOBJ, cat.receptacle_objects),
    ):
        if object_type in group:
            caps |= bit
    return caps


def _loc_numbers(config: HouseholdConfig, names: list[str], r_loc: list[int]) -> list[int]:
    given = config.locs or {}
    return [given.get(n, r_loc[i] + 1) for i, n in enumerate(names)]


_CACHE: OrderedDict[int, tuple[HouseholdConfig, Scene]] = OrderedDict()
_CACHE_SIZE = 512
_LOCK = threading.Lock()


def compile_scene(config: HouseholdConfig) -> Scene:
    """The scene of ``config``, cached by config identity (configs are frozen; thread-safe)."""
    key = id(config)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is config:
            _CACHE.move_to_end(key)
            return hit[1]
    scene = Scene(config)
    with _LOCK:
        _CACHE[key] = (config, scene)
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return scene
