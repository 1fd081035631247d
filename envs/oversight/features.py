"""State features for function-approximation policies (the torch learner), per seat.

Both seats see their cell (one-hot) and the 3x3 tiles around it (wall, floor, danger, goal); the
agent also sees sigma's proposal and the tile it leads to. The human sees the proposal only when
``human_sees_proposal`` is set (otherwise it learns it only by overseeing, which a stationary
policy cannot condition on).
"""

from __future__ import annotations

import numpy as np

from agentgym.envs.oversight.finite import FloatArray
from agentgym.envs.oversight.game import GridGame
from agentgym.envs.oversight.grid import DANGER, DIRECTIONS, WALLS, Cell
from agentgym.envs.oversight.rules import AGENT

TILE_CLASSES = 4


def tile_class(tile: str) -> int:
    """0 wall, 1 floor/start, 2 danger, 3 goal."""
    if tile in WALLS:
        return 0
    if tile in DANGER:
        return 2
    return 3 if tile == "G" else 1


def _one_hot(index: int, size: int) -> list[float]:
    out = [0.0] * size
    out[index] = 1.0
    return out


def _local_view(game: GridGame, cell: Cell) -> list[float]:
    rows = game.map.rows
    view: list[float] = []
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            r, c = cell[0] + dr, cell[1] + dc
            inside = 0 <= r < len(rows) and 0 <= c < len(rows[0])
            view += _one_hot(tile_class(rows[r][c]) if inside else 0, TILE_CLASSES)
    return view


def _proposal(game: GridGame, cell: Cell) -> list[float]:
    move = game.sigma.get(cell)
    if move is None:  # terminal cell: nobody moves
        return [0.0] * (len(DIRECTIONS) + TILE_CLASSES)
    target = game.map.tile(game.map.next_cell(cell, move))
    return _one_hot(DIRECTIONS.index(move), len(DIRECTIONS)) + _one_hot(
        tile_class(target), TILE_CLASSES
    )


def features(game: GridGame, player: str) -> FloatArray:
    """``(S, F)`` features of every state for ``player``."""
    sees_proposal = player == AGENT or game.config.human_sees_proposal
    rows = []
    for i, cell in enumerate(game.cells):
        row = _one_hot(i, len(game.cells)) + _local_view(game, cell)
        rows.append(row + (_proposal(game, cell) if sees_proposal else []))
    return np.asarray(rows, dtype=np.float64)
