"""SFT rows in the bounded context: a demonstrator plays a task, each step becomes the prompt
a ``hf:CKPT?history=K`` chat agent is shown (:mod:`agentgym.bounded_context`) and its action."""

from __future__ import annotations

from typing import Any

from agentgym.bounded_context import BoundedHistory


def play_rows(env: Any, agent: Any, task: Any, history: int) -> tuple[list[dict[str, Any]], bool]:
    """Play ``task`` with ``agent`` (a demonstrator) and return one SFT row per step
    (``{"messages": [user, assistant]}``: the bounded prompt of that step and the agent's
    action), and whether the episode was won. The rows hold what a :class:`ChatAgent` with
    ``history`` is shown, so SFT on them trains the prompt ``hf:CKPT?history=K`` plays."""
    ctx = BoundedHistory(history)
    obs, info = env.reset(seed=0, options={"task": task})
    agent.reset(info)
    ctx.start(str(info.get("instruction", "")))
    rows: list[dict[str, Any]] = []
    while True:
        user = ctx.prompt(obs, info)
        action = str(agent.act(obs, info))
        rows.append(
            {
                "task_id": f"{task.id}#{len(rows)}",
                "messages": [
                    {"role": "user", "content": user},
                    {"role": "assistant", "content": action},
                ],
            }
        )
        ctx.acted(action)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return rows, bool(info.get("success", terminated))
