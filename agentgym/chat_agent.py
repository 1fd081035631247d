"""ChatAgent: the generic model agent over any chat backend (``openai:``, ``litellm:``, ``hf:``
specs), in the core because ``agentgym eval`` and the trainer's rollouts parse actions alike.

A linear message history, one model call per action, small and obvious (mini-swe-agent's loop):
observations go in as user (or tool) messages, the reply is parsed into one action, and a reply
with no usable action gets a bounded number of corrections before the raw text is sent anyway
(the env then says what is wrong, as it does for any malformed action).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, model_validator

from agentgym.agent import Action, agent_factory
from agentgym.bounded_context import BoundedHistory, check_notes
from agentgym.episode import Usage
from agentgym.llm.base import ChatClient, ChatRequest, ChatResponse, Message
from agentgym.llm.factory import make_client, split_spec
from agentgym.llm.sampling import RENAMED, SamplingSpec, turn_seed
from agentgym.policies import POLICIES
from agentgym.textscan import fenced_blocks
from agentgym.traits import demonstration, traits


class ChatAgentConfig(SamplingSpec):
    """How the agent samples, prompts and parses
    (``--agent openai:gpt-4o?temperature=0.7&max_tokens=512``).

    A :class:`SamplingSpec` itself (``max_tokens``, ``stop``, ``temperature``, ``top_p``), so the
    sampling keys of an agent spec are the spec's own, flat beside the agent's other options.
    """

    model_config = ConfigDict(frozen=False)

    max_context_tokens: int | None = Field(default=None, ge=1)
    """Prompt + completion budget; None: the client's model context (8,192 for SmolLM2), or no
    limit where the client does not know it. Longer histories lose their oldest exchanges."""
    demonstration: bool = True
    """Start the chat with the env's expert playing two turns of a training task (where the env
    has a ``demo_suite``): small models follow the action format from an example, not a rule."""
    max_format_errors: int = 2
    """Corrections per turn before the raw reply goes to the env."""
    history_turns: int | None = None
    """Keep only the last N exchanges (plus system prompt and first observation); None keeps all."""
    native_tools: bool = True
    """Pass ``info["tools"]`` as OpenAI tools and turn tool calls into JSON actions."""
    history: int | None = Field(default=None, ge=0)
    """Bounded context (``?history=K``): each turn one user message, rebuilt from the task, the
    last K steps, the observation and the admissible actions (:mod:`agentgym.bounded_context`;
    no system prompt, no demonstration); None: the linear chat."""
    notes: str | None = None
    """Notes in the bounded context (``?notes=household``): one line rebuilt every turn from the
    episode's own text (:data:`agentgym.bounded_context.NOTES`); needs ``history``."""
    unstick: float | None = Field(default=None, gt=0)
    """Temperature of a turn after two identical steps, the same command answered with the same
    text twice running (``?unstick=1``; :meth:`BoundedHistory.stalled`). A greedy policy whose
    prompt then changes only in its step numbers answers the same again, so a command that
    changes nothing (``Nothing happens.``) repeats until the turn limit; such a turn samples
    instead, seeded like every turn. None: every turn at ``temperature``; needs ``history``."""

    @model_validator(mode="after")
    def _bounded_options_need_history(self) -> ChatAgentConfig:
        for option in ("notes", "unstick"):
            if getattr(self, option) is not None and self.history is None:
                raise ValueError(
                    f"{option} needs a bounded context: set history=K too (e.g. history=2)"
                )
        check_notes(self.notes)
        return self


class FormatError(ValueError):
    """The reply holds no usable action; the message tells the model what to fix."""


# Indentation before "Action:" stays on its line: a leading \s* would rescan every run of blank
# lines from each line start (quadratic in the run).
_ACTION_LINE = re.compile(r"^[^\S\n]*action\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_THOUGHT_LINE = re.compile(r"^\s*(think|thought|reasoning)\s*:", re.IGNORECASE)
_TAGGED = re.compile(r"<(action|answer)>", re.IGNORECASE)


def parse_action(message: Message, free_text: bool = False) -> str:
    """One action from an assistant message.

    Tool calls become ``{"name", "arguments"}`` JSON (a list for parallel calls). Text: tagged
    replies (``<action>``, ``<answer>``) pass through whole for envs that parse them; otherwise the
    last code fence, else the last ``Action:`` line, else the one line that is not a ``think:``
    line. ``free_text`` (tool-use envs, where text is a message to the user) keeps the whole text.
    """
    if message.get("tool_calls"):
        calls = [_tool_call_action(c) for c in message["tool_calls"]]
        return json.dumps(calls[0] if len(calls) == 1 else calls)
    text = str(message.get("content") or "").strip()
    if not text:
        raise FormatError("the reply was empty")
    if free_text or _TAGGED.search(text):
        return text
    if fences := [f for f in fenced_blocks(text) if f.strip()]:  # an empty fence holds no action
        text = fences[-1].strip()
    if actions := [a.strip() for a in _ACTION_LINE.findall(text) if a.strip()]:
        return actions[-1]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    kept = [ln for ln in lines if not _THOUGHT_LINE.match(ln)]
    if len(kept) == 1:
        return kept[0]
    if not kept:  # only thoughts: ReAct envs accept "think: ..." as an action
        return lines[-1]
    raise FormatError(
        f"the reply has {len(kept)} lines that could each be the action; "
        "reply with one action, or put it on a line starting with 'Action:'"
    )


def _tool_call_action(call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function") or {}
    try:
        arguments = json.loads(fn.get("arguments") or "{}")
    except json.JSONDecodeError as e:
        raise FormatError(
            f"the arguments of tool call {fn.get('name')!r} are not valid JSON: {e.msg}"
        ) from None
    return {"name": fn.get("name"), "arguments": arguments}


class ChatAgent:
    """Keeps the conversation, renders observations, parses actions, records usage."""

    def __init__(
        self,
        client: ChatClient,
        env: Any = None,
        config: ChatAgentConfig | None = None,
        hint: str = "",
    ) -> None:
        self.client = client
        self.config = config or ChatAgentConfig()
        env_traits = traits(env)
        self.system_prompt = "\n\n".join(p for p in (env_traits.system_prompt, hint) if p)
        self.sampling = self.config.for_env(env)
        """The resolved spec, as the trainer's rollouts resolve theirs (``agentgym.llm.sampling``)."""
        self.max_tokens: int = self.sampling.max_tokens or 0  # resolved: never None
        self.max_context_tokens = self.config.max_context_tokens or getattr(
            client, "max_context_tokens", None
        )
        self.free_text_actions = env_traits.free_text_actions
        """The env parses the whole reply itself (Social-v0's ``action: offer $5``): an
        ``Action:`` line or a code fence is not cut out of it, as the trainer's rollouts do."""
        self.few_shot: list[Message] = demonstration(env) if self.config.demonstration else []
        self.name = f"chat:{getattr(client, 'model', '')}"
        self.format_errors = 0

    def opening(self, observation: str) -> list[Message]:
        """The messages of an episode's first request (linear chat, no tools): the system
        prompt, the demonstration and the first observation. A harness that holds the chat
        itself (verifiers) is handed these as its task's prompt."""
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return system + self.few_shot + [{"role": "user", "content": observation}]

    def reset(self, info: dict[str, Any]) -> None:
        self.seed: int | None = info.get("seed")
        self.turn = 0
        self.tools = info.get("tools") if self.config.native_tools else None
        self.free_text = self.free_text_actions or bool(info.get("tools"))
        system: list[Message] = [{"role": "system", "content": self.system_prompt}]
        self.messages: list[Message] = (system if self.system_prompt else []) + self.few_shot
        self._tool_call_ids: list[str] = []
        self.bounded = BoundedHistory.maybe(self.config.history, self.config.notes)
        if self.bounded is not None:
            self.bounded.start(str(info.get("instruction", "")))

    def act(self, observation: str, info: dict[str, Any]) -> Action:
        if self.bounded is not None:  # one user message per turn: the bounded context
            self.messages = [{"role": "user", "content": self.bounded.prompt(observation, info)}]
        else:
            self.messages += self._observation_messages(observation)
        usage = Usage()
        for attempt in range(self.config.max_format_errors + 1):
            request, history = self._request(attempt)
            response = self.client.complete(request)
            usage = _add_usage(usage, response).model_copy(update={"history": history})
            message = response.choices[0].message
            try:
                action = parse_action(message, self.free_text)
            except FormatError as e:
                self.format_errors += 1
                if attempt == self.config.max_format_errors:
                    action = str(message.get("content") or "")
                    break
                self.messages += [
                    _assistant(message),
                    {"role": "user", "content": f"Format error: {e}."},
                ]
                continue
            break
        self.messages.append(_assistant(message))
        self._tool_call_ids = [c["id"] for c in message.get("tool_calls") or [] if c.get("id")]
        if self.bounded is not None:
            self.bounded.acted(action)
        self.turn += 1
        return Action(action, usage)

    def _observation_messages(self, observation: str) -> list[Message]:
        """A tool result answers every pending tool call; anything else is the user speaking."""
        if self._tool_call_ids:
            return [
                {"role": "tool", "tool_call_id": i, "content": observation}
                for i in self._tool_call_ids
            ]
        return [{"role": "user", "content": observation}]

    def _request(self, attempt: int = 0) -> tuple[ChatRequest, str | None]:
        """The next request, and how its history was cut (None: not cut); seeded by the episode's
        seed, the turn and the retry, never by what else runs alongside."""
        messages, history = self._window()
        request = ChatRequest(
            messages=messages,
            temperature=self.temperature(),
            top_p=self.sampling.top_p if self.sampling.top_p < 1.0 else None,
            max_tokens=self.max_tokens,
            stop=list(self.sampling.stop or ()) or None,
            tools=self.tools,
            seed=turn_seed(self.seed, self.turn, attempt),
        )
        return request, history

    def temperature(self) -> float:
        """This turn's: ``unstick``'s after two identical steps, else ``temperature``."""
        if self.config.unstick is not None and self.bounded is not None and self.bounded.stalled():
            return self.config.unstick
        return self.config.temperature

    def _window(self) -> tuple[list[Message], str | None]:
        """System prompt, few-shot and first observation always; then the newest exchanges: the
        last ``history_turns`` of them, and only as many as fit ``max_context_tokens`` with room for
        the reply. Returns the messages and the rule applied when it dropped any."""
        head_n = len(self.few_shot) + bool(self.system_prompt) + 1
        head, tail = self.messages[:head_n], self.messages[head_n:]
        keep = self.config.history_turns
        if keep is not None and len(tail) > 2 * keep:
            tail = _from_exchange_start(tail[-2 * keep - 1 :])
        newest = next((i for i in range(len(tail), 0, -1) if tail[i - 1]["role"] == "assistant"), 0)
        current = len(tail) - newest  # this turn's observation: never dropped
        while len(tail) > current and self._too_long(head + tail):
            tail = _from_exchange_start(tail[1:]) or tail[len(tail) - current :]
        dropped = len(self.messages) - len(head) - len(tail)
        if not dropped:
            return self.messages, None
        rule = (
            f"kept system prompt, few-shot and first observation, then the newest exchanges"
            f" (history_turns={keep}, max_context_tokens={self.max_context_tokens},"
            f" reply max_tokens={self.max_tokens}); dropped the {dropped} oldest messages"
        )
        return head + tail, rule

    def _too_long(self, messages: list[Message]) -> bool:
        budget = (self.max_context_tokens or 0) - self.max_tokens
        if (
            not self.max_context_tokens
            or sum(len(str(m.get("content") or "")) for m in messages) < budget
        ):
            return False  # never more tokens than characters: no need to count
        count = getattr(self.client, "count_tokens", None)
        tokens = (
            count(messages, self.tools)
            if count
            else sum(len(str(m.get("content") or "")) // 4 for m in messages)
        )
        return bool(tokens > budget)


def _from_exchange_start(tail: list[Message]) -> list[Message]:
    """Never start a history mid-exchange (on a reply or a tool result)."""
    while tail and tail[0]["role"] in ("assistant", "tool"):
        tail = tail[1:]
    return tail


def _assistant(message: Message) -> Message:
    return {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")} | {
        "role": "assistant"
    }


def _add_usage(total: Usage, response: ChatResponse) -> Usage:
    choice = response.choices[0]
    return Usage(
        prompt_tokens=total.prompt_tokens + response.usage.prompt_tokens,
        completion_tokens=total.completion_tokens + response.usage.completion_tokens,
        cost=total.cost + response.usage.cost,
        token_ids=choice.token_ids,
        logprobs=choice.logprobs,
    )


def chat_agent(spec: str, env: Any, hint: str = "") -> ChatAgent:
    """A ChatAgent for ``backend:model?options``; agent options and client options share the query."""
    backend, model, query = split_spec(spec)
    agent_keys = set(ChatAgentConfig.model_fields)
    for key in query:
        if key in RENAMED:
            raise ValueError(f"agent option {key!r} was renamed to {RENAMED[key]!r}")
    config = ChatAgentConfig.model_validate({k: v for k, v in query.items() if k in agent_keys})
    client_options = {k: v for k, v in query.items() if k not in agent_keys}
    client = make_client(f"{backend}:{model}", **client_options)  # no re-encoding of values
    return ChatAgent(client, env, config, hint)


def openai_agent(arg: str, env: Any) -> ChatAgent:
    """Entry point of ``--agent openai:MODEL[?options]``."""
    return chat_agent(f"openai:{arg}", env)


def litellm_agent(arg: str, env: Any) -> ChatAgent:
    """Entry point of ``--agent litellm:PROVIDER/MODEL[?options]``."""
    return chat_agent(f"litellm:{arg}", env)


def hf_agent(arg: str, env: Any) -> Any:
    """Entry point of ``--agent hf:PATH[?options]``. A ``model.policy`` checkpoint (one holding
    ``NAME.json`` for a policy registered as ``NAME`` in :data:`agentgym.policies.POLICIES`, e.g.
    PA-MoE's ``pa_moe.json``) loads with the agent registered as ``NAME``, so every trained
    checkpoint evaluates as ``hf:PATH``."""
    path = arg.split("?", 1)[0]
    for name in POLICIES.names():  # the registry reads its entry points once per process
        if (Path(path) / f"{name}.json").is_file():
            return agent_factory(f"{name}:{path}")(env)
    return chat_agent(f"hf:{arg}", env)


__all__ = ["ChatAgent", "ChatAgentConfig", "FormatError", "chat_agent", "parse_action"]
