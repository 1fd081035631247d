"""``SocialParallelEnv``: both seats as a PettingZoo ``ParallelEnv`` with text spaces.

Agents are ``agent_0`` and ``agent_1`` (their names are in ``infos[agent]["name"]``). Every step
takes both agents' actions; only the acting seat's counts (round-robin, as in Sotopia), the other
is told to wait. Rewards are 0 until the end, then each agent's goal score scaled to 0..1;
``infos[agent]["evaluation"]`` holds the scores per dimension (after every turn with
``evaluate_every_turn=True``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentgym.env import resolve_task
from agentgym.envs.social.config import SocialConfig
from agentgym.envs.social.factory import make_judge
from agentgym.envs.social.game import GameState, play_turn
from agentgym.envs.social.judge import Evaluation, Judge
from agentgym.envs.social.prompt import observation
from agentgym.parallel_env import TextParallelEnv
from agentgym.task import Task, TaskSuite

AGENTS = ["agent_0", "agent_1"]


class SocialParallelEnv(TextParallelEnv):
    """Two-agent Sotopia episodes (see :mod:`agentgym.envs.social`)."""

    metadata = {"name": "social_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(
        self,
        suite: str | TaskSuite = "social/all",
        judge: str = "auto",
        model: str | None = None,
        evaluate_every_turn: bool = False,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(AGENTS, render_mode)
        self.suite = suite if isinstance(suite, TaskSuite) else TaskSuite.load(suite)
        self.judge_spec, self.model = judge, model
        self.evaluate_every_turn = evaluate_every_turn
        self.rng = np.random.default_rng()
        self.task: Task | None = None

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
            for i, agent in enumerate(AGENTS):
                self.action_space(agent).seed(seed + i)
        self.task = resolve_task((options or {}).get("task"), lambda: self.suite, self.rng)
        self.config = SocialConfig.model_validate(self.task.config)
        self.judge: Judge = make_judge(self.judge_spec, self.config, self.model)
        self.state = GameState()
        self.seen = [0, 0]
        self.agents = list(AGENTS)
        obs = {a: self._observe(i, first=True) for i, a in enumerate(AGENTS)}
        infos = {a: self._info(i, valid=True) for i, a in enumerate(AGENTS)}
        return obs, infos

    def step(
        self, actions: dict[str, str]
    ) -> tuple[
        dict[str, str],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        if not self.agents:
            raise RuntimeError("the episode is over; call reset()")
        seat = self.state.acting
        action = actions.get(AGENTS[seat])
        event = play_turn(self.state, self.config, action if isinstance(action, str) else "")
        done = self.state.done
        evaluations = (
            self.judge.evaluate(self.config, self.state)
            if done or self.evaluate_every_turn
            else None
        )
        obs = {a: self._observe(i) for i, a in enumerate(AGENTS)}
        rewards = {
            a: evaluations[i].goal if done and evaluations else 0.0 for i, a in enumerate(AGENTS)
        }
        infos = {
            a: self._info(i, event.valid or i != seat, evaluations) for i, a in enumerate(AGENTS)
        }
        flags = dict.fromkeys(AGENTS, done)
        truncated = dict.fromkeys(AGENTS, False)
        if done:
            self.agents = []
        return obs, rewards, flags, truncated, infos

    def _observe(self, seat: int, first: bool = False) -> str:
        text = observation(self.config, self.state, seat, self.seen[seat], first)
        self.seen[seat] = len(self.state.events)
        return text

    def _info(
        self, seat: int, valid: bool, evaluations: list[Evaluation] | None = None
    ) -> dict[str, Any]:
        info: dict[str, Any] = {
            "name": self.config.names[seat],
            "turn": self.state.turn,
            "acting": self.state.acting == seat and not self.state.done,
            "valid": valid,
        }
        if evaluations is not None:
            info["evaluation"] = evaluations[seat].summary()
        return info

    def render(self) -> str | None:
        from agentgym.envs.social.prompt import transcript

        return transcript(self.config, self.state) if self.render_mode == "ansi" else None

    def close(self) -> None:
        pass


def parallel_env(**kwargs: Any) -> SocialParallelEnv:
    """PettingZoo-style factory: ``agentgym.envs.social.parallel_env(suite="social/hard")``."""
    return SocialParallelEnv(**kwargs)
