"""An observation-grounded expert for Household: it searches, as a learned agent must.

The env's :mod:`~agentgym.envs.household.expert` knows the scene, so its first command already
goes where the object lies; a policy that sees only the room overview cannot imitate that. The
searcher's next command is a function of the text history alone (the observations and its own
commands: :func:`next_command` takes nothing else), so it is a fair source of SFT data and a
scripted baseline (``--agent search:`` once the entry point is registered).

How it plays (all six task types):

==================  ============================================================================
find                visit the receptacles in the overview's listing order (``order="listing"``;
                    skipping those of the destination's type in ``put`` tasks: a goal object
                    there would already have won), open a closed one on arrival, and take the
                    first goal object listed as soon as one is seen
shared location     ``go to R`` answered ``Nothing happens.`` while standing at a receptacle
                    means R stands at the same location (ALFWorld's ``receptacleAtLocation``):
                    R is then here, so ``examine R`` (then open it if it is closed) instead of
                    going
put                 go to the first receptacle of the destination type in listing order, open
                    it if it is closed, put the object there
examine             with the object in hand, go to where a lamp of the goal's type was seen
                    (searching on if none was), and ``use`` it
clean, heat, cool   with the object in hand and not yet treated (no ``You clean/heat/cool the
                    O using the R.`` for it), go to the first sinkbasin / microwave / fridge in
                    listing order (or the one standing here) and treat it there, closed or
                    not; then put it as in ``put``. The find searches every receptacle (an
                    object in the destination is not treated yet)
pick two            find, take and put a first object as in ``put``; then find a second one
                    anywhere but where the first was put, and put it there too. The
                    destination is the receptacle of its type seen holding the most goal
                    objects (the first in listing order on a tie)
nothing left        ``look`` (every receptacle visited without finding what the goal needs)
holding the wrong   put it down where it stands, then go on (the searcher never takes one; a
object              learner does, and DAgger asks the searcher what to do from there)
==================  ============================================================================

What it knows comes from the game's answers only: the overview line, ``On the R, you see ...``,
``The R is closed.``, ``You open the R. The R is open. In it, you see ...``, ``You pick up ...``,
``You put ...``, ``You clean/heat/cool the O using the R.``; a command answered ``Nothing
happens.`` changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.envs.household.goals import Goal, parse_goal
from agentgym.envs.household.text import NOTHING_HAPPENS
from agentgym.envs.household.transcript import OVERVIEW, TASK_LINE, parse_listing

_LISTING = re.compile(
    r"(?:On the (?P<a>[a-z]+ \d+), you see|The (?P<b>[a-z]+ \d+) is open\. In it, you see) "
    r"(?P<items>[^.]*)\."
)
_CLOSED = re.compile(r"The (?P<r>[a-z]+ \d+) is closed\.")
_TAKE = re.compile(r"You pick up the (?P<o>[a-z]+ \d+) from the (?P<r>[a-z]+ \d+)\.")
_PUT = re.compile(r"You (?:put|move) the (?P<o>[a-z]+ \d+) (?:in/on|to) the (?P<r>[a-z]+ \d+)\.")
_GOTO = re.compile(r"^go to (?P<r>[a-z]+ \d+)$")
_TREATED = re.compile(r"You (?P<v>clean|heat|cool) the (?P<o>[a-z]+ \d+) using the [a-z]+ \d+\.")
ORDERS = ("listing",)
"""Search orders :func:`next_command` accepts."""


def type_of(name: str) -> str:
    """``cabinet 3`` -> ``cabinet``."""
    return name.rsplit(" ", 1)[0]


@dataclass
class Knowledge:
    """What the history tells: the room, the goal, and what was seen where."""

    receptacles: list[str]
    goal: Goal
    seen: dict[str, list[str]] = field(default_factory=dict)
    """Objects last seen in each receptacle, in the game's listing order."""
    closed: set[str] = field(default_factory=set)
    visited: set[str] = field(default_factory=set)
    at: str | None = None
    """Receptacle last gone to."""
    here: list[str] = field(default_factory=list)
    """Receptacles known to stand where the agent is: ``at``, then those a ``go to`` answered
    ``Nothing happens.`` for (they share its location)."""
    held: str | None = None
    treated: dict[str, set[str]] = field(default_factory=dict)
    """Objects each verb (``clean``, ``heat``, ``cool``) was applied to."""

    def observed(self, r: str) -> bool:
        """Whether an answer showed what ``r`` holds or that it is closed."""
        return r in self.seen or r in self.closed


def read_intro(observation: str) -> Knowledge:
    """The room's receptacles and the goal, from the first observation."""
    lines = [line.strip() for line in observation.splitlines()]
    overview = next((line for line in lines if line.startswith(OVERVIEW)), None)
    task = next((line for line in lines if line.startswith(TASK_LINE)), None)
    if overview is None or task is None:
        raise ValueError(
            "the first observation must hold the room overview ('You are in the middle of a "
            f"room. ...') and the task line ('Your task is to: ...'); got {observation[:120]!r}"
        )
    receptacles = parse_listing(overview.removeprefix(OVERVIEW).removesuffix("."))
    return Knowledge(receptacles, parse_goal(task.removeprefix(TASK_LINE)))


def update(k: Knowledge, action: str, answer: str) -> None:
    """Fold one command and the game's answer into ``k`` (failed commands change nothing, but a
    failed ``go to`` of another receptacle of the room while at one: it stands there too)."""
    goto = _GOTO.match(" ".join(action.lower().split()))
    if answer.strip() == NOTHING_HAPPENS:
        if goto and k.at is not None and goto["r"] in k.receptacles and goto["r"] not in k.here:
            k.here.append(goto["r"])
            k.visited.add(goto["r"])
        return
    if goto:
        k.at = goto["r"]
        k.here = [goto["r"]]
        k.visited.add(goto["r"])
    if m := _CLOSED.search(answer):
        k.closed.add(m["r"])
    for m in _LISTING.finditer(answer):
        r = m["a"] or m["b"]
        k.seen[r] = parse_listing(m["items"])
        k.closed.discard(r)
    if m := _TAKE.search(answer):
        k.held = m["o"]
        k.seen[m["r"]] = [o for o in k.seen.get(m["r"], []) if o != m["o"]]
    if m := _PUT.search(answer):
        k.held = None
        k.seen.setdefault(m["r"], []).append(m["o"])
    if m := _TREATED.search(answer):
        k.treated.setdefault(m["v"], set()).add(m["o"])


def read_history(observations: Sequence[str], actions: Sequence[str]) -> Knowledge:
    """Knowledge after ``actions[i]`` was answered by ``observations[i + 1]``."""
    if len(observations) != len(actions) + 1:
        raise ValueError(
            f"need one more observation than actions (the first is the intro); got "
            f"{len(observations)} observations and {len(actions)} actions"
        )
    k = read_intro(observations[0])
    for action, answer in zip(actions, observations[1:], strict=True):
        update(k, action, answer)
    return k


def check_order(order: str) -> str:
    """``order`` if it is a search order the searcher knows; a clear error otherwise."""
    if order not in ORDERS:
        raise ValueError(f"unknown search order {order!r}; allowed: {', '.join(ORDERS)}")
    return order


def next_command(
    observations: Sequence[str], actions: Sequence[str], order: str = "listing"
) -> str:
    """The searcher's next command, from the text history only (see the module table)."""
    check_order(order)
    k = read_history(observations, actions)
    if k.goal.task_type in ONE_PHASE:
        return _one_phase(k)
    return _two_phase(k)


ONE_PHASE = ("pick_and_place_simple", "look_at_obj_in_light")
"""The task types the one-phase searcher plays: put and examine."""


def _one_phase(k: Knowledge) -> str:
    """The next command of a ``put`` or ``examine`` task."""
    _check_type(k.goal.task_type, ONE_PHASE)
    if k.held is not None and type_of(k.held) == k.goal.object:
        return _deliver(k, k.held)
    return _find(k, k.goal.object)


def _search_list(k: Knowledge) -> list[str]:
    """Receptacles worth searching, in search order."""
    skip = k.goal.receptacle if k.goal.task_type == "pick_and_place_simple" else None
    return [r for r in k.receptacles if type_of(r) != skip]


def _where(k: Knowledge, kind: str) -> tuple[str, str] | None:
    """(receptacle, object) of the first object of type ``kind`` seen, here first."""
    places = k.here + _search_list(k)
    for r in places:
        for o in k.seen.get(r, []):
            if type_of(o) == kind:
                return r, o
    return None


def _explore(k: Knowledge) -> str:
    """Look into what is here (examine, open what is closed), else go to the next receptacle not
    yet visited."""
    for r in k.here:
        if not k.observed(r):
            return f"examine {r}"
        if r in k.closed:
            return f"open {r}"
    for r in _search_list(k):
        if r not in k.visited:
            return f"go to {r}"
    return "look"


def _find(k: Knowledge, kind: str) -> str:
    if k.held is not None and k.at is not None:
        return _put_at(k, k.held, k.at)  # not what the goal needs: put it down first
    found = _where(k, kind)
    if found is None:
        return _explore(k)
    r, o = found
    return f"take {o} from {r}" if r in k.here else f"go to {r}"


def _deliver(k: Knowledge, held: str) -> str:
    if k.goal.task_type == "look_at_obj_in_light":
        lamp = _where(k, str(k.goal.lamp))
        if lamp is None:
            return _explore(k)
        return f"use {lamp[1]}" if lamp[0] in k.here else f"go to {lamp[0]}"
    dest = next(r for r in k.receptacles if type_of(r) == k.goal.receptacle)
    return _put_at(k, held, dest)


TREAT = {
    "pick_clean_then_place_in_recep": ("clean", "sinkbasin"),
    "pick_heat_then_place_in_recep": ("heat", "microwave"),
    "pick_cool_then_place_in_recep": ("cool", "fridge"),
}
"""Treatment tasks: the verb and the appliance type that does it."""
TWO_TYPE = "pick_two_obj_and_place"
ALL_TYPES = (*ONE_PHASE, *TREAT, TWO_TYPE)
"""Every task type; :class:`SearchAgent` plays them all."""


def _two_phase(k: Knowledge) -> str:
    """The next command of a ``clean``/``heat``/``cool`` or ``pick two`` task."""
    _check_type(k.goal.task_type, ALL_TYPES)
    if k.goal.task_type == TWO_TYPE:
        return _pick_two(k)
    verb, appliance_type = TREAT[k.goal.task_type]
    if k.held is None or type_of(k.held) != k.goal.object:
        return _find(k, k.goal.object)
    if k.held in k.treated.get(verb, set()):
        return _deliver(k, k.held)
    appliances = [r for r in k.here if type_of(r) == appliance_type]
    appliances += [r for r in k.receptacles if type_of(r) == appliance_type]
    if not appliances:
        raise ValueError(f"a {verb} task needs a {appliance_type} in the room; this one has none")
    where = appliances[0]
    return f"{verb} {k.held} with {where}" if where in k.here else f"go to {where}"


def _two_destination(k: Knowledge) -> str:
    """The destination of ``pick two``: the receptacle of its type seen holding the most goal
    objects, the first in listing order on a tie."""
    dests = [r for r in k.receptacles if type_of(r) == k.goal.receptacle]
    if not dests:
        raise ValueError(f"no {k.goal.receptacle} in the room's overview")

    def held_there(r: str) -> int:
        return sum(type_of(o) == k.goal.object for o in k.seen.get(r, []))

    return max(dests, key=lambda r: (held_there(r), -dests.index(r)))


def _pick_two(k: Knowledge) -> str:
    dest = _two_destination(k)
    if k.held is not None and type_of(k.held) == k.goal.object:
        return _put_at(k, k.held, dest)
    if k.held is not None and k.at is not None:
        return _put_at(k, k.held, k.at)  # not what the goal needs: put it down first
    for r in [*k.here, *k.receptacles]:  # a goal object seen anywhere but at the destination
        if r == dest:
            continue
        for o in k.seen.get(r, []):
            if type_of(o) == k.goal.object:
                return f"take {o} from {r}" if r in k.here else f"go to {r}"
    for r in k.here:
        if not k.observed(r):
            return f"examine {r}"
        if r in k.closed:
            return f"open {r}"
    for r in k.receptacles:
        if r not in k.visited:
            return f"go to {r}"
    return "look"


def _put_at(k: Knowledge, held: str, dest: str) -> str:
    """Go to ``dest`` (open it, look into it) and put ``held`` there."""
    if dest not in k.here:
        return f"go to {dest}"
    if not k.observed(dest):
        return f"examine {dest}"
    if dest in k.closed:
        return f"open {dest}"
    return f"put {held} in/on {dest}"


class SearchAgent:
    """The searcher as an agent: it keeps the text it was shown and its own commands, nothing
    else (it is never handed the env)."""

    name = "search"
    command = staticmethod(next_command)
    """The policy: (observations, own commands, order) -> next command."""

    def __init__(self, order: str = "listing") -> None:
        self.order = check_order(order)
        self.observations: list[str] = []
        self.actions: list[str] = []

    plays: tuple[str, ...] = ALL_TYPES
    """Task types it plays; :meth:`check_task` refuses the others before a run starts."""

    def check_task(self, task: Any) -> None:
        """``ValueError`` for a task whose type this searcher does not play."""
        _check_type(parse_goal(task.instruction).task_type, self.plays)

    def reset(self, info: dict[str, Any]) -> None:
        self.observations, self.actions = [], []

    def act(self, observation: str, info: dict[str, Any]) -> str:
        self.observations.append(observation)
        action = self.command(self.observations, self.actions, self.order)
        self.actions.append(action)
        return action


_SHORT = {
    "pick_and_place_simple": "put",
    "look_at_obj_in_light": "examine",
    "pick_two_obj_and_place": "pick two",
}


def _check_type(task_type: str, plays: tuple[str, ...]) -> None:
    if task_type not in plays:
        names = [_SHORT.get(t, t.split("_")[1]) for t in plays]  # pick_clean_then... -> clean
        said = ", ".join(names[:-1]) + f" and {names[-1]}"
        raise ValueError(f"the searcher plays {said} tasks only, not {task_type!r}")


def search_agent(arg: str, env: Any) -> SearchAgent:
    """``--agent search:[ORDER]`` (entry point of ``agentgym.agents``); the env is not used."""
    return SearchAgent(arg or "listing")


# ============================================================================ two-phase: clean
# Additive: ``clean`` tasks (pick_clean_then_place_in_recep) as a second phase after the find.
# Phase 1 is the put task's find-and-take; phase 2 starts with the take: carry the object to
# the first sink basin in listing order, ``clean`` it, then deliver it as in ``put``. The same
# observation (``You pick up the X from the R.``) then needs ``go to sinkbasin N`` instead of
# ``go to DEST``, which is what PA-MoE's phase router is tested on (experiments/pa_moe.py).
CLEAN_TYPE = "pick_clean_then_place_in_recep"
SINK = "sinkbasin"
_CLEANED = re.compile(r"You clean the (?P<o>[a-z]+ \d+) using the (?P<r>[a-z]+ \d+)\.")


def next_command_phased(
    observations: Sequence[str], actions: Sequence[str], order: str = "listing"
) -> str:
    """:func:`next_command`, plus ``clean`` tasks (find, take, clean at the sink, put)."""
    check_order(order)
    k = read_history(observations, actions)
    if k.goal.task_type != CLEAN_TYPE:
        return _one_phase(k)
    if k.held is None or type_of(k.held) != k.goal.object:
        return _find(k, k.goal.object)
    cleaned = {m["o"] for answer in observations[1:] for m in _CLEANED.finditer(answer)}
    if k.held in cleaned:
        return _deliver(k, k.held)
    sink = next((r for r in k.receptacles if type_of(r) == SINK), None)
    if sink is None:
        raise ValueError(f"a clean task needs a {SINK} in the room; this one has none")
    return f"clean {k.held} with {sink}" if sink in k.here else f"go to {sink}"


class PhasedSearchAgent(SearchAgent):
    """:class:`SearchAgent` that also plays ``clean`` tasks (:func:`next_command_phased`)."""

    name = "search-phased"
    plays = (*ONE_PHASE, CLEAN_TYPE)
    command = staticmethod(next_command_phased)
