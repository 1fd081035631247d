"""SFT rows in the bounded context: a demonstrator plays a task, each step becomes the prompt
a ``hf:CKPT?history=K`` chat agent is shown (:mod:`agentgym.bounded_context`) and its action.

Optionally with *stutters* (DART-style noise injection, Laskey et al. 2017): after a ``go to R``
the demonstrator sometimes repeats it, the env answers ``Nothing happens.``, and the next row
teaches what the demonstrator does from that state. A policy cloned from clean demonstrations
never sees its own repeated command in the prompt, so under greedy decoding with a short history
it repeats it for ever (SmolLM2 after SFT: 40-48 of 50 turns ``Nothing happens.``).

:func:`relabel_rows` is the other remedy, DAgger: the learner's own episodes, every state
labelled by the demonstrator."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from agentgym.bounded_context import BoundedHistory


def sft_row(task: Any, step: int, user: str, command: str) -> dict[str, Any]:
    """One SFT row: the bounded prompt of ``task``'s ``step`` and the command to learn there."""
    return {
        "task_id": f"{task.id}#{step}",
        "messages": [
            {"role": "user", "content": user},
            {"role": "assistant", "content": command},
        ],
    }


def play_rows(
    env: Any,
    agent: Any,
    task: Any,
    history: int,
    stutter: float = 0.0,
    seed: int = 0,
    notes: str | None = None,
) -> tuple[list[dict[str, Any]], bool]:
    """Play ``task`` with ``agent`` (a demonstrator) and return one SFT row per step
    (``{"messages": [user, assistant]}``: the bounded prompt of that step and the agent's
    action), and whether the episode was won. The rows hold what a :class:`ChatAgent` with
    ``history`` (and ``notes``) is shown, so SFT on them trains the prompt
    ``hf:CKPT?history=K&notes=NAME`` plays.

    With ``stutter`` > 0, after each ``go to`` the agent's command is repeated with that
    probability (again, geometrically) before its next step; the repeats are played and shown in
    later prompts but are never rows. The agent must keep its commands in ``agent.actions`` (the
    searcher does), so it reads the repeat as its own."""
    rng = random.Random(f"{seed}:{task.id}")
    ctx = BoundedHistory(history, notes)
    obs, info = env.reset(seed=0, options={"task": task})
    agent.reset(info)
    ctx.start(str(info.get("instruction", "")))
    rows: list[dict[str, Any]] = []
    while True:
        user = ctx.prompt(obs, info)
        action = str(agent.act(obs, info))
        rows.append(sft_row(task, len(rows), user, action))
        ctx.acted(action)
        obs, _, terminated, truncated, info = env.step(action)
        while (
            not (terminated or truncated) and action.startswith("go to ") and rng.random() < stutter
        ):
            ctx.prompt(obs, info)
            ctx.acted(action)
            agent.observations.append(obs)
            agent.actions.append(action)
            obs, _, terminated, truncated, info = env.step(action)
            if info.get("valid", True):  # the env's flag for a command that did nothing
                raise RuntimeError(f"a repeated {action!r} changed the room: {obs!r}")
        if terminated or truncated:
            return rows, bool(info.get("success", terminated))


def relabel_rows(
    env: Any,
    task: Any,
    actions: list[str],
    labeler: Callable[[Sequence[str], Sequence[str]], str],
    history: int,
    notes: str | None = None,
) -> list[dict[str, Any]]:
    """DAgger's rows (Ross et al. 2011): replay a learner's ``actions`` on ``task`` and label
    every state it reached with what ``labeler`` (the demonstrator's policy: observations,
    commands so far -> next command) would do there. The prompts are those the learner was shown
    (the same :class:`BoundedHistory`), so SFT on them teaches the way back from the learner's
    own mistakes, states the demonstrator's episodes never reach. Each row also keeps the
    learner's command (``"learner"``)."""
    ctx = BoundedHistory(history, notes)
    obs, info = env.reset(seed=0, options={"task": task})
    ctx.start(str(info.get("instruction", "")))
    rows: list[dict[str, Any]] = []
    for action in actions:
        user = ctx.prompt(obs, info)
        label = labeler(ctx.observations, ctx.actions)
        rows.append({**sft_row(task, len(rows), user, label), "learner": action})
        ctx.acted(action)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return rows
