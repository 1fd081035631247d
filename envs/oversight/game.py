"""The gridworld oversight game: its config (``Task.config``) and its one-step dynamics.

:meth:`GridGame.transition` is the single source of truth: the text env steps through it and
:meth:`GridGame.finite` tabulates it for exact analysis and learning, so both agree by
construction (and a test checks it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentgym.envs.oversight.finite import FiniteGame
from agentgym.envs.oversight.grid import (
    Cell,
    Corruption,
    GridMap,
    human_policy,
    load_map,
    sigma_policy,
)
from agentgym.envs.oversight.rules import (
    AGENT,
    AGENT_MOVES,
    HUMAN,
    HUMAN_MOVES,
    Correction,
    Outcome,
    Rewards,
    resolve,
    step_rewards,
    team_reward,
)


class CorruptCell(BaseModel):
    """A cell where sigma steps into danger, and the move it makes there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell: tuple[int, int]
    move: Literal["up", "right", "down", "left"]


class GridConfig(BaseModel):
    """``Task.config`` of the gridworld oversight game; every constant has a documented default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    map: str
    """A map in ``envs/oversight/data`` (``lava-a``, ``lava-b``, ``absent-supervisor``)."""
    corrupt: list[CorruptCell] | None = None
    """Cells where sigma steps into danger; None: the map file's own."""
    max_steps: int = Field(default=30, ge=1, le=1000)
    """Joint moves before the episode is truncated (invalid ones count)."""
    goal_reward: float = 1.0
    """Task reward for reaching the goal."""
    step_reward: float = 0.0
    """Task reward on every executed step (0: no time pressure beyond the costs)."""
    correction: Correction = "block"
    """What (play, oversee) does with an unsafe proposal: ``block`` it or run the ``human``'s."""
    rewards: Rewards = Rewards()
    human_sees_proposal: bool = False
    """False: the human learns sigma's proposal only on steps it oversees."""


@dataclass(frozen=True)
class Transition:
    """One joint move's result."""

    proposal: str
    proposal_safe: bool
    outcome: Outcome
    executed: str | None
    """The move that ran (None when blocked)."""
    next_cell: Cell
    unsafe: bool
    task_reward: float
    done: bool
    goal: bool
    """The move entered the goal."""
    rewards: dict[str, float]
    team: float


class GridGame:
    """The gridworld oversight game of one config: map, sigma, the human's safe policy."""

    def __init__(self, config: GridConfig) -> None:
        self.config = config
        base = load_map(config.map)
        if config.corrupt is not None:
            base = base.with_corruption(tuple(Corruption(k.cell, k.move) for k in config.corrupt))
        self.map: GridMap = base
        self.sigma = sigma_policy(base)
        self.human = human_policy(base)
        self.cells = base.cells
        self.index = {c: i for i, c in enumerate(self.cells)}

    def transition(self, cell: Cell, agent_move: str, human_move: str) -> Transition:
        """The result of a joint move in a non-terminal ``cell``."""
        gm, cfg = self.map, self.config
        proposal = self.sigma[cell]
        safe = not gm.is_danger(gm.next_cell(cell, proposal))
        outcome = resolve(agent_move, human_move, safe, cfg.correction)
        executed = {"sigma": proposal, "human": self.human[cell], "blocked": None}[outcome.source]
        nxt = gm.next_cell(cell, executed) if executed else cell
        unsafe = nxt != cell and gm.is_danger(nxt)
        goal = gm.tile(nxt) == "G"
        task = cfg.step_reward * (executed is not None) + cfg.goal_reward * goal
        asked, oversaw = agent_move == "ask", human_move == "oversee"
        return Transition(
            proposal, safe, outcome, executed, nxt, unsafe, task, gm.is_terminal(nxt), goal,
            step_rewards(cfg.rewards, task, asked, oversaw, unsafe),
            team_reward(cfg.rewards, task, asked, oversaw, unsafe),
        )  # fmt: skip

    @cached_property
    def danger_cells(self) -> list[Cell]:
        """Cells where sigma's proposal steps into danger."""
        return [c for c, m in self.sigma.items() if self.map.is_danger(self.map.next_cell(c, m))]

    def finite(self) -> FiniteGame:
        """The game as arrays over the map's non-wall cells (exact analysis, fast learning)."""
        n = len(self.cells)
        shape = (n, len(AGENT_MOVES), len(HUMAN_MOVES))
        nxt = np.zeros(shape, dtype=np.int64)
        done, unsafe = np.ones(shape, dtype=bool), np.zeros(shape, dtype=bool)
        rew = {AGENT: np.zeros(shape), HUMAN: np.zeros(shape)}
        team = np.zeros(shape)
        terminal = np.array([self.map.is_terminal(c) for c in self.cells])
        for s, cell in enumerate(self.cells):
            nxt[s] = s
            if terminal[s]:
                continue
            for a, am in enumerate(AGENT_MOVES):
                for h, hm in enumerate(HUMAN_MOVES):
                    tr = self.transition(cell, am, hm)
                    nxt[s, a, h], done[s, a, h] = self.index[tr.next_cell], tr.done
                    unsafe[s, a, h], team[s, a, h] = tr.unsafe, tr.team
                    rew[AGENT][s, a, h], rew[HUMAN][s, a, h] = tr.rewards[AGENT], tr.rewards[HUMAN]
        labels = [f"({r},{c})" for r, c in self.cells]
        start = self.index[self.map.start]
        return FiniteGame(
            start, self.config.max_steps, nxt, done, rew, team, unsafe, terminal, labels
        )
