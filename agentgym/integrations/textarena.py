"""TextArena's offline games as agentgym envs: ``agentgym.make("textarena/TowerOfHanoi-v0")``.

Each game runs on TextArena's own engine (the unwrapped ``-raw`` variant); a task is a seed. A
single-player game is a :class:`TextArenaEnv`; a two-player game is a PettingZoo
:class:`TextArenaParallelEnv` (both seats, turn by turn) and, for ``agentgym eval``, the
:class:`TextArenaSeatEnv`, player 0's seat with player 1 embedded as a partner. TextArena draws from
Python's process-global ``random``; every call into the engine runs with the episode's own saved
generator state (under a lock), so episodes are deterministic, snapshots exact, and the caller's
``random`` untouched. Games that download NLTK corpora (Wordle, Hangman, WordLadder ...) or need an
LLM judge are not wrapped: they do not run offline.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from agentgym.env import NoExpert, ResetNeeded, StepResult, TextEnv
from agentgym.extras import require
from agentgym.parallel_env import TextParallelEnv
from agentgym.task import Task, TaskSuite, write_manifest, write_tasks

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

_RANDOM = threading.Lock()
"""Serialises engine calls: each swaps the process-global ``random`` state in and out."""


def _require() -> None:
    require("TextArena games", "textarena")


class TextArenaConfig(BaseModel):
    """``Task.config`` of a TextArena game: the seed of TextArena's ``reset``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    seed: int = Field(ge=0)


@dataclass
class GameState:
    """The episode: TextArena's engine object and the generator state it draws from."""

    game: Any
    rng: Any
    shown: int = 0
    """Player moves already answered (the turns the agent took)."""


def make_game(game_id: str) -> Any:
    """TextArena's unwrapped engine of ``game_id`` (its ``-raw`` registration)."""
    _require()
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


def too_long(action: str) -> str:
    """Why a move of more than :data:`MAX_ACTION` characters is refused."""
    return f"A move of {len(action)} characters is refused (at most {MAX_ACTION})."


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


class TextArenaEnv(TextEnv):
    """A single-player TextArena game; a task is a seed (``config.seed``), its suite
    ``textarena/<Game>`` seeds 0..19. Reward: TextArena's at the end (1 = solved; some games give
    partial credit), 0 before. ``success`` = TextArena's reward 1. Experts (oracles reading the
    engine's state) exist for TowerOfHanoi, GuessTheNumber, Mastermind and FrozenLake."""

    config_model: ClassVar[type[BaseModel]] = TextArenaConfig
    system_prompt: ClassVar[str] = PROMPT
    one_line_actions = True
    action_max_tokens = 32
    state: GameState

    def __init__(
        self, game: str = "TowerOfHanoi-v0", suite: Any = None, render_mode: str | None = None
    ) -> None:
        if game not in SINGLE_PLAYER:
            raise ValueError(f"game {game!r} is not wrapped; use one of {', '.join(SINGLE_PLAYER)}")
        super().__init__(suite or f"{NAMESPACE}/{game}", render_mode)
        self.game_id = game

    def _reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        game = make_game(self.game_id)
        self.state = GameState(game, None)
        call_engine(self.state, game.reset, num_players=1, seed=self.config.seed)
        return self._observe(), {"game": self.game_id}

    def _observe(self) -> str:
        _, messages = call_engine(self.state, self.state.game.get_observation)
        return render(messages, 0) or "(no new message)"

    def _step(self, action: str) -> StepResult:
        if len(action) > MAX_ACTION:
            return self._step_invalid(too_long(action))
        game = self.state.game
        done, _ = call_engine(self.state, game.step, action)
        self.state.shown += 1
        info: dict[str, Any] = {"valid": not last_move_invalid(game, 0)}
        if done:
            info |= outcome(game, 0)
            _, messages = call_engine(self.state, game.get_observation)
            text = render(messages, 0)
            end = f"Game over: {info['reason']}"
            return f"{text}\n{end}".strip(), info["game_reward"], True, False, info
        return self._observe(), 0.0, False, False, info

    def _step_invalid(self, message: str) -> StepResult:
        return (
            f"{message} Answer with one move in square brackets.",
            0.0,
            False,
            False,
            {"valid": False},
        )

    def expert_action(self) -> str:
        if self.task is None:
            raise ResetNeeded("call reset() before expert_action()")
        expert = EXPERTS.get(self.game_id)
        if expert is None:
            raise NoExpert(f"{self.game_id} has no expert")
        return expert(self.state.game.state.game_state, self.state.game)


# ------------------------------------------------------------------ experts (oracles)
def _hanoi(game_state: dict[str, Any], game: Any) -> str:
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


def _guess(game_state: dict[str, Any], game: Any) -> str:
    return f"[{game_state['game_number']}]"


def _mastermind(game_state: dict[str, Any], game: Any) -> str:
    return "[" + " ".join(str(d) for d in game_state["secret_code"]) + "]"


def _frozen_lake(game_state: dict[str, Any], game: Any) -> str:
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


EXPERTS = {
    "TowerOfHanoi-v0": _hanoi,
    "GuessTheNumber-v0": _guess,
    "Mastermind-v0": _mastermind,
    "FrozenLake-v0": _frozen_lake,
}


# ------------------------------------------------------------------ two players
def legal_moves(game_id: str, game: Any) -> list[str]:
    """The moves player ``current`` may make now, in TextArena's syntax."""
    board = game.state.game_state["board"]
    if game_id == "TicTacToe-v0":
        return [f"[{r * 3 + c}]" for r in range(3) for c in range(3) if board[r][c] == ""]
    if game_id == "ConnectFour-v0":
        return [f"[col {c}]" for c in range(len(board[0])) if board[0][c] == "."]
    raise ValueError(f"no move list for {game_id!r}; use one of {', '.join(TWO_PLAYER)}")


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


class TextArenaSeatEnv(TextEnv):
    """Player 0's seat of a two-player TextArena game; player 1 is an embedded partner:
    ``"random"`` (a legal move drawn with the task's seed) or any agentgym ``Agent``. Reward and
    final info are player 0's: +1 win, -1 loss, 0 draw; ``success`` = a win, ``score`` = the
    reward clipped to [0, 1]. No expert: the outcome depends on the partner."""

    config_model: ClassVar[type[BaseModel]] = TextArenaConfig
    system_prompt: ClassVar[str] = PROMPT
    one_line_actions = True
    action_max_tokens = 32

    def __init__(
        self,
        game: str = "TicTacToe-v0",
        partner: Any = "random",
        suite: Any = None,
        render_mode: str | None = None,
    ) -> None:
        if game not in TWO_PLAYER:
            raise ValueError(f"game {game!r} is not wrapped; use one of {', '.join(TWO_PLAYER)}")
        if isinstance(partner, str) and partner != "random":
            raise ValueError(
                f"partner {partner!r} is not allowed; use 'random' or an agentgym Agent"
            )
        super().__init__(suite or f"{NAMESPACE}/{game}", render_mode)
        self.game_id = game
        self.partner = partner

    def _reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self.state = {
            "env": TextArenaParallelEnv(self.game_id),
            "rng": random.Random(self.config.seed),
        }
        obs, infos = self.state["env"].reset(seed=self.config.seed)
        if not isinstance(self.partner, str):
            self.partner.reset({"seat": SEATS[1], "task_id": task.id})
        return obs[SEATS[0]], {"game": self.game_id, **infos[SEATS[0]]}

    def _step(self, action: str) -> StepResult:
        if len(action) > MAX_ACTION:
            return (
                f"{too_long(action)} Answer with one move in square brackets.",
                0.0,
                False,
                False,
                {"valid": False},
            )
        env: TextArenaParallelEnv = self.state["env"]
        obs, rewards, terms, _, infos = env.step({SEATS[0]: action})
        mine = infos[SEATS[0]]
        valid = mine.get("valid", True)
        if not terms[SEATS[0]] and mine.get("to_move") == SEATS[1]:
            move = self._partner_move(obs[SEATS[1]], infos[SEATS[1]])
            obs, rewards, terms, _, infos = env.step({SEATS[1]: move})
            # TextArena rejects an invalid move once, then forfeits the game: so does the partner
            while not terms[SEATS[0]] and infos[SEATS[1]].get("to_move") == SEATS[1]:
                obs, rewards, terms, _, infos = env.step(
                    {SEATS[1]: self._partner_move(obs[SEATS[1]], infos[SEATS[1]])}
                )
        info = {k: v for k, v in infos[SEATS[0]].items() if k != "valid"} | {"valid": valid}
        return obs[SEATS[0]], rewards[SEATS[0]], terms[SEATS[0]], False, info

    def _partner_move(self, observation: str, info: dict[str, Any]) -> str:
        if self.partner == "random":
            return str(self.state["rng"].choice(info["available_actions"]))
        act = self.partner.act(observation, info)
        return str(getattr(act, "text", act))

    def snapshot(self) -> Any:
        if not isinstance(self.partner, str):
            raise NotImplementedError("snapshots need the built-in partner ('random')")
        return super().snapshot()


# ------------------------------------------------------------------ registry and suites
def env_id(game: str) -> str:
    """``textarena/<Game>``: the agentgym env id of a TextArena game."""
    return f"{NAMESPACE}/{game}"


def register_envs() -> None:
    """Register every wrapped game (``agentgym.envs`` entry point; imports no TextArena)."""
    from agentgym.registry import register

    for game, line in SINGLE_PLAYER.items():
        register(env_id(game), f"{__name__}:TextArenaEnv", {"game": game}, line)
    for game, line in TWO_PLAYER.items():
        register(env_id(game), f"{__name__}:TextArenaSeatEnv", {"game": game}, line)


def suite(game: str, size: int = SUITE_SIZE) -> TaskSuite:
    """The suite of a wrapped game: seeds 0..size-1."""
    two = game in TWO_PLAYER
    tasks = [
        Task(
            id=f"{game}-seed{seed}",
            env=env_id(game),
            split="test",
            instruction=f"Play TextArena's {game}" + (" as player 0." if two else "."),
            config={"seed": seed},
            tags=["textarena", "two-player" if two else "single-player"],
        )
        for seed in range(size)
    ]
    return TaskSuite(env_id(game), tasks)


def write_suites(out: Path) -> dict[str, Any]:
    """Write ``<Game>.jsonl`` for every wrapped game and the manifest (no TextArena needed)."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for game in [*SINGLE_PLAYER, *TWO_PLAYER]:
        counts[game] = write_tasks(out / f"{game}.jsonl", suite(game).tasks)
    return write_manifest(
        out,
        {
            "generator": "python -m agentgym.integrations.textarena",
            "source": "TextArena 0.7 (pip install textarena); a task is the seed of its reset",
            "suites": counts,
        },
    )


if __name__ == "__main__":
    from importlib import resources

    print(write_suites(Path(str(resources.files("agentgym.tasks"))) / NAMESPACE))
