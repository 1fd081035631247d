"""agentgym envs as a verifiers (0.4, ``verifiers.v1``) environment, played in process:
``load_environment("textarena/GuessTheNumber-v0", suite=..., limit=20)``.

The taskset yields one verifiers task per agentgym task of the suite, its prompt what
``agentgym eval``'s chat agent opens the episode with (the env's system prompt, its
demonstration turns, the first observation). The env's ``run`` plays the agentgym env host-side
as the run's user, as verifiers' own TextArena taskset plays TextArena, through agentgym's one
episode loop (a :class:`~agentgym.chat_agent.ChatAgent` in :func:`agentgym.rollout.rollout`):
each of the agent's requests becomes a turn of the verifiers interaction (the next observation
or a format correction), verifiers' harness answers it, and the episode's verdict is recorded as
the rewards ``success`` (weighted 1) and ``score`` / ``return`` (weighted 0, for the record). The package
``verifiers_envs/agentgym_env`` exports these classes, so ``vf-eval agentgym-env`` finds them the way
verifiers environments are installed. Importing this module needs verifiers (the ``verifiers``
extra).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from agentgym.extras import require

require("the verifiers adapter", "verifiers")

import verifiers.v1 as vf  # noqa: E402

from agentgym.async_play import LoopClient, play  # noqa: E402
from agentgym.chat_agent import ChatAgent, ChatAgentConfig  # noqa: E402
from agentgym.episode import Episode  # noqa: E402
from agentgym.llm.base import ChatRequest, ChatResponse, Choice, Message  # noqa: E402
from agentgym.registry import make  # noqa: E402
from agentgym.runner import episode_seed  # noqa: E402
from agentgym.task import Task, TaskSuite  # noqa: E402

DEFAULT_MAX_STEPS = 100
"""Turns per episode at most (``agentgym eval`` has none: its envs end their own episodes)."""


class AgentgymData(vf.TaskData):
    info: dict[str, Any]
    """The agentgym task (as JSON) and the seed its env is reset with."""


class AgentgymTask(vf.Task[AgentgymData, vf.State, vf.TaskConfig]):
    pass


class AgentgymTasksetConfig(vf.TasksetConfig):
    suite: str | None = None
    """An agentgym suite name (``textarena/GuessTheNumber-v0``) or JSONL path (None: the
    default suite of ``env_id``)."""
    env_id: str | None = None
    """Only tasks of this env (None: every task of the suite)."""
    limit: int | None = None
    """The first ``limit`` tasks."""
    seed: int = 0
    """The run seed, as ``agentgym eval --seed``: each task's env is reset as eval resets it."""
    max_steps: int = DEFAULT_MAX_STEPS


class AgentgymTaskset(vf.Taskset[AgentgymTask, AgentgymTasksetConfig]):
    def load(self) -> Iterator[AgentgymTask]:
        name = self.config.suite
        if name is None:
            if self.config.env_id is None:
                raise ValueError("set suite or env_id: which agentgym tasks to play")
            name = make(self.config.env_id).unwrapped.suite_name
        suite = TaskSuite.load(name)
        tasks = [t for t in suite if self.config.env_id in (None, t.env)]
        if self.config.env_id is not None and not tasks:
            envs = sorted({t.env for t in suite})
            raise ValueError(
                f"suite {name!r} has no task of env {self.config.env_id!r}; "
                f"its envs: {', '.join(envs)}"
            )
        for task in tasks[: self.config.limit]:
            env = make(task.env)
            seed = episode_seed(self.config.seed, task.id, 0)
            obs, _ = env.reset(seed=seed, options={"task": task})
            system, *prompt = _opening(_agent(None, env), obs)
            env.close()
            yield AgentgymTask(
                AgentgymData(
                    name=task.id,
                    prompt=prompt,
                    system_prompt=system["content"] or None,
                    info={
                        "task": task.model_dump(mode="json"),
                        "seed": seed,
                        "max_steps": self.config.max_steps,
                    },
                ),
                self.config.task,
            )


class AgentgymEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig()


class AgentgymEnv(vf.Env[AgentgymEnvConfig]):
    async def run(self, task: AgentgymTask, agents: Any) -> None:
        info = task.data.info
        agentgym_task = Task.model_validate(info["task"])
        env = make(agentgym_task.env)
        try:
            async with agents.player.interaction(task) as interaction:
                agent = _agent(LoopClient(_Turns(interaction, task.data).acomplete), env)
                options = {"seed": info["seed"], "max_steps": info["max_steps"]}
                episode = await play(env, agent, agentgym_task, **options)
        finally:
            env.close()
        record(interaction.trace, episode)


def record(trace: vf.Trace, episode: Episode) -> None:
    """The episode on verifiers' trace: its actions and status as ``info["agentgym"]``, and its
    verdict as rewards. Every reward, success and score reached the episode through
    :mod:`agentgym.rewards`' one rule (:meth:`Episode.record_step`); an ``error`` episode (a
    value that rule refused, or a failed env or model call) has no verdict, so it is the trace's
    error, not a success of 0: verifiers marks the trace failed, and a trainer reading it never
    learns from a reward the env did not give (as TRL's adapter refuses such an episode)."""
    trace.info["agentgym"] = {
        "task_id": episode.task_id,
        "steps": episode.n_steps,
        "actions": [s.action for s in episode.steps],
        "status": episode.status,
        "error": episode.error,
    }
    if episode.status == "error":
        reason = (episode.error or "the episode failed").strip().splitlines()[-1]
        trace.record_error(vf.EnvError(f"agentgym episode {episode.task_id}: {reason}"))
        return
    trace.record_reward("success", 1.0 if episode.success else 0.0, 1.0)
    trace.record_reward("score", episode.score, 0.0)
    trace.record_reward("return", episode.reward, 0.0)


def _agent(client: Any, env: Any) -> ChatAgent:
    """The chat agent of an episode: ``agentgym eval``'s, actions as text (no native tools)."""
    return ChatAgent(client, env, ChatAgentConfig(native_tools=False))


def _opening(agent: ChatAgent, observation: str) -> list[Message]:
    """The first request's messages, the system message first (empty where the env has none)."""
    messages = agent.opening(observation)
    return messages if messages[0]["role"] == "system" else [_SYSTEM_NONE, *messages]


_SYSTEM_NONE: Message = {"role": "system", "content": ""}


class _Turns:
    """The chat agent's requests as turns of a verifiers interaction: verifiers' harness holds
    the chat, so each request sends only what the agent added since the last reply (the next
    observation, or a format correction); the first is the task's prompt itself."""

    def __init__(self, interaction: Any, data: AgentgymData) -> None:
        self.interaction = interaction
        self.opening = [{"role": "system", "content": data.system_prompt or ""}] + [
            {"role": m.role, "content": m.content} for m in data.prompt or []
        ]
        self.sent = 0

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        messages = request.messages
        if self.sent == 0:
            if _opening_of(messages) != self.opening:
                raise ValueError("the episode's first request is not the verifiers task's prompt")
            segment = await self.interaction.turn()
        else:
            new = messages[self.sent :]
            if len(messages) < self.sent or any(m["role"] != "user" for m in new):
                raise ValueError("the chat agent cut or rewrote its history; verifiers keeps it")
            segment = await self.interaction.turn([dict(m) for m in new])
        if segment.terminated:
            raise RuntimeError("verifiers ended the exchange (a limit of its run)")
        self.sent = len(messages) + 1
        replies = [m for m in segment.messages if m.role == "assistant"]
        content = replies[-1].content if replies else ""
        return ChatResponse(choices=[Choice(message={"role": "assistant", "content": content})])


def _opening_of(messages: list[Message]) -> list[Message]:
    head = messages if messages and messages[0]["role"] == "system" else [_SYSTEM_NONE, *messages]
    return [{"role": m["role"], "content": m.get("content")} for m in head]


def sampling(env_id: str) -> dict[str, Any]:
    """The sampling ``agentgym eval``'s chat agent uses on ``env_id`` (temperature 0, the env's
    ``action_max_tokens``, a newline stop for one-line actions), for ``vf-eval --sampling.*``."""
    spec = ChatAgentConfig().for_env(make(env_id))
    return {"temperature": spec.temperature, "max_tokens": spec.max_tokens} | (
        {"stop": list(spec.stop)} if spec.stop else {}
    )


TASKSET_ID = "agentgym_env"
"""The verifiers environment package (``verifiers_envs/agentgym_env``) exporting these classes."""


def vf_eval_command(
    vf_eval: str,
    suite: str,
    limit: int,
    base_url: str,
    model: str,
    out: str,
    env_id: str,
    max_steps: int | None = None,
) -> list[str]:
    """``vf-eval``'s command line for the first ``limit`` tasks of ``suite`` against an
    OpenAI-compatible server (``agentgym serve``), one episode at a time, the null harness in a
    subprocess runtime, traces under ``out``, sampled as ``agentgym eval`` samples on ``env_id``
    (:func:`sampling`), at most ``max_steps`` actions an episode (None: the taskset's default);
    the key is read from ``OPENAI_API_KEY``."""
    spec = sampling(env_id)
    command = [vf_eval, "--env.taskset.id", "agentgym-env", "--env.taskset.suite", suite,
               "--env.taskset.limit", str(limit), "-n", str(limit),
               "--env.player.harness.id", "null", "--env.player.runtime.type", "subprocess",
               "--no-push", "--client.base-url", base_url, "--client.api-key-var", "OPENAI_API_KEY",
               "--model", model, "-c", "1", "-o", out,
               "--sampling.temperature", str(spec["temperature"]),
               "--sampling.max-tokens", str(spec["max_tokens"])]  # fmt: skip
    if max_steps is not None:
        command += ["--env.taskset.max-steps", str(max_steps)]
    return command + (["--sampling.stop", _stop_argument(spec["stop"])] if "stop" in spec else [])


def _stop_argument(stop: list[str]) -> str:
    """``--sampling.stop``'s value: verifiers' CLI passes this key through as text, never parsing
    it (a JSON list would reach the model as one literal stop string), so one stop goes as itself
    (the OpenAI API takes a string); several as JSON, which only a server parsing it honours."""
    return stop[0] if len(stop) == 1 else json.dumps(stop)


def env_config(
    env_id: str | None = None,
    *,
    suite: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    max_steps: int = DEFAULT_MAX_STEPS,
    taskset_id: str = TASKSET_ID,
) -> vf.EnvConfig:
    """The verifiers run config of an agentgym suite (``suite`` defaults to the env's own)."""
    from verifiers.v1.utils.loaders import resolve_env_config

    if suite is None and env_id is None:
        raise ValueError("give env_id or suite: which agentgym tasks to play")
    taskset = {"id": taskset_id, "suite": suite, "env_id": env_id, "limit": limit, "seed": seed}
    return resolve_env_config({"taskset": taskset | {"max_steps": max_steps}})


def load_environment(
    env_id: str | None = None,
    *,
    suite: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> vf.Env:
    """A verifiers environment that plays agentgym episodes of ``suite`` (default: ``env_id``'s
    own suite), the first ``limit`` tasks; needs the ``agentgym-env`` package installed
    (``pip install -e verifiers_envs/agentgym_env``): verifiers resolves environments by package."""
    return vf.load_environment(
        env_config(env_id, suite=suite, limit=limit, seed=seed, max_steps=max_steps)
    )


__all__ = [
    "AgentgymEnv",
    "AgentgymTask",
    "AgentgymTaskset",
    "env_config",
    "load_environment",
    "record",
    "sampling",
    "vf_eval_command",
]
