"""TextArena's engine, driven deterministically: each call runs with the episode's own ``random``.

TextArena draws from Python's process-global ``random``; every call into the engine runs with the
episode's saved generator state (under a lock), so episodes are deterministic, snapshots exact, and
the caller's ``random`` untouched.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import Any

from agentgym.envs.textarena.games import TWO_PLAYER
from agentgym.extras import require

_RANDOM = threading.Lock()
"""Serialises engine calls: each swaps the process-global ``random`` state in and out."""


@dataclass
class GameState:
    """The episode: TextArena's engine object and the generator state it draws from."""

    game: Any
    rng: Any
    shown: int = 0
    """Player moves already answered (the turns the agent took)."""


def make_game(game_id: str) -> Any:
    """TextArena's unwrapped engine of ``game_id`` (its ``-raw`` registration)."""
    require("TextArena games", "textarena")
    import textarena as ta

    return ta.make(f"{game_id}-raw")


def call_engine(state: GameState, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn`` with the episode's ``random`` state, save it back, restore the caller's."""
    with _RANDOM:
        outer = random.getstate()
        try:
            if state.rng is not None:
                random.setstate(state.rng)
            result = fn(*args, **kwargs)
            state.rng = random.getstate()
        finally:
            random.setstate(outer)
    return result


def render(messages: list[tuple[int, str, Any]], me: int) -> str:
    """New TextArena messages for player ``me`` as text (its own move echoes left out)."""
    import textarena as ta

    lines = []
    for sender, message, kind in messages:
        if kind == ta.ObservationType.PLAYER_ACTION:
            if sender == me:
                continue
            lines.append(f"[Player {sender}] {message}")
        else:
            lines.append(message if sender == ta.GAME_ID else f"[Player {sender}] {message}")
    return "\n".join(lines).strip()


def outcome(game: Any, me: int) -> dict[str, Any]:
    """Final info of player ``me``: ``success`` (TextArena's reward 1, a win or a solve),
    ``score`` (the reward clipped to [0, 1]), ``reward`` and TextArena's ``reason``."""
    rewards = game.state.rewards or {}
    reward = float(rewards.get(me, 0.0))
    info = game.state.game_info.get(me, {})
    return {
        "success": reward >= 1.0,
        "score": min(1.0, max(0.0, reward)),
        "game_reward": reward,
        "reason": str(info.get("reason", "")),
    }


def last_move_invalid(game: Any, me: int) -> bool:
    """Whether TextArena rejected player ``me``'s last move (it keeps a count, not a flag)."""
    state = game.state
    return bool(getattr(state, "error_count", 0)) or bool(state.game_info[me].get("invalid_move"))


def legal_moves(game_id: str, game: Any) -> list[str]:
    """The moves player ``current`` may make now, in TextArena's syntax."""
    board = game.state.game_state["board"]
    if game_id == "TicTacToe-v0":
        return [f"[{r * 3 + c}]" for r in range(3) for c in range(3) if board[r][c] == ""]
    if game_id == "ConnectFour-v0":
        return [f"[col {c}]" for c in range(len(board[0])) if board[0][c] == "."]
    raise ValueError(f"no move list for {game_id!r}; use one of {', '.join(TWO_PLAYER)}")
