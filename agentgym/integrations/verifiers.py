"""agentgym envs as a verifiers (0.4, ``verifiers.v1``) environment, played in process:
``load_environment("textarena/GuessTheNumber-v0", suite=..., limit=20)``.

The taskset yields one verifiers task per agentgym task of the suite (its prompt the env's first
observation, its system prompt the env's); the env's ``run`` steps the agentgym env host-side as
the run's user, as verifiers' own TextArena taskset steps TextArena: each assistant reply is parsed
as ``agentgym eval``'s chat agent parses it (format errors corrected twice), the observation comes
back as the next user turn, and the episode's verdict is recorded as the rewards ``success``
(weighted 1) and ``score`` / ``return`` (weighted 0, for the record). The package
``verifiers_envs/agentgym_env`` exports these classes, so ``vf-eval agentgym-env`` finds them the
way verifiers environments are installed. Importing this module needs verifiers (the ``verifiers``
extra).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from agentgym.extras import require

require("the verifiers adapter", "verifiers")

import verifiers.v1 as vf  # noqa: E402

from agentgym.chat_agent import ChatAgentConfig, FormatError, parse_action  # noqa: E402
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
            system = getattr(env.unwrapped, "system_prompt", "") or None
            env.close()
            yield AgentgymTask(
                AgentgymData(
                    name=task.id,
                    prompt=obs,
                    system_prompt=system,
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
        free_text = bool(getattr(env.unwrapped, "free_text_actions", False))
        env.reset(seed=info["seed"], options={"task": agentgym_task})
        final: dict[str, Any] = {"success": False, "score": 0.0}
        total, steps, errors = 0.0, 0, 0
        actions: list[str] = []
        max_errors = ChatAgentConfig().max_format_errors
        try:
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn()  # the first observation is the task prompt
                while not segment.terminated and steps < info["max_steps"]:
                    reply = segment.last_reply
                    try:
                        action = parse_action({"role": "assistant", "content": reply}, free_text)
                    except FormatError as e:
                        if errors < max_errors:
                            errors += 1
                            segment = await interaction.turn(f"Format error: {e}.")
                            continue
                        action = reply
                    errors = 0
                    obs, reward, terminated, truncated, step_info = env.step(action)
                    total, steps = total + float(reward), steps + 1
                    actions.append(action)
                    if terminated or truncated:
                        final = {k: step_info[k] for k in ("success", "score") if k in step_info}
                        break
                    segment = await interaction.turn(obs)
        finally:
            env.close()
        trace = interaction.trace
        trace.record_reward("success", 1.0 if final.get("success") else 0.0, 1.0)
        trace.record_reward("score", float(final.get("score", 0.0)), 0.0)
        trace.record_reward("return", total, 0.0)
        trace.info["agentgym"] = {"task_id": agentgym_task.id, "steps": steps, "actions": actions}


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
    vf_eval: str, suite: str, limit: int, base_url: str, model: str, out: str, env_id: str
) -> list[str]:
    """``vf-eval``'s command line for the first ``limit`` tasks of ``suite`` against an
    OpenAI-compatible server (``agentgym serve``), one episode at a time, the null harness in a
    subprocess runtime, traces under ``out``, sampled as ``agentgym eval`` samples on ``env_id``
    (:func:`sampling`); the key is read from ``OPENAI_API_KEY``."""
    spec = sampling(env_id)
    command = [vf_eval, "--env.taskset.id", "agentgym-env", "--env.taskset.suite", suite,
               "--env.taskset.limit", str(limit), "-n", str(limit),
               "--env.player.harness.id", "null", "--env.player.runtime.type", "subprocess",
               "--no-push", "--client.base-url", base_url, "--client.api-key-var", "OPENAI_API_KEY",
               "--model", model, "-c", "1", "-o", out,
               "--sampling.temperature", str(spec["temperature"]),
               "--sampling.max-tokens", str(spec["max_tokens"])]  # fmt: skip
    return command + (["--sampling.stop", json.dumps(spec["stop"])] if "stop" in spec else [])


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
    "sampling",
    "vf_eval_command",
]
