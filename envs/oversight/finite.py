"""A finite oversight game as arrays, and exact policy evaluation on it.

States are indexed ``0..S-1``; moves are indices into ``AGENT_MOVES`` (0 play, 1 ask) and
``HUMAN_MOVES`` (0 trust, 1 oversee). Transitions are deterministic (the gridworld is).
Episodes last at most ``horizon`` steps, so values are computed exactly by backward induction:
``V_t(s) = sum_{a,h} pi_A(a|s) pi_H(h|s) [r(s,a,h) + (1 - done) V_{t+1}(next)]`` with
``V_horizon = 0``. A policy is an ``(S, 2)`` array of move probabilities (stationary).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from agentgym.envs.oversight.rules import AGENT, HUMAN

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@dataclass
class FiniteGame:
    """Arrays of shape ``(S, 2, 2)`` indexed by state, agent move, human move."""

    start: int
    horizon: int
    next_state: IntArray
    done: BoolArray
    rewards: dict[str, FloatArray]
    """Each player's reward."""
    team: FloatArray
    """The candidate potential's reward (the shared reward)."""
    unsafe: BoolArray
    terminal: BoolArray
    """``(S,)``: absorbing states where nobody moves (values 0)."""
    labels: list[str] = field(default_factory=list)
    """A name per state (a cell), for reports."""

    @property
    def n_states(self) -> int:
        return int(self.next_state.shape[0])


def evaluate(
    game: FiniteGame, agent: FloatArray, human: FloatArray, reward: FloatArray
) -> FloatArray:
    """Exact values ``V[t, s]`` (``t = 0..horizon``) of a stationary policy pair under ``reward``."""
    joint = agent[:, :, None] * human[:, None, :]
    values = np.zeros((game.horizon + 1, game.n_states))
    for t in range(game.horizon - 1, -1, -1):
        future = np.where(game.done, 0.0, values[t + 1][game.next_state])
        values[t] = np.sum(joint * (reward + future), axis=(1, 2))
        values[t][game.terminal] = 0.0
    return values


def player_values(game: FiniteGame, agent: FloatArray, human: FloatArray) -> dict[str, FloatArray]:
    """``V_i(s)`` at ``t = 0`` for each player, and ``"team"`` for the potential."""
    out = {p: evaluate(game, agent, human, game.rewards[p])[0] for p in (AGENT, HUMAN)}
    out["team"] = evaluate(game, agent, human, game.team)[0]
    return out


def expected_counts(game: FiniteGame, agent: FloatArray, human: FloatArray) -> dict[str, float]:
    """Exact expected asks, oversees and unsafe steps per episode from the start state."""
    ask = np.broadcast_to(np.array([0.0, 1.0])[None, :, None], game.team.shape)
    oversee = np.broadcast_to(np.array([0.0, 1.0])[None, None, :], game.team.shape)
    counts = {
        "asks": ask,
        "oversees": oversee,
        "violations": game.unsafe.astype(float),
        "steps": np.ones_like(game.team),
    }
    return {k: float(evaluate(game, agent, human, v)[0][game.start]) for k, v in counts.items()}


@dataclass(frozen=True)
class JointPlan:
    """A deterministic, time-dependent joint policy: ``moves[t, s] = (agent move, human move)``."""

    moves: IntArray
    value: float


def team_optimum(game: FiniteGame) -> JointPlan:
    """The joint plan maximising the team reward, by backward induction (exact)."""
    values = np.zeros((game.horizon + 1, game.n_states))
    moves = np.zeros((game.horizon, game.n_states, 2), dtype=np.int64)
    for t in range(game.horizon - 1, -1, -1):
        future = np.where(game.done, 0.0, values[t + 1][game.next_state])
        q = (game.team + future).reshape(game.n_states, 4)
        best = np.argmax(q, axis=1)
        values[t] = q[np.arange(game.n_states), best]
        values[t][game.terminal] = 0.0
        moves[t] = np.stack([best // 2, best % 2], axis=1)
    return JointPlan(moves, float(values[0][game.start]))


def occupancy(game: FiniteGame, agent: FloatArray, human: FloatArray) -> FloatArray:
    """Expected number of decisions taken in each state per episode (exact forward pass)."""
    joint = agent[:, :, None] * human[:, None, :]
    dist = np.zeros(game.n_states)
    dist[game.start] = 1.0
    visits = np.zeros(game.n_states)
    for _ in range(game.horizon):
        dist = np.where(game.terminal, 0.0, dist)
        visits += dist
        flow = dist[:, None, None] * joint * ~game.done
        dist = np.bincount(
            game.next_state.ravel(), weights=flow.ravel(), minlength=game.n_states
        ).astype(np.float64)
    return visits
