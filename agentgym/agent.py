"""The Agent protocol, the built-in agents, and agent specs (``expert``, ``random``, ``human``...).

An agent is anything with ``reset(info)`` and ``act(observation, info)``; ``act`` returns the action
text, or an :class:`Action` when it also reports tokens and cost. Agents are built per episode by a
factory that receives the env, so an oracle can consult it and chat agents keep one history each.
"""

from __future__ import annotations

import random as _random
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from agentgym.episode import Usage

ENTRY_POINT_GROUP = "agentgym.agents"


@dataclass
class Action:
    """An action plus what producing it cost."""

    text: str
    usage: Usage = field(default_factory=Usage)


@runtime_checkable
class Agent(Protocol):
    """What the runner needs from an agent."""

    def reset(self, info: dict[str, Any]) -> None:
        """Start a new episode; ``info`` is the env's reset info plus ``seed``."""

    def act(self, observation: str, info: dict[str, Any]) -> str | Action:
        """Choose the next action."""


AgentFactory = Callable[[Any], Agent]
"""Builds a fresh agent for one episode, given that episode's env."""


class RandomAgent:
    """Uniform over ``info["available_actions"]`` (else over the env's action space), seeded per episode."""

    name = "random"

    def __init__(self, env: Any = None, seed: int | None = None) -> None:
        self.env = env
        self.rng = _random.Random(seed)

    def reset(self, info: dict[str, Any]) -> None:
        if info.get("seed") is not None:
            self.rng.seed(info["seed"])

    def act(self, observation: str, info: dict[str, Any]) -> str:
        actions = info.get("available_actions")
        if actions:
            return str(self.rng.choice(actions))
        if self.env is not None:
            self.env.action_space.seed(self.rng.randrange(2**31))
            return str(self.env.action_space.sample())
        return ""


class ExpertAgent:
    """The env's oracle: plays ``env.expert_action()``."""

    name = "expert"

    def __init__(self, env: Any) -> None:
        self.env = env

    def reset(self, info: dict[str, Any]) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return str(self.env.unwrapped.expert_action())


class HumanAgent:
    """A person at the terminal: shows each observation and reads the action from stdin."""

    name = "human"

    def __init__(self, env: Any = None, prompt: str = "action> ") -> None:
        self.prompt = prompt

    def reset(self, info: dict[str, Any]) -> None:
        from rich.console import Console

        self.console = Console()
        self.console.rule(f"task {info.get('task_id', '')}")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        self.console.print(observation, markup=False, highlight=False)
        if info.get("available_actions"):
            self.console.print(
                f"[dim]{len(info['available_actions'])} available actions, e.g. "
                f"{', '.join(info['available_actions'][:5])}[/dim]"
            )
        try:
            return input(self.prompt)
        except EOFError:
            raise HumanQuit("the player closed the input") from None


class HumanQuit(KeyboardInterrupt):
    """The person at the terminal ended the game (Ctrl-D); like Ctrl-C, it stops the rollout."""


BUILTIN_AGENTS: dict[str, Callable[..., Agent]] = {
    "random": RandomAgent,
    "expert": ExpertAgent,
    "human": HumanAgent,
}


def agent_factory(spec: str) -> AgentFactory:
    """Turn an agent spec into a per-episode factory.

    ``expert``, ``random``, ``human`` are built in; ``PREFIX:ARG`` specs (``openai:gpt-4o``) are
    provided by entry points of the group ``agentgym.agents`` whose name is the prefix.
    """
    name, _, query = spec.partition("?")
    if name == "llm":  # the embedded default model, with the same ?options as any hf: spec
        from agentgym.llm.models import default_model_spec

        spec = default_model_spec("--agent llm") + (f"?{query}" if query else "")
    if spec in BUILTIN_AGENTS:
        cls = BUILTIN_AGENTS[spec]
        return lambda env: cls(env)
    prefix, sep, arg = spec.partition(":")
    plugins = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if sep and prefix in plugins:
        make = plugins[prefix].load()
        return lambda env: make(arg, env)  # type: ignore[no-any-return]
    allowed = sorted(BUILTIN_AGENTS) + ["llm"] + [f"{p}:..." for p in sorted(plugins)]
    raise ValueError(f"unknown agent {spec!r}; allowed: {', '.join(allowed)}")
