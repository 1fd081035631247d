"""Steps per second through ``agentgym env serve`` (OpenEnv over WebSocket) against in process.

    python benchmarks/env_server.py [--env Clarify-v0] [--episodes 128]

Each row plays the same expert episodes (the first tasks of the env's suite, each action
computed beforehand in a local env, so only stepping is timed): ``agentgym.make`` in this
process, then openenv-core's own ``GenericEnvClient`` against one server in this process
(uvicorn in a thread) with 1 and with 64 sessions stepping at once. A step over the server is a
JSON message each way on a local WebSocket plus the env's own step; the ratio says what the
protocol costs. Served rows are timed once every session is open and has built its env.
The client and the server share this process's CPUs, so the 64-session figure is
what one machine serves to its own clients, not a server's ceiling. Shared machines are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from rich.console import Console
from rich.table import Table

import agentgym
from agentgym.integrations.openenv.server import EnvServerThread, ServeSettings


def expert_scripts(env_id: str, episodes: int) -> list[tuple[str, list[str]]]:
    """(task id, the expert's actions) for ``episodes`` episodes over the suite's tasks."""
    env = agentgym.make(env_id)
    tasks = env.suite.tasks
    scripts = []
    for i in range(episodes):
        task = tasks[i % len(tasks)]
        env.reset(seed=0, options={"task": task})
        actions, done = [], False
        while not done:
            actions.append(env.unwrapped.expert_action())
            *_, terminated, truncated, _ = env.step(actions[-1])
            done = terminated or truncated
        scripts.append((task.id, actions))
    return scripts


def in_process(env_id: str, scripts: list[tuple[str, list[str]]]) -> tuple[int, float]:
    env = agentgym.make(env_id)
    steps, started = 0, time.perf_counter()
    for task_id, actions in scripts:
        env.reset(seed=0, options={"task": task_id})
        for action in actions:
            env.step(action)
            steps += 1
    return steps, time.perf_counter() - started


def served(url: str, scripts: list[tuple[str, list[str]]], sessions: int) -> tuple[int, float]:
    """``sessions`` clients at once, each playing its share of the episodes in turn; timed from
    when every session is open and has built its env (its first reset), as a trainer's
    long-lived sessions run."""
    from openenv.core.generic_client import GenericEnvClient

    async def main() -> tuple[int, float]:
        shares = [s for s in (scripts[i::sessions] for i in range(sessions)) if s]
        clients = [GenericEnvClient(base_url=url, message_timeout_s=600) for _ in shares]
        await asyncio.gather(*(c.connect() for c in clients))
        await asyncio.gather(
            *(c.reset(task=s[0][0], seed=0) for c, s in zip(clients, shares, strict=True))
        )

        async def play(env: GenericEnvClient, share: list[tuple[str, list[str]]]) -> int:
            steps = 0
            for task_id, actions in share:
                await env.reset(task=task_id, seed=0)
                for action in actions:
                    await env.step({"message": action})
                    steps += 1
            return steps

        started = time.perf_counter()
        steps = sum(
            await asyncio.gather(*(play(c, s) for c, s in zip(clients, shares, strict=True)))
        )
        seconds = time.perf_counter() - started
        await asyncio.gather(*(c.close() for c in clients))
        return steps, seconds

    return asyncio.run(main())


def run(env_id: str, episodes: int) -> None:
    scripts = expert_scripts(env_id, episodes)
    rows = [("agentgym.make, in process", 1, *in_process(env_id, scripts))]
    server = EnvServerThread(ServeSettings(env_id), max_sessions=64)
    try:
        for sessions in (1, 64):
            rows.append(
                (
                    "agentgym env serve + GenericEnvClient",
                    sessions,
                    *served(server.url, scripts, sessions),
                )
            )
    finally:
        server.stop()
    base = rows[0][2] / rows[0][3]
    table = Table(title=f"{env_id}: {episodes} expert episodes, {rows[0][2]} steps")
    for col in ("how", "sessions", "steps", "seconds", "steps/s", "vs in process"):
        table.add_column(col, justify="left" if col == "how" else "right")
    for how, sessions, steps, seconds in rows:
        rate = steps / seconds
        table.add_row(
            how, str(sessions), str(steps), f"{seconds:.2f}", f"{rate:,.0f}", f"{rate / base:.3f}"
        )
    Console().print(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Clarify-v0")
    parser.add_argument("--episodes", type=int, default=128)
    args = parser.parse_args()
    run(args.env, args.episodes)
