"""``check_env``: Gymnasium's checker plus the agentgym contract, one small check per rule;
``check_parallel_env``: PettingZoo's ``parallel_api_test`` plus text spaces, for multi-agent envs."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from gymnasium.spaces import Text
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from pettingzoo.test import parallel_api_test

from agentgym.env import NoExpert, TextEnv
from agentgym.parallel_env import TextParallelEnv
from agentgym.task import Task

DEEPLY_NESTED = ["[" * 100_000, '{"a":' * 50_000]
"""Nesting that makes ``json.loads`` (and naive recursive parsers) raise RecursionError."""

MALFORMED_ACTIONS = [
    "",
    "   ",
    "\x00\x01\x02",
    "%%% agentgym: not an action %%%",
    "[" * 500,
    "🙂 ünïcode",
    "\ud800",
    "(" * 100_000,
    "1+" * 100_000 + "1",
    *DEEPLY_NESTED,
]
"""Strings no env should accept as a valid action (the deep and long ones crash naive parsers:
``ast.parse`` recurses, a lone surrogate cannot be encoded)."""

STRUCTURAL_MALFORMED = ["", "   ", "\x00\x01\x02", "[" * 500, *DEEPLY_NESTED]
"""What is malformed even where free text is an action (``TextEnv.free_text_actions``)."""


class ConformanceError(AssertionError):
    """The env breaks the agentgym contract; the message says which rule and how to fix it."""


def check_env(
    env: Any, tasks: Sequence[Task | str] | None = None, seed: int = 0, max_steps: int = 500
) -> None:
    """Check ``env`` against Gymnasium's checker and the agentgym contract on a few tasks.

    Raises :class:`ConformanceError` naming the broken rule; Gymnasium warnings count as failures.
    """
    env = env.unwrapped
    if not isinstance(env, TextEnv):
        raise ConformanceError(f"{type(env).__name__} is not an agentgym.TextEnv")
    check_gymnasium(env)
    for task in tasks if tasks is not None else env.suite.tasks[:3]:
        expert = _expert_actions(env, task, seed, max_steps)
        check_determinism(env, task, seed, expert or _probes(env))
        check_malformed_actions(env, task, seed)
        check_snapshot_restore(env, task, seed, expert or _probes(env))
        check_inaction_never_succeeds(env, task, seed, max_steps)


def check_gymnasium(env: TextEnv) -> None:
    """Gymnasium's own ``check_env``, with any warning it raises turned into a failure."""
    _strict("gymnasium check_env", lambda: gymnasium_check_env(env, skip_render_check=True))


def check_parallel_env(env: Any, num_cycles: int = 100) -> None:
    """Check a multi-agent env: a :class:`TextParallelEnv` whose seats all have text spaces, passing
    PettingZoo's ``parallel_api_test`` for ``num_cycles`` steps; its warnings count as failures."""
    if not isinstance(env, TextParallelEnv):
        raise ConformanceError(f"{type(env).__name__} is not an agentgym.TextParallelEnv")
    for agent in env.possible_agents:
        spaces = {"observation": env.observation_space(agent), "action": env.action_space(agent)}
        for kind, space in spaces.items():
            if not isinstance(space, Text):
                raise ConformanceError(f"{agent}'s {kind} space is {space}, not a Text space")
    _strict("pettingzoo parallel_api_test", lambda: parallel_api_test(env, num_cycles=num_cycles))


def _strict(label: str, check: Callable[[], object]) -> None:
    """Run ``check``: an exception or any warning it raises becomes a ConformanceError. Garbage
    left by earlier code is collected first, so its ResourceWarnings are not blamed on ``check``."""
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check()
        except Exception as e:
            raise ConformanceError(f"{label} raised {e!r}") from e
    if caught:
        raise ConformanceError(f"{label} warned: " + "; ".join(str(w.message) for w in caught))


def _expert_actions(env: TextEnv, task: Task | str, seed: int, max_steps: int) -> list[str] | None:
    """The expert's actions on ``task``, checking it succeeds; None if the env has no expert."""
    env.reset(seed=seed, options={"task": task})
    actions: list[str] = []
    for _ in range(max_steps):
        try:
            action = env.expert_action()
        except NoExpert:
            return None
        actions.append(action)
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            _check_final_info(info, task)
            if not info["success"]:
                raise ConformanceError(
                    f"the expert failed task {_tid(task)} after {len(actions)} steps"
                )
            return actions
    raise ConformanceError(f"the expert did not finish task {_tid(task)} within {max_steps} steps")


def check_determinism(env: TextEnv, task: Task | str, seed: int, actions: list[str]) -> None:
    """Same task + seed + actions must give the same observations, rewards and flags."""
    first, second = _play(env, task, seed, actions), _play(env, task, seed, actions)
    if first != second:
        raise ConformanceError(
            f"task {_tid(task)}: two runs with seed {seed} and the same actions differ"
        )


def check_malformed_actions(env: TextEnv, task: Task | str, seed: int) -> None:
    """Malformed strings and non-strings never raise; they give valid=False and a text observation."""
    for action in [*_probes(env), 42, None]:
        env.reset(seed=seed, options={"task": task})
        try:
            obs, _, _, _, info = env.step(action)  # type: ignore[arg-type]
        except Exception as e:
            raise ConformanceError(
                f"step({_short(action)}) raised {e!r}; it must return an observation"
            ) from e
        if not isinstance(obs, str) or not obs.strip():
            raise ConformanceError(
                f"step({_short(action)}) must explain the problem in the observation"
            )
        if info.get("valid") is not False:
            raise ConformanceError(f"step({_short(action)}) must set info['valid'] = False")


def check_snapshot_restore(env: TextEnv, task: Task | str, seed: int, actions: list[str]) -> None:
    """Restoring a snapshot and replaying the rest gives the same continuation."""
    env.reset(seed=seed, options={"task": task})
    half = len(actions) // 2
    for a in actions[:half]:
        env.step(a)
    shown = env.unwrapped.last_observation  # type: ignore[attr-defined]
    snap = env.snapshot()
    rest = [env.step(a)[:4] for a in actions[half:]]
    for _ in range(2):  # a snapshot stays reusable
        env.restore(snap)
        if env.unwrapped.last_observation != shown:  # type: ignore[attr-defined]
            raise ConformanceError(
                f"task {_tid(task)}: after restore() render() must show the snapshot's observation"
            )
        if [env.step(a)[:4] for a in actions[half:]] != rest:
            raise ConformanceError(
                f"task {_tid(task)}: restore() does not reproduce the continuation"
            )


def check_inaction_never_succeeds(
    env: TextEnv, task: Task | str, seed: int, max_steps: int
) -> None:
    """Only invalid actions until the limit: the task must not count as solved."""
    env.reset(seed=seed, options={"task": task})
    probes = _probes(env)
    for t in range(max_steps):
        _, _, terminated, truncated, info = env.step(probes[t % len(probes)])
        if info.get("success"):
            raise ConformanceError(
                f"task {_tid(task)} counts as solved after {t + 1} invalid actions"
            )
        if terminated or truncated:
            _check_final_info(info, task)
            return


def _short(action: object) -> str:
    """An action's repr for a message: the 100,000-character probes cut to a readable length."""
    text = repr(action)
    return text if len(text) <= 60 else f"{text[:50]}... ({len(text)} chars)"


def _probes(env: TextEnv) -> list[str]:
    return STRUCTURAL_MALFORMED if env.free_text_actions else MALFORMED_ACTIONS


def _play(env: TextEnv, task: Task | str, seed: int, actions: list[str]) -> list[Any]:
    trace: list[Any] = [env.reset(seed=seed, options={"task": task})[0]]
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        trace.append((obs, reward, terminated, truncated, info.get("valid")))
        if terminated or truncated:
            break
    return trace


def _check_final_info(info: dict[str, Any], task: Task | str) -> None:
    missing = {"success", "score"} - set(info)
    if missing:
        raise ConformanceError(f"task {_tid(task)}: final info lacks {sorted(missing)}")
    if not 0.0 <= float(info["score"]) <= 1.0:
        raise ConformanceError(f"task {_tid(task)}: score {info['score']} is outside [0, 1]")


def _tid(task: Task | str) -> str:
    return task if isinstance(task, str) else task.id
