"""Build a task from a transcript of the real ALFWorld game, and replay the transcript on our engine.

A transcript is the text ReAct-style papers show: the room overview, ``Your task is to: ...``, then
``> command`` lines each followed by the game's answer. Harness lines (``> think: ...`` answered
``OK.``) are skipped; an answer a harness printed out of place (after a ``think``) goes back to the
command that lacked one. :func:`from_transcript` reconstructs the scene — receptacles from the
overview, the contents of each receptacle from its first listing, which receptacles open, where
the agent started, which receptacles share a location, the ``go to`` prefix style — and
:func:`replay` plays the commands on ``HouseholdEnv`` and compares every answer character for
character.

Receptacles share a location (the config's ``shared``) when the transcript shows it: ``go to R``
answered ``Nothing happens.`` while standing at another receptacle, ``look`` facing several
(``You are facing the cabinet 2, and cabinet 1.``), a command on R answered as done while
standing at another receptacle, or one ``You arrive at loc N.`` for two receptacles.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from agentgym.envs.household.catalog import catalog
from agentgym.envs.household.config import type_of
from agentgym.envs.household.goals import parse_goal
from agentgym.envs.household.text import BANNER, NOTHING_HAPPENS
from agentgym.task import Task

OVERVIEW = "You are in the middle of a room. Looking quickly around you, you see "
TASK_LINE = "Your task is to: "
_LISTING = re.compile(
    r"(?:On the (?P<a>[a-z]+ \d+), you see|The (?P<b>[a-z]+ \d+) is open\. In it, you see) (?P<items>.*)\.$"
)
_ARRIVE = re.compile(r"^You arrive at (?:loc (?P<loc>\d+)|(?P<name>[a-z]+ \d+))\. ")
_FACING = re.compile(r"^You are facing the (?P<recs>.+?)\. Next to it, you see ")
_ACTIONS = [
    ("goto", re.compile(r"^go to (?P<r>[a-z]+ \d+)$")),
    ("open", re.compile(r"^open (?P<r>[a-z]+ \d+)$")),
    ("close", re.compile(r"^close (?P<r>[a-z]+ \d+)$")),
    ("take", re.compile(r"^take (?P<o>[a-z]+ \d+) from (?P<r>[a-z]+ \d+)$")),
    ("put", re.compile(r"^put (?P<o>[a-z]+ \d+) in/on (?P<r>[a-z]+ \d+)$")),
    ("move", re.compile(r"^move (?P<o>[a-z]+ \d+) to (?P<r>[a-z]+ \d+)$")),
    ("treat", re.compile(r"^(?:clean|heat|cool) (?P<o>[a-z]+ \d+) with (?P<r>[a-z]+ \d+)$")),
    ("use", re.compile(r"^use (?P<o>[a-z]+ \d+)$")),
    ("examine", re.compile(r"^examine (?P<x>[a-z]+ \d+)$")),
]


@dataclass
class Transcript:
    """A transcript split into its parts."""

    overview: str
    instruction: str
    raw_intro: bool
    steps: list[tuple[str, str | None]]
    """(command, the game's answer or None when the transcript shows none)."""


def parse_transcript(text: str) -> Transcript:
    """Split a transcript into overview, instruction and (command, answer) steps."""
    lines = [line.rstrip("\r") for line in text.strip("\n").split("\n")]
    first = next((i for i, line in enumerate(lines) if line.startswith(">")), len(lines))
    header = [line for line in lines[:first] if line.strip()]
    overview = next((h for h in header if h.startswith(OVERVIEW)), None)
    task = next((h for h in header if h.startswith(TASK_LINE)), None)
    if overview is None or task is None:
        raise ValueError(
            "transcript must start with the room overview ('You are in the middle of a room. ...') "
            "and the task line ('Your task is to: ...') before the first '> command'"
        )
    return Transcript(
        overview,
        task.removeprefix(TASK_LINE).strip(),
        any(h.strip() == BANNER for h in header),
        _steps(lines[first:]),
    )


def _steps(lines: list[str]) -> list[tuple[str, str | None]]:
    steps: list[tuple[str, str | None]] = []
    pending: int | None = None  # index of a command still waiting for its answer
    i = 0
    while i < len(lines):
        action = lines[i][1:].strip()
        j = i + 1
        while j < len(lines) and not lines[j].startswith(">"):
            j += 1
        answer = [line for line in lines[i + 1 : j] if line.strip()]
        i = j
        if action.lower().startswith("think:"):
            if answer and answer[0].strip() == "OK.":
                answer = answer[1:]
            if answer and pending is not None:
                steps[pending] = (steps[pending][0], "\n".join(answer))
                pending = None
            continue
        steps.append((action, "\n".join(answer) if answer else None))
        pending = len(steps) - 1 if not answer else None
    return steps


@dataclass
class _World:
    """What the transcript reveals, replayed in order."""

    receptacles: list[str]
    initial: dict[str, list[str]] = field(default_factory=dict)
    current: dict[str, list[str]] = field(default_factory=dict)
    openable: dict[str, bool] = field(default_factory=dict)
    locs: dict[str, int] = field(default_factory=dict)
    arrive: str = "none"
    put_verb: str = "put"
    allow: set[str] = field(default_factory=set)
    loc: str | None = None
    start: str | None = None
    parent: dict[str, str] = field(default_factory=dict)
    """Union-find over receptacles: those found at one location share a root."""

    def root(self, r: str) -> str:
        """The representative of ``r``'s location."""
        while self.parent.get(r, r) != r:
            r = self.parent[r]
        return r

    def join(self, a: str, b: str) -> None:
        """``a`` and ``b`` stand at one location."""
        ra, rb = self.root(a), self.root(b)
        if ra != rb:
            self.parent[rb] = ra

    def here(self) -> list[str]:
        """Receptacles known to stand where the agent is."""
        if self.loc is None:
            return []
        root = self.root(self.loc)
        return [r for r in self.receptacles if self.root(r) == root]

    def at(self, r: str, line: str, shown: bool = False) -> None:
        """The agent must stand at ``r``'s location; before any ``go to`` that means it started
        there. Acting on another receptacle than the one gone to, with the answer ``shown`` as
        done, means the two share a location."""
        if r not in self.receptacles:
            raise ValueError(f"{line!r}: {r!r} is not in the room overview")
        if self.loc is None:
            self.loc = self.start = r
        elif self.root(self.loc) != self.root(r):
            if not shown:
                raise ValueError(f"{line!r}: acts on {r} while standing at {self.loc}")
            self.join(self.loc, r)

    def groups(self) -> str:
        """The ``shared`` groups, in overview order."""
        by_root: dict[str, list[str]] = {}
        for r in self.receptacles:
            by_root.setdefault(self.root(r), []).append(r)
        return "; ".join(", ".join(g) for g in by_root.values() if len(g) > 1)

    def reveal(self, answer: str) -> None:
        """Record a receptacle's contents the first time an answer lists them."""
        m = _ARRIVE.match(answer)
        body = answer[m.end() :] if m else answer
        body = re.sub(r"^You open the [a-z]+ \d+\. ", "", body)
        closed = re.fullmatch(r"The ([a-z]+ \d+) is closed\.", body)
        if closed:
            self.openable[closed[1]] = True
            return
        listing = _LISTING.match(body)
        if listing is None:
            return
        r = listing["a"] or listing["b"]
        self.openable[r] = listing["b"] is not None
        if r not in self.current:
            items = parse_listing(listing["items"])
            self.current[r] = list(items)
            self.initial[r] = list(items)

    def add_unseen(self, obj: str, r: str, line: str) -> None:
        """An object used before any listing showed it: it was there from the start."""
        if obj in self.current.get(r, []):
            return
        if r == self.loc and any(obj in self.current.get(x, []) for x in self.here()):
            return
        if r in self.current:
            raise ValueError(f"{line!r}: {obj} is not among what {r} was shown to hold")
        self.current[r] = [obj]
        self.initial.setdefault(r, []).append(obj)


def parse_listing(items: str) -> list[str]:
    """``a cup 1, a egg 2, and a potato 3`` -> names (also without the final ``and``)."""
    if items == "nothing":
        return []
    parts = re.split(r", (?:and )?", items)
    return [re.sub(r"^(?:a|an|some) ", "", p.strip()) for p in parts]


def _apply(world: _World, action: str, answer: str | None) -> None:
    """Update what is known from one command and its answer (failed commands change nothing,
    but a failed ``go to``: the receptacle stands where the agent is)."""
    line = action
    act = " ".join(action.lower().split())
    kind, m = next(((k, p.match(act)) for k, p in _ACTIONS if p.match(act)), (None, None))
    shown = answer is not None
    if answer == NOTHING_HAPPENS:
        if kind == "goto" and m is not None and m["r"] in world.receptacles:
            world.at(m["r"], line, shown=True)  # already there: it shares the location
        return
    if kind == "goto" and m is not None:
        world.loc = m["r"]
        if answer:
            arrive = _ARRIVE.match(answer)
            if arrive:
                world.arrive = "loc" if arrive["loc"] else "name"
                if arrive["loc"]:
                    world.locs[m["r"]] = int(arrive["loc"])
    elif act == "look" and answer and (facing := _FACING.match(answer)):
        recs = [r for r in parse_listing(facing["recs"]) if r in world.receptacles]
        for r in recs:
            world.at(r, line, shown=True)
    elif kind in ("open", "close", "treat") and m is not None:
        world.at(m["r"], line, shown)
    elif kind == "take" and m is not None:
        world.at(m["r"], line, shown)
        world.add_unseen(m["o"], m["r"], line)
        world.current[m["r"]].remove(m["o"])
    elif kind in ("put", "move") and m is not None:
        world.at(m["r"], line, shown)
        world.current.setdefault(m["r"], []).append(m["o"])
        world.put_verb = "move" if kind == "move" else world.put_verb
        if not catalog().fits(type_of(m["r"]), type_of(m["o"])):
            world.allow.add(f"{type_of(m['o'])}>{type_of(m['r'])}")
    elif kind == "use" and m is not None and world.loc is not None:
        world.add_unseen(m["o"], world.loc, line)
    elif kind == "examine" and m is not None and m["x"] in world.receptacles:
        world.at(m["x"], line, shown)
    if answer:
        world.reveal(answer)


def from_transcript(text: str, task_id: str | None = None) -> Task:
    """A ``Household-v0`` task reproducing the game a transcript was recorded in."""
    tr = parse_transcript(text)
    receptacles = parse_listing(tr.overview.removeprefix(OVERVIEW).removesuffix("."))
    goal = parse_goal(tr.instruction)
    world = _World(receptacles)
    for action, answer in tr.steps:
        _apply(world, action, answer)
    by_number: dict[int, str] = {}
    for r, number in world.locs.items():  # one "You arrive at loc N." for two receptacles
        world.join(by_number.setdefault(number, r), r)
    cat = catalog()
    spec = ", ".join(
        r + ("*" if world.openable.get(r, type_of(r) in cat.openable) else "") for r in receptacles
    )
    contents = "; ".join(f"{r}: {', '.join(o)}" for r, o in world.initial.items() if o)
    config = {
        "task_type": goal.task_type,
        "object": goal.object,
        "receptacle": goal.receptacle,
        "lamp": goal.lamp,
        "receptacles": spec,
        "contents": contents,
        "start": world.start,
        "allow": sorted(world.allow),
        "arrive": world.arrive,
        "intro": "raw" if tr.raw_intro else "react",
        "put_verb": world.put_verb,
        "locs": world.locs or None,
        "shared": world.groups() or None,
    }
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return Task(
        id=task_id or f"household-transcript-{digest}",
        env="agentgym/Household-v0",
        split="transcripts",
        instruction=tr.instruction,
        config={k: v for k, v in config.items() if v not in (None, [], "none", "react", "put")},
        gold={"actions": [a for a, _ in tr.steps]},
        tags=["transcript"],
    )


@dataclass
class Replay:
    """Outcome of replaying a transcript: every answer compared, and whether the game was won."""

    task: Task
    steps: list[tuple[str, str | None, str]]
    """(command, the transcript's answer or None, our engine's answer); step 0 is the start."""
    won: bool

    @property
    def mismatches(self) -> list[tuple[int, str, str, str]]:
        """(step number, command, expected, got) for every differing answer."""
        return [
            (i, a, want, got)
            for i, (a, want, got) in enumerate(self.steps)
            if want is not None and want != got
        ]


def replay(text: str, task_id: str | None = None) -> Replay:
    """Import a transcript and play its commands, comparing the first observation too."""
    from agentgym.envs.household.env import HouseholdEnv

    task = from_transcript(text, task_id)
    tr = parse_transcript(text)
    env = HouseholdEnv()
    obs, _ = env.reset(seed=0, options={"task": task})
    expected_intro = f"{tr.overview}\n{TASK_LINE}{tr.instruction}"
    if tr.raw_intro:
        expected_intro = f"{BANNER}\n\n{tr.overview}\n\n{TASK_LINE}{tr.instruction}"
    steps: list[tuple[str, str | None, str]] = [("(start)", expected_intro, obs)]
    info: dict[str, object] = {}
    for action, answer in tr.steps:
        obs, _, _, _, info = env.step(action)
        steps.append((action, answer, obs))
    return Replay(task, steps, bool(info.get("success")))
