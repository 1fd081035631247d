"""agentgym envs as OpenEnv harness sessions: what TRL's asynchronous GRPO
(``trl.experimental.async_grpo.openenv_harness.HarnessRolloutWorker``) and any other OpenEnv
harness consumer rolls out.

OpenEnv's harness contract has two halves. A ``ResourceSessionFactory`` opens one session per
rollout (:class:`AgentgymSessionFactory`: any env id, ``openenv:URL`` of ``agentgym env serve``
included). A ``HarnessAdapter`` plays it, the trainer owning sampling (``run_white_box``):
:class:`ChatLoopAdapter` plays the session through agentgym's one chat loop (``ChatAgent`` with
``rollout``), each model call answered by the trainer's model step. So the system prompt, the
demonstration, the parsing, the format corrections and the step records are those of
``agentgym eval``, and the reward the trainer gets is the env's own record of the episode
(``verify``), never text from the model.

The env's stop (a newline for one-line actions) is applied to each reply as a client-side stop,
as OpenAI's ``stop`` is: TRL's model step samples without stops, so the tokens it trains on may
run past the action's end. Needs the ``openenv`` extra.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.mcp_types import Tool
from openenv.core.harness import (
    HarnessAdapter,
    HarnessRolloutResult,
    HarnessRunLimits,
    ModelStep,
    ResourceSession,
    ResourceSessionFactory,
    ToolResult,
    VerifyResult,
)

import agentgym
from agentgym.agent import ExpertAgent
from agentgym.chat_agent import ChatAgent
from agentgym.episode import Episode
from agentgym.llm.base import ChatRequest, ChatResponse, Choice, Message
from agentgym.rollout import rollout
from agentgym.task import Task

ACT = "act"
"""The session's one tool for adapters that speak tools: the action text, as the env takes it."""

ACT_TOOL = Tool(
    name=ACT,
    description="Take one action in the environment; returns the next observation.",
    input_schema={
        "type": "object",
        "properties": {"action": {"type": "string"}},
        "required": ["action"],
    },
)


class AgentgymSession(ResourceSession):
    """One episode of an agentgym env. :class:`ChatLoopAdapter` plays it with :meth:`play`;
    tool-speaking adapters use ``initial_messages`` and the ``act`` tool."""

    def __init__(self, env: Any, task: Task | str | None, seed: int | None) -> None:
        self.env, self.task, self.seed = env, task, seed
        self.episode: Episode | None = None
        self.rewards: list[float] = []
        self.done = False

    def play(self, agent: Any, max_steps: int | None) -> Episode:
        """The whole episode through :func:`agentgym.rollout.rollout`."""
        self.episode = rollout(self.env, agent, self.task, seed=self.seed, max_steps=max_steps)
        return self.episode

    def initial_messages(self) -> list[Message]:
        options = {"task": self.task} if self.task is not None else None
        observation, _ = self.env.reset(seed=self.seed, options=options)
        return ChatAgent(None, self.env).opening(observation)  # type: ignore[arg-type]

    def list_tools(self) -> list[Tool]:
        return [ACT_TOOL]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        action = arguments.get("action")
        if name != ACT or not isinstance(action, str):
            return ToolResult(
                error=f"an agentgym env takes one tool, {ACT!r}, with a text 'action'"
            )
        observation, reward, terminated, truncated, _ = self.env.step(action)
        self.rewards.append(reward)
        self.done = terminated or truncated
        return ToolResult(data=observation, done=self.done, metadata={"reward": reward})

    def verify(self, transcript: list[Message], final_state: Any | None = None) -> VerifyResult:
        """The env's own reward for the episode (its record when played with :meth:`play`)."""
        if self.episode is not None:
            ep = self.episode
            return VerifyResult(
                env_reward=ep.reward,
                done=ep.status == "completed",
                metrics={"success": ep.success, "score": ep.score, "steps": ep.n_steps},
            )
        return VerifyResult(env_reward=sum(self.rewards), done=self.done)

    def close(self) -> None:
        self.env.close()


class AgentgymSessionFactory(ResourceSessionFactory[AgentgymSession]):
    """Sessions of ``env_id`` (``env_options`` go to :func:`agentgym.make`). ``create``'s task
    is a task id of the env's suite, a :class:`~agentgym.task.Task` or its dict, or None (the
    env's own draw from ``seed``); a trainer's dataset rows carry task ids as their prompts."""

    def __init__(self, env_id: str, **env_options: Any) -> None:
        self.env_id, self.env_options = env_id, env_options

    def create(
        self, task: Any, seed: int | None = None, episode_id: str | None = None
    ) -> AgentgymSession:
        if isinstance(task, dict):
            task = Task.model_validate(task)
        elif task is not None and not isinstance(task, (str, Task)):
            raise TypeError(
                f"a session's task is a task id, a Task or its dict, got {type(task).__name__}"
            )
        return AgentgymSession(agentgym.make(self.env_id, **self.env_options), task, seed)


class ModelStepClient:
    """A chat client whose every request is one call of the trainer's model step; it keeps the
    sampled ids and logprobs of the whole episode for the rollout result."""

    def __init__(self, model_step: ModelStep, sampling: dict[str, Any], model: str = "") -> None:
        self.model_step, self.sampling, self.model = model_step, sampling, model
        self.prompt_ids: list[int] = []
        self.completion_ids: list[int] = []
        self.logprobs: list[float] = []
        self.messages: list[Message] = []

    def complete(self, request: ChatRequest) -> ChatResponse:
        sampled = self.model_step(list(request.messages), [], dict(self.sampling))
        self.prompt_ids.extend(sampled.prompt_ids)
        self.completion_ids.extend(sampled.completion_ids)
        self.logprobs.extend(sampled.logprobs)
        text = _until_stop(sampled.response.content or "", request.stop or [])
        reply = {"role": "assistant", "content": text}
        self.messages = [*request.messages, reply]
        return ChatResponse(
            choices=[
                Choice(message=reply, token_ids=sampled.completion_ids, logprobs=sampled.logprobs)
            ],
            model=self.model,
        )


def _until_stop(text: str, stops: list[str]) -> str:
    """``text`` up to the first of ``stops`` (the stop itself left out), as OpenAI's ``stop``."""
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=len(text))
    return text[:cut]


class ChatLoopAdapter(HarnessAdapter):
    """Plays an :class:`AgentgymSession` through agentgym's chat loop. ``run_white_box``: the
    trainer's model step samples every turn, at most ``limits.max_turns`` steps.
    ``run_black_box``: the env's expert plays (the evaluation path of an opaque policy)."""

    def run_white_box(
        self,
        model_step: ModelStep,
        session: ResourceSession,
        limits: HarnessRunLimits | None = None,
    ) -> HarnessRolloutResult:
        limits = limits or HarnessRunLimits()
        client = ModelStepClient(model_step, limits.sampling)
        episode = _session(session).play(ChatAgent(client, session.env), limits.max_turns)  # type: ignore[arg-type]
        return HarnessRolloutResult(
            messages=client.messages,
            done=episode.status == "completed",
            metrics={"steps": episode.n_steps, "success": episode.success},
            prompt_ids=client.prompt_ids,
            completion_ids=client.completion_ids,
            logprobs=client.logprobs,
        )

    def run_black_box(
        self, session: ResourceSession, limits: HarnessRunLimits | None = None
    ) -> HarnessRolloutResult:
        limits = limits or HarnessRunLimits()
        played = _session(session)
        episode = played.play(ExpertAgent(played.env), limits.max_turns)
        return HarnessRolloutResult(
            done=episode.status == "completed",
            metrics={"steps": episode.n_steps, "success": episode.success},
        )


def chatml_response_template() -> dict[str, Any]:
    """transformers' response template for a ChatML chat (SmolLM2's, Qwen's ``<|im_start|>``
    turns) whose replies are text: what TRL parses sampled turns with, for templates it does not
    know (set it as the tokenizer's ``response_template``)."""
    return {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {"content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"}},
    }


def _session(session: ResourceSession) -> AgentgymSession:
    if not isinstance(session, AgentgymSession):
        raise TypeError(
            f"ChatLoopAdapter plays sessions of AgentgymSessionFactory, got {type(session).__name__}"
        )
    return session


__all__ = [
    "ACT",
    "AgentgymSession",
    "AgentgymSessionFactory",
    "ChatLoopAdapter",
    "ModelStepClient",
    "chatml_response_template",
]
