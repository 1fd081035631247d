"""Player 0's seat of a two-player TextArena game as a single-agent env, :class:`TextArenaSeatEnv`."""

from __future__ import annotations

import random
from typing import Any, ClassVar

from pydantic import BaseModel

from agentgym.env import StepResult, TextEnv
from agentgym.envs.textarena.games import (
    MAX_ACTION,
    NAMESPACE,
    PROMPT,
    TWO_PLAYER,
    TextArenaConfig,
    too_long,
)
from agentgym.envs.textarena.parallel import SEATS, TextArenaParallelEnv
from agentgym.task import Task


class TextArenaSeatEnv(TextEnv):
    """Player 0's seat of a two-player TextArena game; player 1 is an embedded partner.

    =====================  =========================================================================
    Ids                    ``textarena/TicTacToe-v0``, ``textarena/ConnectFour-v0``
                           (``pip install ".[textarena]"``)
    Class                  :class:`agentgym.envs.textarena.seat.TextArenaSeatEnv` (``game=...``,
                           ``partner=...``)
    Multi-agent            both seats: :class:`agentgym.envs.textarena.parallel.TextArenaParallelEnv`,
                           a PettingZoo ``ParallelEnv`` with seats ``player_0`` and ``player_1``
    Partner                ``"random"`` (default: a legal move drawn with the task's seed) or any
                           agentgym ``Agent``; an invalid partner move is rejected once, then
                           TextArena forfeits the game for it
    Actions                one move in square brackets (``[4]``, ``[col 3]``); at most 500
                           characters; ``info["available_actions"]`` lists the legal ones
    Observations           text: TextArena's messages to player 0, the partner's moves included
    Reward                 player 0's at the end: +1 win, -1 loss, 0 draw; 0 before.
                           ``success`` = a win, ``score`` = the reward clipped to [0, 1]
    Episode end            TextArena's ``done``; final ``info`` has ``success``, ``score`` and
                           TextArena's ``reason``
    Splits                 ``textarena/<Game>``: seeds 0..19 (``config.seed``)
    Expert                 none: the outcome depends on the partner
    Regenerate             ``python -m agentgym.envs.textarena.generate``
    =====================  =========================================================================
    """

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
