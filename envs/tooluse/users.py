"""Simulated users: an LLM user (tau2-bench's prompt), and two offline users for tests and baselines.

A user is a stateless policy over the conversation it has seen (kept in the env's state, so
``snapshot``/``restore`` and replays are exact). Stop tokens end the episode as in tau-bench and
tau2-bench: ``###STOP###`` (goal reached), ``###TRANSFER###``, ``###OUT-OF-SCOPE###``.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentgym.envs.tooluse.data import read_text
from agentgym.envs.tooluse.plan import asked_for, due_user_actions
from agentgym.envs.tooluse.tasks import GoldAction, TauConfig

if TYPE_CHECKING:
    from agentgym.envs.tooluse.world import Requestor, World
    from agentgym.llm.base import ChatClient

STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"
STOP_TOKENS = (STOP, TRANSFER, OUT_OF_SCOPE)
AGENT_GREETING = "Hi! How can I help you today?"
"""What the agent says first in tau-bench and tau2-bench (the user answers it)."""
_CONFIRM = re.compile(
    r"\b(confirm|proceed|yes/no|shall i|should i|would you like|do you want|go ahead)\b", re.I
)
_IDENTITY = re.compile(
    r"\b(name|zip|postal|e-?mail|user ?id|user_id|account|identify|identity|verify|"
    r"authenticat\w*|who you are|phone number|customer id|membership)\b",
    re.I,
)


@dataclass
class UserContext:
    """What a user may consult when replying."""

    config: TauConfig
    seed: int | None
    world: World
    goal_met: Callable[[], bool]
    """Whether the gold outcome is reached (only the gold-path user looks at it)."""
    call_tool: Callable[[str, dict[str, Any]], str]
    """Run one of the user's own tools (recorded in the episode as a user tool call)."""
    path: list[GoldAction]
    """Both sides' gold path (only the gold-path user follows it)."""
    calls: list[tuple[str, dict[str, Any], Requestor]]
    """The episode's tool calls so far, the agent's and the user's."""


class UserSimulator(Protocol):
    """A simulated user. ``history`` is its view of the conversation, updated in place."""

    name: str

    def reply(self, ctx: UserContext, history: list[dict[str, Any]], agent_message: str) -> str:
        """The user's answer to ``agent_message`` (the first call gets the agent's greeting)."""
        ...


def is_stop(reply: str) -> bool:
    """Whether the user ended the conversation."""
    return any(token in reply for token in STOP_TOKENS)


class GoldUser:
    """Cooperative offline user: states its request, acts on its side, confirms, stops at the goal.

    It follows tau2's protocol for users: it opens with its request only (``config.opening``),
    gives its identity (``config.known_info``) when asked, and never reveals the rest of its
    scenario. It plays its part of the gold path: each of its own gold tool calls (dual control)
    once every agent action before it has been done and the agent asks for it (names the tool
    or what it acts on), then reports what it saw. It agrees to
    every confirmation and says ``###STOP###`` as soon as the episode reaches the gold outcome
    and every required output has been told (so an expert replaying the gold actions ends the
    episode exactly as a satisfied tau-bench user would).
    """

    name = "gold"

    def reply(self, ctx: UserContext, history: list[dict[str, Any]], agent_message: str) -> str:
        first = not history
        history.append({"role": "user", "content": agent_message})
        performed = sum(len(m.get("tool_calls") or []) for m in history)
        seen = []
        for action in due_user_actions(ctx.path, ctx.calls, performed):
            if first or not asked_for(action, agent_message):
                break
            output = ctx.call_tool(action.name, action.arguments)
            history.append({"role": "assistant", "content": None, "tool_calls": [action.name]})
            seen.append(f"{action.name} gave: {output}")
        if first:
            text = ctx.config.opening
        elif ctx.goal_met():
            text = STOP
        elif seen:
            text = "Done. " + " ".join(seen)
        elif _CONFIRM.search(agent_message):
            text = "Yes, please go ahead."
        elif _IDENTITY.search(agent_message):
            text = ctx.config.known_info or "I'm sorry, I don't have that information."
        elif "?" in agent_message:
            text = f"I'm not sure. What I need is this: {ctx.config.opening}"
        else:
            text = "Okay. Is there anything else you need from me?"
        history.append({"role": "assistant", "content": text})
        return text


class UncooperativeUser:
    """Scripted difficult user: vague, withholds details, refuses confirmations, then gives up.

    It never states its identity or order details and answers every confirmation with a refusal,
    so no write action is ever authorised; after ``patience`` replies it ends the conversation.
    """

    name = "uncooperative"
    OPENINGS = (
        "Something is wrong with my stuff and I want it fixed.",
        "I need help, and I don't have time for questions.",
        "Your service messed up. Fix it.",
    )
    REFUSALS = (
        "I'd rather not share that.",
        "No, don't do anything yet.",
        "Why do you need that? I'm not telling you.",
        "I don't remember, and I don't want to look it up.",
    )

    def __init__(self, patience: int = 4) -> None:
        if patience < 1:
            raise ValueError(f"patience must be at least 1, got {patience}")
        self.patience = patience

    def reply(self, ctx: UserContext, history: list[dict[str, Any]], agent_message: str) -> str:
        rng = random.Random(f"{ctx.seed}:{len(history)}")
        turns = len(history) // 2
        history.append({"role": "user", "content": agent_message})
        if turns == 0:
            text = rng.choice(self.OPENINGS)
        elif turns > self.patience:
            text = f"Forget it. {STOP}"
        else:
            text = rng.choice(self.REFUSALS)
        history.append({"role": "assistant", "content": text})
        return text


def system_prompt(config: TauConfig, with_tools: bool = False) -> str:
    """tau2-bench's user-simulator system prompt: the guidelines (their tool-using version when
    the user has tools of its own), then the scenario."""
    name = "user_simulator_guidelines_tools.md" if with_tools else "user_simulator_guidelines.md"
    guidelines = read_text(f"tau2/{name}")
    return f"{guidelines}\n\n<scenario>\n{config.user_scenario}\n</scenario>"


class LLMUser:
    """tau2-bench's LLM user simulator, through the agentgym LLM layer.

    Roles are flipped as in tau2 (the agent speaks as ``user``, the simulated user as
    ``assistant``). Every request carries the episode seed, so the LLM layer's cache replays an
    episode exactly. In domains with user tools (mock), the user may call them; the calls run on
    the episode's user database.
    """

    name = "llm"
    MAX_TOOL_ROUNDS = 5

    def __init__(
        self, client: ChatClient | str, temperature: float = 0.0, max_tokens: int = 512
    ) -> None:
        self._client = client
        self.temperature = temperature
        self.max_tokens = max_tokens

    @property
    def client(self) -> ChatClient:
        """The chat client (a spec string is resolved on first use)."""
        if isinstance(self._client, str):
            from agentgym.llm import make_client

            self._client = make_client(self._client)
        return self._client

    def reply(self, ctx: UserContext, history: list[dict[str, Any]], agent_message: str) -> str:
        from agentgym.llm.base import ChatRequest

        history.append({"role": "user", "content": agent_message})
        tools = ctx.world.user_tools.schemas() if ctx.world.user_tools else None
        for _ in range(self.MAX_TOOL_ROUNDS):
            request = ChatRequest(
                messages=[
                    {"role": "system", "content": system_prompt(ctx.config, bool(tools))},
                    *history,
                ],
                model=self.client.model,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                tools=tools,
                seed=ctx.seed,
            )
            message = dict(self.client.complete(request).choices[0].message)
            history.append(
                {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
            )
            calls = message.get("tool_calls") or []
            if not calls:
                return str(message.get("content") or "")
            for call in calls:
                history.append(self._run_user_tool(ctx, call))
        return str(history[-1].get("content") or "")

    @staticmethod
    def _run_user_tool(ctx: UserContext, call: dict[str, Any]) -> dict[str, Any]:
        """One tool call of the LLM user, run on its side through the episode (so it is graded)."""
        function = call.get("function", call)
        arguments = function.get("arguments") or {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as e:
                return {
                    "role": "tool",
                    "tool_call_id": call.get("id", ""),
                    "content": f"Error: the arguments are not valid JSON ({e.msg})",
                }
        if not isinstance(arguments, dict):
            arguments = {"__invalid__": arguments}
        output = ctx.call_tool(str(function.get("name")), arguments)
        return {"role": "tool", "tool_call_id": call.get("id", ""), "content": output}


def make_user(spec: str | UserSimulator) -> UserSimulator:
    """``gold``, ``uncooperative``, ``llm:<client spec>`` (``llm:openai:gpt-4o``), plain ``llm``
    (the embedded default model), or an instance."""
    if not isinstance(spec, str):
        return spec
    if spec == "gold":
        return GoldUser()
    if spec == "uncooperative":
        return UncooperativeUser()
    if spec == "llm":
        from agentgym.llm.models import default_model_spec

        return LLMUser(default_model_spec("the tau LLM user"))
    if spec.startswith("llm:") and len(spec) > 4:
        return LLMUser(spec[4:])
    raise ValueError(
        f"unknown user {spec!r}; use 'gold', 'uncooperative', 'llm' or 'llm:<model spec>'"
    )
