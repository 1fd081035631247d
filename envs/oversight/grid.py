"""Gridworld maps (data files under ``data/``), moves, and the two fixed policies on them.

A map is a JSON file: ``grid`` (rows of tiles), ``corrupt`` (cells where sigma steps into danger)
and ``sigma_blind`` (danger tiles sigma's planner treats as floor). Tiles: ``#`` wall, ``S``
wall marked as the supervisor's border (AI-safety gridworlds), space floor, ``A`` start, ``G``
goal (terminal), ``L`` lava (danger, terminal), ``P`` punishment cell (danger, not terminal).

sigma is the shortest path to the goal (ties broken up, right, down, left) avoiding danger tiles
it is not blind to, overridden in the corrupted cells; the human's safe action is the shortest
path avoiding every danger tile.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

Cell = tuple[int, int]
MOVE_DELTAS: dict[str, Cell] = {"up": (-1, 0), "right": (0, 1), "down": (1, 0), "left": (0, -1)}
DIRECTIONS = tuple(MOVE_DELTAS)
WALLS = frozenset("#S")
DANGER = frozenset("LP")
TERMINAL = frozenset("GL")
TILES = frozenset("#S AGLP")
UNREACHABLE = 1 << 30


@dataclass(frozen=True)
class Corruption:
    """sigma's override in one cell: the move it makes there instead of the shortest path."""

    cell: Cell
    move: str


@dataclass(frozen=True)
class GridMap:
    """A parsed, validated map."""

    name: str
    rows: tuple[str, ...]
    corrupt: tuple[Corruption, ...]
    sigma_blind: frozenset[str]
    description: str = ""

    def tile(self, cell: Cell) -> str:
        r, c = cell
        return self.rows[r][c]

    @property
    def cells(self) -> list[Cell]:
        """Every non-wall cell, row-major."""
        return [
            (r, c) for r, row in enumerate(self.rows) for c, t in enumerate(row) if t not in WALLS
        ]

    @property
    def start(self) -> Cell:
        return next(c for c in self.cells if self.tile(c) == "A")

    def is_danger(self, cell: Cell) -> bool:
        return self.tile(cell) in DANGER

    def is_terminal(self, cell: Cell) -> bool:
        return self.tile(cell) in TERMINAL

    def next_cell(self, cell: Cell, move: str) -> Cell:
        """Where ``move`` leads from ``cell`` (a wall leaves the agent in place)."""
        dr, dc = MOVE_DELTAS[move]
        target = (cell[0] + dr, cell[1] + dc)
        return cell if self.tile(target) in WALLS else target

    def with_corruption(self, corrupt: tuple[Corruption, ...]) -> GridMap:
        """The same map with other corrupted cells (validated)."""
        gm = GridMap(self.name, self.rows, corrupt, self.sigma_blind, self.description)
        validate_corruption(gm)
        return gm


def distances(gm: GridMap, avoid: frozenset[str]) -> dict[Cell, int]:
    """Steps to the nearest goal over cells whose tile is not in ``avoid`` (BFS from the goals)."""
    goals = [c for c in gm.cells if gm.tile(c) == "G"]
    dist = dict.fromkeys(goals, 0)
    queue = deque(goals)
    while queue:
        cell = queue.popleft()
        for move in DIRECTIONS:
            nxt = gm.next_cell(cell, move)
            if nxt not in dist and gm.tile(nxt) not in avoid and not gm.is_terminal(nxt):
                dist[nxt] = dist[cell] + 1
                queue.append(nxt)
    return dist


def greedy_policy(gm: GridMap, avoid: frozenset[str]) -> dict[Cell, str]:
    """In every non-terminal cell, the first move (up, right, down, left) that gets closest."""
    dist = distances(gm, avoid)

    def score(cell: Cell, move: str) -> int:
        nxt = gm.next_cell(cell, move)
        if gm.tile(nxt) in avoid:
            return UNREACHABLE
        return dist.get(nxt, UNREACHABLE)

    return {
        c: min(DIRECTIONS, key=lambda m: score(c, m)) for c in gm.cells if not gm.is_terminal(c)
    }


def sigma_policy(gm: GridMap) -> dict[Cell, str]:
    """The base policy: shortest path (blind to ``sigma_blind`` tiles), corrupted cells overridden."""
    policy = greedy_policy(gm, DANGER - gm.sigma_blind)
    policy.update({k.cell: k.move for k in gm.corrupt})
    return policy


def human_policy(gm: GridMap) -> dict[Cell, str]:
    """The human's safe action: shortest path avoiding every danger tile."""
    return greedy_policy(gm, DANGER)


def validate_corruption(gm: GridMap) -> None:
    """Every corrupted cell is a non-terminal floor cell whose move steps into danger."""
    for k in gm.corrupt:
        r, c = k.cell
        if not (0 <= r < len(gm.rows) and 0 <= c < len(gm.rows[0])) or gm.tile(k.cell) in WALLS:
            raise ValueError(f"map {gm.name!r}: corrupt cell {list(k.cell)} is not a floor cell")
        if gm.is_terminal(k.cell):
            raise ValueError(f"map {gm.name!r}: corrupt cell {list(k.cell)} is terminal")
        if k.move not in MOVE_DELTAS:
            raise ValueError(
                f"map {gm.name!r}: corrupt move {k.move!r} is not one of {', '.join(DIRECTIONS)}"
            )
        if not gm.is_danger(gm.next_cell(k.cell, k.move)):
            raise ValueError(
                f"map {gm.name!r}: corrupt move {k.move} from {list(k.cell)} does not step into danger"
            )


def parse_map(data: dict[str, Any]) -> GridMap:
    """A map from its JSON form; raises ``ValueError`` naming what is wrong."""
    name = str(data.get("name", "?"))
    rows = tuple(data.get("grid") or ())
    if not rows or len({len(r) for r in rows}) != 1:
        raise ValueError(f"map {name!r}: grid must be non-empty rows of equal length")
    bad = {t for r in rows for t in r} - TILES
    if bad:
        raise ValueError(f"map {name!r}: unknown tiles {sorted(bad)}; allowed: {sorted(TILES)}")
    if any(t not in WALLS for t in rows[0] + rows[-1] + "".join(r[0] + r[-1] for r in rows)):
        raise ValueError(f"map {name!r}: the border must be walls (# or S)")
    if "".join(rows).count("A") != 1 or "G" not in "".join(rows):
        raise ValueError(f"map {name!r}: needs exactly one start A and at least one goal G")
    corrupt = tuple(Corruption(tuple(k["cell"]), k["move"]) for k in data.get("corrupt", []))  # type: ignore[arg-type]
    gm = GridMap(
        name, rows, corrupt, frozenset(data.get("sigma_blind", [])), data.get("description", "")
    )
    validate_corruption(gm)
    if gm.start not in distances(gm, DANGER):
        raise ValueError(f"map {name!r}: no safe path from the start to a goal")
    return gm


def map_names() -> list[str]:
    """The maps shipped in ``data/``."""
    root = resources.files("agentgym.envs.oversight").joinpath("data")
    return sorted(f.name[:-5] for f in root.iterdir() if f.name.endswith(".json"))


@cache
def load_map(name: str) -> GridMap:
    """A shipped map by name; an unknown name lists the known ones."""
    if name not in map_names():
        raise KeyError(f"unknown oversight map {name!r}; known: {', '.join(map_names())}")
    path = resources.files("agentgym.envs.oversight").joinpath("data").joinpath(f"{name}.json")
    return parse_map(json.loads(path.read_text(encoding="utf-8")))
