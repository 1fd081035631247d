"""An agentgym suite as an Inspect AI ``Task``: ``inspect eval agentgym/agentgym_suite -T
suite=textarena/GuessTheNumber-v0 --model mockllm/model``.

The dataset is the suite (one ``Sample`` per task), the solver plays the task's env turn by turn
with the model Inspect evaluates, and the scorer reads the env's final info (``success`` is the
value, ``score`` and the return ride along). The solver prompts and parses as ``agentgym eval``'s
chat agent does (the env's system prompt, each observation a user message, one action per reply,
format errors corrected twice, the env's sampling: temperature 0, its ``action_max_tokens``, a
newline stop for one-line actions), so the same greedy model gives the same episodes in both.
Importing this module needs Inspect AI (the ``inspect`` extra); the ``inspect_ai`` entry point
registers the task with Inspect.
"""

from __future__ import annotations

from typing import Any

from agentgym.extras import require

require("the Inspect AI adapter", "inspect_ai")

from inspect_ai import Task, task  # noqa: E402
from inspect_ai.dataset import MemoryDataset, Sample  # noqa: E402
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig  # noqa: E402
from inspect_ai.scorer import Score, Target, accuracy, mean, scorer, stderr  # noqa: E402
from inspect_ai.solver import Generate, Solver, TaskState, solver  # noqa: E402

from agentgym.chat_agent import ChatAgentConfig, FormatError, parse_action  # noqa: E402
from agentgym.registry import make  # noqa: E402
from agentgym.runner import episode_seed  # noqa: E402
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
    """Play the sample's agentgym task with the model under evaluation; the episode's final info
    lands in ``state.metadata["agentgym"]``. The env is reset with the seed ``agentgym eval
    --seed SEED`` gives the task's first sample."""
    max_format_errors = ChatAgentConfig().max_format_errors

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        task = AgentgymTask.model_validate(state.metadata["agentgym_task"])
        env = make(task.env)
        base = env.unwrapped
        free_text = bool(getattr(base, "free_text_actions", False))
        obs, info = env.reset(seed=episode_seed(seed, task.id, 0), options={"task": task})
        system = getattr(base, "system_prompt", "")
        state.messages = [ChatMessageSystem(content=system)] if system else []
        state.messages.append(ChatMessageUser(content=obs))
        final: dict[str, Any] = {"success": False, "score": 0.0}
        total, steps, actions = 0.0, 0, []
        try:
            while steps < max_steps:
                for attempt in range(max_format_errors + 1):
                    state = await generate(state)
                    reply = state.output.message
                    try:
                        action = parse_action(
                            {"role": "assistant", "content": reply.text}, free_text
                        )
                        break
                    except FormatError as e:
                        if attempt == max_format_errors:
                            action = reply.text
                            break
                        state.messages.append(ChatMessageUser(content=f"Format error: {e}."))
                obs, reward, terminated, truncated, info = env.step(action)
                total, steps = total + reward, steps + 1
                actions.append(action)
                if terminated or truncated:
                    final = {k: info[k] for k in ("success", "score") if k in info} or final
                    break
                state.messages.append(ChatMessageUser(content=obs))
        finally:
            env.close()
        state.metadata["agentgym"] = {
            **final,
            "return": total,
            "steps": steps,
            "actions": actions,
            "finished": steps < max_steps or bool(final.get("success")),
        }
        return state

    return solve


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
