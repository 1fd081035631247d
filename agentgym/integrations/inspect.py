"""An agentgym suite as an Inspect AI ``Task``: ``inspect eval agentgym/agentgym_suite -T
suite=textarena/GuessTheNumber-v0 --model mockllm/model``.

The dataset is the suite (one ``Sample`` per task), the solver plays the task's env with the
model Inspect evaluates, and the scorer reads the episode's outcome (``success`` is the value,
``score`` and the return ride along). The solver plays through ``agentgym eval``'s own loop, a
:class:`~agentgym.chat_agent.ChatAgent` (the env's system prompt and demonstration, each
observation a user message, one action per reply, format errors corrected twice, the env's
sampling spec: temperature 0, its ``action_max_tokens``, its stop), with Inspect's model
answering its requests; so the same greedy model gives the same episodes in both. Actions are
text: the env's tools are not passed as Inspect tools.
Importing this module needs Inspect AI (the ``inspect`` extra); the ``inspect_ai`` entry point
registers the task with Inspect.
"""

from __future__ import annotations

from typing import Any

from agentgym.extras import require

require("the Inspect AI adapter", "inspect_ai")

from inspect_ai import Task, task  # noqa: E402
from inspect_ai.dataset import MemoryDataset, Sample  # noqa: E402
from inspect_ai.model import (  # noqa: E402
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import Score, Target, accuracy, mean, scorer, stderr  # noqa: E402
from inspect_ai.solver import Generate, Solver, TaskState, solver  # noqa: E402

from agentgym.async_play import LoopClient, play  # noqa: E402
from agentgym.chat_agent import ChatAgent, ChatAgentConfig  # noqa: E402
from agentgym.episode import Usage  # noqa: E402
from agentgym.llm.base import ChatRequest, ChatResponse, Choice, Message  # noqa: E402
from agentgym.registry import make  # noqa: E402
from agentgym.runner import episode_seed  # noqa: E402
from agentgym.safetext import clean  # noqa: E402
from agentgym.task import Task as AgentgymTask  # noqa: E402
from agentgym.task import TaskSuite  # noqa: E402

DEFAULT_MAX_STEPS = 100
"""Turns per episode at most (``agentgym eval`` has none: its envs end their own episodes)."""


def suite_dataset(suite: str | TaskSuite, limit: int | None = None) -> MemoryDataset:
    """One Inspect ``Sample`` per task: its id, its instruction as input, the task as metadata."""
    loaded = TaskSuite.load(suite) if isinstance(suite, str) else suite
    tasks = loaded.filter(limit=limit).tasks
    if not tasks:
        raise ValueError(f"suite {loaded.name!r} has no task to evaluate (limit={limit})")
    samples = [
        Sample(
            id=t.id,
            input=t.instruction or t.id,
            target="success",
            metadata={"agentgym_task": t.model_dump(mode="json")},
        )
        for t in tasks
    ]
    return MemoryDataset(samples, name=loaded.name)


def sampling_config(env_id: str) -> GenerateConfig:
    """Inspect's generation settings from the env's sampling spec (as ``agentgym eval`` uses)."""
    spec = ChatAgentConfig().for_env(make(env_id))
    return GenerateConfig(
        temperature=spec.temperature,
        max_tokens=spec.max_tokens,
        stop_seqs=list(spec.stop or ()) or None,
        seed=0,
    )


@solver
def play_env(max_steps: int = DEFAULT_MAX_STEPS, seed: int = 0) -> Solver:
    """Play the sample's agentgym task with the model under evaluation, through agentgym's one
    episode loop (a :class:`~agentgym.chat_agent.ChatAgent` in :func:`agentgym.rollout.rollout`)
    whose every request Inspect's model answers; the episode's record lands in
    ``state.metadata["agentgym"]`` and its chat in ``state.messages``. The env is reset with the
    seed ``agentgym eval --seed SEED`` gives the task's first sample."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        task = AgentgymTask.model_validate(state.metadata["agentgym_task"])
        model = get_model()
        outputs: list[ModelOutput] = []

        escaped: list[str] = []  # Inspect logs every text as UTF-8: escape what is not, say where

        async def acomplete(request: ChatRequest) -> ChatResponse:
            messages = clean(request.messages, f"request{len(outputs)}", escaped)
            outputs.append(
                await model.generate(_inspect_messages(messages), config=_config(request))
            )
            return _response(outputs[-1])

        env = make(task.env)
        agent = ChatAgent(
            LoopClient(acomplete, str(model)), env, ChatAgentConfig(native_tools=False)
        )
        try:
            episode = await play(
                env, agent, task, seed=episode_seed(seed, task.id, 0), max_steps=max_steps
            )
        finally:
            env.close()
        state.messages = _inspect_messages(
            clean(getattr(agent, "messages", []), "messages", escaped)
        )
        if outputs:
            state.output = outputs[-1]
        played = {
            "success": episode.success,
            "score": episode.score,
            "return": episode.reward,
            "steps": episode.n_steps,
            "actions": [s.action for s in episode.steps],
            "status": episode.status,
            "error": episode.error,
            "finished": episode.status == "completed",
        }
        played = clean(played, "", escaped)
        state.metadata["agentgym"] = played | {"escaped": [e.lstrip(".") for e in escaped]}
        return state

    return solve


def _config(request: ChatRequest) -> GenerateConfig:
    """Inspect's settings of one request, as the chat agent resolved them from the env."""
    return GenerateConfig(
        temperature=request.temperature,
        top_p=request.top_p,
        max_tokens=request.max_tokens,
        stop_seqs=request.stop,
        seed=request.seed,
    )


def _inspect_messages(messages: list[Message]) -> list[ChatMessage]:
    roles = {
        "system": ChatMessageSystem,
        "user": ChatMessageUser,
        "assistant": ChatMessageAssistant,
    }
    return [roles[m["role"]](content=str(m.get("content") or "")) for m in messages]


def _response(output: ModelOutput) -> ChatResponse:
    usage = output.usage
    return ChatResponse(
        choices=[Choice(message={"role": "assistant", "content": output.completion})],
        usage=Usage(
            prompt_tokens=usage.input_tokens if usage else 0,
            completion_tokens=usage.output_tokens if usage else 0,
        ),
        model=output.model,
    )


@scorer(metrics={"success": [accuracy(), stderr()], "score": [mean()]})
def env_reward() -> Any:
    """The env's verdict: ``success`` (1 or 0) and its ``score`` in [0, 1]."""

    async def score(state: TaskState, target: Target) -> Score:
        result = state.metadata.get("agentgym") or {}
        actions = result.get("actions") or []
        return Score(
            value={
                "success": 1.0 if result.get("success") else 0.0,
                "score": float(result.get("score", 0.0)),
            },
            answer=actions[-1] if actions else None,
            metadata=result,
        )

    return score


@task
def agentgym_suite(
    suite: str, limit: int | None = None, max_steps: int = DEFAULT_MAX_STEPS, seed: int = 0
) -> Task:
    """An agentgym suite as an Inspect task (``-T suite=NAME -T limit=N``)."""
    dataset = suite_dataset(suite, limit)
    env_ids = sorted({s.metadata["agentgym_task"]["env"] for s in dataset if s.metadata})
    return Task(
        dataset=dataset,
        solver=play_env(max_steps=max_steps, seed=seed),
        scorer=env_reward(),
        config=sampling_config(env_ids[0]),
        name=f"agentgym/{dataset.name}",
    )


__all__ = ["agentgym_suite", "env_reward", "play_env", "suite_dataset"]
