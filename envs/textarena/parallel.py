"""A two-player TextArena game as a PettingZoo ``ParallelEnv``, :class:`TextArenaParallelEnv`."""

from __future__ import annotations

from typing import Any

from agentgym.env import ResetNeeded
from agentgym.envs.textarena.engine import (
    GameState,
    call_engine,
    last_move_invalid,
    legal_moves,
    make_game,
    outcome,
    render,
)
from agentgym.envs.textarena.games import MAX_ACTION, TWO_PLAYER
from agentgym.parallel_env import TextParallelEnv

SEATS = ("player_0", "player_1")


class TextArenaParallelEnv(TextParallelEnv):
    """A two-player TextArena game as a PettingZoo ``ParallelEnv``: seats ``player_0`` and
    ``player_1``. Each step only the seat whose turn it is moves (the other's action is ignored
    and its observation says so); rewards are TextArena's at the end (+1 win, -1 loss, 0 draw)."""

    metadata: dict[str, Any] = {
        "render_modes": ["ansi"],
        "is_parallelizable": True,
        "name": "textarena_parallel_v0",
    }

    def __init__(self, game: str = "TicTacToe-v0", render_mode: str | None = None) -> None:
        if game not in TWO_PLAYER:
            raise ValueError(f"game {game!r} is not wrapped; use one of {', '.join(TWO_PLAYER)}")
        super().__init__(SEATS, render_mode)
        self.game_id = game
        self.state: GameState | None = None
        self.pending: dict[int, list[Any]] = {0: [], 1: []}

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        game = make_game(self.game_id)
        self.state = GameState(game, None)
        call_engine(self.state, game.reset, num_players=2, seed=seed or 0)
        self.agents = list(SEATS)
        self.pending = {0: [], 1: []}
        return self._observations(), self._infos()

    def _collect(self) -> None:
        """Move every player's queued TextArena messages into ``pending``."""
        assert self.state is not None
        for pid in (0, 1):
            self.pending[pid] += self.state.game.state.observations[pid]
            self.state.game.state.observations[pid] = []

    def _observations(self) -> dict[str, str]:
        assert self.state is not None
        self._collect()
        current = self.state.game.state.current_player_id
        out = {}
        for pid, seat in enumerate(SEATS):
            text = render(self.pending[pid], pid)
            if pid == current:
                self.pending[pid] = []
                out[seat] = text or "Your move."
            else:
                out[seat] = f"Waiting for player_{current} to move."
        return out

    def _infos(self) -> dict[str, dict[str, Any]]:
        assert self.state is not None
        current = self.state.game.state.current_player_id
        return {
            seat: {"to_move": SEATS[current]}
            | (
                {"available_actions": legal_moves(self.game_id, self.state.game)}
                if pid == current
                else {}
            )
            for pid, seat in enumerate(SEATS)
        }

    def step(self, actions: dict[str, str]) -> tuple[Any, Any, Any, Any, Any]:
        if self.state is None or not self.agents:
            raise ResetNeeded("call reset() before step()")
        game = self.state.game
        mover = game.state.current_player_id
        action = actions.get(SEATS[mover])
        text = action if isinstance(action, str) and len(action) <= MAX_ACTION else ""
        done, _ = call_engine(self.state, game.step, text)
        invalid = last_move_invalid(game, mover)
        zero = dict.fromkeys(self.agents, 0.0)
        if done:
            results = {seat: outcome(game, pid) for pid, seat in enumerate(SEATS)}
            self._collect()
            obs = {
                seat: f"{render(self.pending[pid], pid)}\nGame over: {results[seat]['reason']}".strip()
                for pid, seat in enumerate(SEATS)
            }
            rewards = {seat: results[seat]["game_reward"] for seat in SEATS}
            infos = {
                seat: results[seat] | {"valid": not invalid or seat != SEATS[mover]}
                for seat in SEATS
            }
            self.agents = []
            return obs, rewards, dict.fromkeys(SEATS, True), dict.fromkeys(SEATS, False), infos
        infos = self._infos()
        infos[SEATS[mover]]["valid"] = not invalid
        return (
            self._observations(),
            zero,
            dict.fromkeys(SEATS, False),
            dict.fromkeys(SEATS, False),
            infos,
        )

    def render(self) -> str | None:
        if self.state is None:
            return None
        return str(self.state.game.state.game_state.get("board"))
