"""The Agent protocol, the built-in agents, and agent specs (``expert``, ``random``, ``human``...).

An agent is anything with ``reset(info)`` and ``act(observation, info)``; ``act`` returns the action
text, or an :class:`Action` when it also reports tokens and cost. Agents are built per episode by a
factory that receives the env, so an oracle can consult it and chat agents keep one history each.
"""

from __future__ import annotations

import random as _random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentgym.episode import Usage
from agentgym.plugins import Registry

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


# An agent that plays only some tasks of an env (a scripted policy for some task types) may also
# define ``check_task(task) -> None``, raising ValueError for a task it cannot play: `agentgym
# eval` calls it on every task before the first episode and refuses the run with the reasons.

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
    """A person at the terminal: shows each observation and reads the action from stdin.

    Lines starting with ``:`` are commands, not actions: ``:actions`` lists every available
    action, ``:quit`` ends the game, ``:help`` says so.
    """

    name = "human"
    COMMANDS = {
        ":actions": "list every available action",
        ":quit": "end the game",
        ":help": "show these commands",
    }

    def __init__(self, env: Any = None, prompt: str = "action> ") -> None:
        self.prompt = prompt

    def reset(self, info: dict[str, Any]) -> None:
        from rich.console import Console

        self.console = Console()
        self.console.rule(f"task {info.get('task_id', '')}")
        self.console.print("[dim]commands: :actions, :quit, :help[/dim]")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        self.console.print(observation, markup=False, highlight=False)
        actions = list(info.get("available_actions") or [])
        if actions:
            shown = ", ".join(actions[:5]) + (", ..." if len(actions) > 5 else "")
            self.console.print(
                f"{len(actions)} available actions, e.g. {shown} (:actions lists all)",
                style="dim", markup=False, highlight=False,
            )  # fmt: skip
        while True:
            try:
                line = input(self.prompt)
            except EOFError:
                raise HumanQuit("the player closed the input") from None
            command = line.strip().lower()
            if command == ":quit":
                raise HumanQuit("the player quit")
            if command == ":actions":
                for action in actions or ["(this env lists no actions: type any text)"]:
                    self.console.print(f"  {action}", markup=False, highlight=False)
            elif command in (":help", ":"):
                for name, what in self.COMMANDS.items():
                    self.console.print(f"  {name}: {what}", markup=False)
            else:
                return line


class HumanQuit(KeyboardInterrupt):
    """The person at the terminal ended the game (``:quit`` or Ctrl-D); like Ctrl-C, it stops
    the rollout."""


BUILTIN_AGENTS: dict[str, Callable[..., Agent]] = {
    "random": RandomAgent,
    "expert": ExpertAgent,
    "human": HumanAgent,
}


CHAT_PREFIXES: dict[str, str] = {
    # PREFIX: the core's model agent (agentgym/chat_agent.py), called as function(ARG, env)
    "openai": "agentgym.chat_agent:openai_agent",
    "litellm": "agentgym.chat_agent:litellm_agent",
    "hf": "agentgym.chat_agent:hf_agent",
}


def _chat_agents() -> None:
    # The core's model agent, named as references: nothing is imported before a spec needs it.
    # Every other agent (this distribution's agents/ too) arrives through the entry-point group.
    for prefix, ref in CHAT_PREFIXES.items():
        AGENTS.register(prefix, ref)


AGENTS: Registry[Callable[[str, Any], Agent]] = Registry("agent", ENTRY_POINT_GROUP, _chat_agents)
"""``PREFIX:ARG`` specs: ``PREFIX`` names a function ``(ARG, env) -> Agent``."""


def register_agent(prefix: str, make: Callable[[str, Any], Agent] | str) -> None:
    """Make ``-a PREFIX:ARG`` build ``make(ARG, env)`` (or the ``"module:function"`` it names),
    in-process, with no entry point and no reinstall; an installed distribution (this one's
    ``agents/`` too) names its agents in the entry-point group ``agentgym.agents``."""
    AGENTS.register(prefix, make)


def agent_factory(spec: str) -> AgentFactory:
    """Turn an agent spec into a per-episode factory.

    ``expert``, ``random``, ``human`` are built in; ``PREFIX:ARG`` specs (``openai:gpt-4o``) are
    the functions registered as ``PREFIX`` (:func:`register_agent`, and the entry points of the
    group ``agentgym.agents``, among them this distribution's ``agents/``).
    """
    name, _, query = spec.partition("?")
    if name == "llm":  # the embedded default model, with the same ?options as any hf: spec
        from agentgym.llm.models import default_model_spec

        spec = default_model_spec("--agent llm") + (f"?{query}" if query else "")
    if spec in BUILTIN_AGENTS:
        cls = BUILTIN_AGENTS[spec]
        return lambda env: cls(env)
    prefix, sep, arg = spec.partition(":")
    make = AGENTS.find(prefix) if sep else None
    if make is not None:
        return lambda env: make(arg, env)
    allowed = sorted(BUILTIN_AGENTS) + ["llm"] + [f"{p}:..." for p in AGENTS.names()]
    from agentgym.redact import redact_text

    raise ValueError(f"unknown agent {redact_text(spec)!r}; allowed: {', '.join(allowed)}")
