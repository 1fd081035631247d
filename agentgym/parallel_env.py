"""The multi-agent text environment contract, as a PettingZoo ``ParallelEnv`` base class.

Subclasses pass their seats to ``__init__`` and implement ``reset``, ``step`` and ``render``; the
base class checks ``render_mode`` and gives every seat text spaces that are the same object on
every call, as PettingZoo requires. ``agentgym.testing.check_parallel_env`` checks the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from gymnasium.spaces import Space
from pettingzoo import ParallelEnv

from agentgym.spaces import UnicodeText


class TextParallelEnv(ParallelEnv[str, str, str]):
    """Base class of multi-agent agentgym environments (text in, text out, every seat at once)."""

    # set in ALL subclasses: metadata, with its "name"
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "is_parallelizable": True}
    # set in SOME subclasses:
    observation_length: ClassVar[int] = 1 << 20
    """Longest observation, in characters."""
    action_length: ClassVar[int] = 1 << 14
    """Longest action, in characters."""

    def __init__(self, agents: Sequence[str], render_mode: str | None = None) -> None:
        modes = self.metadata["render_modes"]
        if render_mode is not None and render_mode not in modes:
            raise ValueError(f"render_mode {render_mode!r} is not supported; use one of {modes}")
        self.render_mode = render_mode
        self.possible_agents = list(agents)
        self.agents: list[str] = []
        self.observation_spaces: dict[str, Space[str]] = {
            a: UnicodeText(max_length=self.observation_length) for a in agents
        }
        self.action_spaces: dict[str, Space[str]] = {
            a: UnicodeText(max_length=self.action_length) for a in agents
        }

    def observation_space(self, agent: str) -> Space[str]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Space[str]:
        return self.action_spaces[agent]
