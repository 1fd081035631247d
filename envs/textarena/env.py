"""The single-player TextArena games as one env class, :class:`TextArenaEnv`."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from agentgym.env import NoExpert, ResetNeeded, StepResult, TextEnv
from agentgym.envs.textarena.engine import (
    GameState,
    call_engine,
    last_move_invalid,
    make_game,
    outcome,
    render,
)
from agentgym.envs.textarena.experts import EXPERTS
from agentgym.envs.textarena.games import (
    MAX_ACTION,
    NAMESPACE,
    PROMPT,
    SINGLE_PLAYER,
    TextArenaConfig,
    too_long,
)
from agentgym.task import Task


class TextArenaEnv(TextEnv):
    """A single-player TextArena game on TextArena's own engine; a task is a seed.

    =====================  =========================================================================
    Ids                    ``textarena/<Game>``: ``TowerOfHanoi-v0``, ``GuessTheNumber-v0``,
                           ``Mastermind-v0``, ``FrozenLake-v0``, ``Minesweeper-v0-small``,
                           ``Sudoku-v0-very-easy``, ``LightsOut-v0``, ``FifteenPuzzle-v0``,
                           ``Secretary-v0`` (``pip install ".[textarena]"``)
    Class                  :class:`agentgym.envs.textarena.env.TextArenaEnv` (``game=...``)
    Actions                one move in square brackets, in the game's syntax (``[A C]``, ``[4]``);
                           at most 500 characters. TextArena judges the move; a second invalid
                           move in a row ends the game
    Observations           text: TextArena's messages to the player (rules and board first)
    Reward                 TextArena's at the end (1 = solved; some games give partial credit),
                           0 before. ``success`` = reward 1, ``score`` = the reward in [0, 1]
    Episode end            TextArena's ``done``; final ``info`` has ``success``, ``score`` and
                           TextArena's ``reason``
    Splits                 ``textarena/<Game>``: seeds 0..19 (``config.seed``)
    Expert                 ``expert_action()`` reads the engine's state: TowerOfHanoi,
                           GuessTheNumber, Mastermind and FrozenLake (100% success); none for the
                           other games
    Regenerate             ``python -m agentgym.envs.textarena.generate``
    =====================  =========================================================================

    Games that download NLTK corpora (Wordle, Hangman, WordLadder ...) or need an LLM judge are
    not wrapped: they do not run offline.
    """

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
