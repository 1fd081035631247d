"""Oracles for the single-player games whose engine state gives the answer away: each reads
TextArena's ``game_state`` and returns the next move of a shortest solution."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any


def hanoi(game_state: dict[str, Any], game: Any) -> str:
    """The next move of the optimal Tower of Hanoi solution towards peg C."""
    towers = game_state["towers"]
    peg = {disk: name for name, disks in towers.items() for disk in disks}

    def move(n: int, target: str) -> tuple[str, str] | None:
        if n == 0:
            return None
        if peg[n] == target:
            return move(n - 1, target)
        aux = ({"A", "B", "C"} - {peg[n], target}).pop()
        return move(n - 1, aux) or (peg[n], target)

    step = move(len(peg), "C")
    assert step is not None, "the puzzle is already solved"
    return f"[{step[0]} {step[1]}]"


def guess(game_state: dict[str, Any], game: Any) -> str:
    """The hidden number."""
    return f"[{game_state['game_number']}]"


def mastermind(game_state: dict[str, Any], game: Any) -> str:
    """The secret code."""
    return "[" + " ".join(str(d) for d in game_state["secret_code"]) + "]"


def frozen_lake(game_state: dict[str, Any], game: Any) -> str:
    """The first step of a shortest path to the goal around the holes (breadth-first)."""
    grid, start, goal = (
        game_state["grid"],
        tuple(game_state["player_pos"]),
        tuple(game_state["goal_pos"]),
    )
    moves = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
    first: dict[tuple[int, int], str | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            break
        for name, (dr, dc) in moves.items():
            r, c = cell[0] + dr, cell[1] + dc
            if (
                0 <= r < len(grid)
                and 0 <= c < len(grid[0])
                and grid[r][c] != "H"
                and (r, c) not in first
            ):
                first[(r, c)] = first[cell] or name
                queue.append((r, c))
    return f"[{first[goal]}]"


EXPERTS: dict[str, Callable[[dict[str, Any], Any], str]] = {
    "TowerOfHanoi-v0": hanoi,
    "GuessTheNumber-v0": guess,
    "Mastermind-v0": mastermind,
    "FrozenLake-v0": frozen_lake,
}
