"""The wrapped TextArena games, their ids and what every one shares: the prompt, the task config."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

NAMESPACE = "textarena"
MAX_ACTION = 500
"""Longest move passed to the engine, in characters: some TextArena parsers backtrack
quadratically (ConnectFour's ``.*\\[...\\].*`` on 100,000 brackets runs for minutes)."""
SUITE_SIZE = 20
"""Tasks (seeds 0..19) in each game's suite ``textarena/<Game>``."""

# fmt: off
SINGLE_PLAYER: dict[str, str] = {
    # TextArena id: one line for `agentgym envs`
    "TowerOfHanoi-v0": "Tower of Hanoi, 3 disks (TextArena)",
    "GuessTheNumber-v0": "Guess a number in 1..20 from higher/lower hints (TextArena)",
    "Mastermind-v0": "Mastermind, 4 digits of 1..6, no repeats (TextArena)",
    "FrozenLake-v0": "Frozen Lake 4x4: walk to the goal around the holes (TextArena)",
    "Minesweeper-v0-small": "Minesweeper 5x5, 5 mines (TextArena)",
    "Sudoku-v0-very-easy": "Sudoku with 75 clues (TextArena)",
    "LightsOut-v0": "Lights Out 5x5 (TextArena)",
    "FifteenPuzzle-v0": "The 15 puzzle (TextArena)",
    "Secretary-v0": "The secretary problem, 5 candidates (TextArena)",
}
TWO_PLAYER: dict[str, str] = {
    "TicTacToe-v0": "Tic-tac-toe against an embedded partner (TextArena, two players)",
    "ConnectFour-v0": "Connect Four against an embedded partner (TextArena, two players)",
}
# fmt: on

PROMPT = (
    "You play a text game. Read the rules in the first message and answer each turn with exactly "
    "one move, in square brackets as the game asks (for example [A C] or [4]). Anything else is an "
    "invalid move; a second invalid move in a row ends the game."
)


class TextArenaConfig(BaseModel):
    """``Task.config`` of a TextArena game: the seed of TextArena's ``reset``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    seed: int = Field(ge=0)


def env_id(game: str) -> str:
    """``textarena/<Game>``: the agentgym env id of a TextArena game."""
    return f"{NAMESPACE}/{game}"


def too_long(action: str) -> str:
    """Why a move of more than :data:`MAX_ACTION` characters is refused."""
    return f"A move of {len(action)} characters is refused (at most {MAX_ACTION})."
