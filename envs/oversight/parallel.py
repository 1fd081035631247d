"""The gridworld oversight game as a PettingZoo ``ParallelEnv`` (text observations and actions)."""

from __future__ import annotations

from typing import Any

from agentgym.envs.oversight.episode import GridEpisode, joint_step, observe
from agentgym.envs.oversight.game import GridConfig, GridGame
from agentgym.envs.oversight.rules import MOVES, PLAYERS
from agentgym.parallel_env import TextParallelEnv


class GridOversightEnv(TextParallelEnv):
    """Two seats, ``agent`` (play/ask) and ``human`` (trust/oversee), moving simultaneously."""

    metadata = {
        "name": "oversight_grid_v0",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": True,
    }
    observation_length = 1 << 14
    action_length = 1 << 10

    def __init__(self, config: GridConfig | dict[str, Any], render_mode: str | None = None) -> None:
        super().__init__(PLAYERS, render_mode)
        self.config = (
            config if isinstance(config, GridConfig) else GridConfig.model_validate(config)
        )
        self.game = GridGame(self.config)
        self.episode = GridEpisode(self.game.map.start)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        """Start at the map's start cell (the game is deterministic; ``seed`` changes nothing)."""
        self.agents = list(self.possible_agents)
        self.episode = GridEpisode(self.game.map.start)
        obs = {p: observe(self.game, self.episode, p) for p in self.agents}
        infos = {p: {"available_actions": list(MOVES[p])} for p in self.agents}
        return obs, infos

    def step(self, actions: dict[str, Any]) -> tuple[
        dict[str, str], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]
    ]:  # fmt: skip
        """One simultaneous move; a missing or malformed action means nothing executes."""
        if not self.agents:
            return {}, {}, {}, {}, {}
        ep = self.episode
        rewards, infos = joint_step(self.game, ep, actions)
        obs = {p: observe(self.game, ep, p) for p in self.agents}
        for p in self.agents:
            infos[p]["available_actions"] = list(MOVES[p])
        terms = dict.fromkeys(self.agents, ep.terminated)
        truncs = dict.fromkeys(self.agents, ep.truncated)
        if ep.done:
            self.agents = []
        return obs, rewards, terms, truncs, infos

    def render(self) -> str | None:
        text = observe(self.game, self.episode, PLAYERS[0])
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release."""

    def state(self) -> Any:
        """The global state: the agent's cell and the step count."""
        return (self.episode.cell, self.episode.steps)
