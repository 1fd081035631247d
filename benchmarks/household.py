"""Household-v0 speed and memory on one core: steps/s, resets/s, snapshot/restore, bytes per env.

    python benchmarks/household.py [--seconds 2]

Every rate is measured on the same machine in the same run as the baseline, the NoOp test env
(the cheapest possible ``TextEnv``: what the base class and Gymnasium cost), and shown as a ratio
to it and to the target (20,000 steps/s, 2,000 resets/s). "cold" resets see each task for the
first time (config validation and scene compilation); "warm" resets reuse the compiled scene.
The process is pinned to one CPU where the OS allows. Shared machines make the figures noisy.
"""

from __future__ import annotations

import gc
import random
import time
import tracemalloc
from collections.abc import Callable

from rich.console import Console
from rich.table import Table
from timing import expert_episodes, rate, seconds_on_one_cpu

from agentgym.envs.household.env import HouseholdEnv
from agentgym.task import Task, TaskSuite
from agentgym.testing import NoOpEnv, noop_suite

TARGETS = {"steps/s": 20_000.0, "resets/s": 2_000.0}


def random_steps(
    env: HouseholdEnv | NoOpEnv, tasks: list[Task], seed: int = 0
) -> Callable[[], int]:
    """Uniform random admissible commands, resetting on episode end; counts steps only."""
    rng, i = random.Random(seed), 0
    _, info = env.reset(seed=0, options={"task": tasks[0]})
    state = {"info": info}

    def work() -> int:
        nonlocal i
        for _ in range(1000):
            _, _, terminated, truncated, state["info"] = env.step(
                rng.choice(state["info"]["available_actions"])
            )
            if terminated or truncated:
                i += 1
                _, state["info"] = env.reset(options={"task": tasks[i % len(tasks)]})
        return 1000

    return work


def fixed_steps(env: HouseholdEnv | NoOpEnv, task: Task, action: str) -> Callable[[], int]:
    """The same action over and over (resets excluded from the count)."""
    env.reset(seed=0, options={"task": task})

    def work() -> int:
        for _ in range(1000):
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset(options={"task": task})
        return 1000

    return work


def resets(env: HouseholdEnv | NoOpEnv, tasks: list[Task]) -> Callable[[], int]:
    it = iter(range(10**9))

    def work() -> int:
        for _ in range(100):
            env.reset(options={"task": tasks[next(it) % len(tasks)]})
        return 100

    return work


def cold_resets(tasks: list[Task]) -> float:
    """Resets of tasks never seen (fresh Task objects: validation and scene compile each time)."""
    fresh = [Task.model_validate(t.model_dump()) for t in tasks]
    env = HouseholdEnv()
    t0 = time.perf_counter()
    for t in fresh:
        env.reset(options={"task": t})
    return len(fresh) / (time.perf_counter() - t0)


def snapshot_restore(env: HouseholdEnv, task: Task) -> Callable[[], int]:
    env.reset(seed=0, options={"task": task})
    for _ in range(3):
        env.step(env.expert_action())

    def work() -> int:
        for _ in range(100):
            env.restore(env.snapshot())
        return 100

    return work


def bytes_per_env(tasks: list[Task], n: int = 200) -> tuple[float, float]:
    """(bytes per env instance after a reset, bytes per compiled scene in the shared cache)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    scenes = []
    for t in tasks[:n]:  # compile each scene once
        e = HouseholdEnv()
        e.reset(options={"task": t})
        scenes.append(e)
    del scenes
    gc.collect()
    with_scenes = tracemalloc.get_traced_memory()[0]
    envs = []
    for t in tasks[:n]:
        e = HouseholdEnv()
        e.reset(options={"task": t})
        envs.append(e)
    gc.collect()
    with_envs = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (with_envs - with_scenes) / n, (with_scenes - base) / n


def main() -> None:
    sec = seconds_on_one_cpu(__doc__)
    unseen = TaskSuite.load("household/valid_unseen").tasks
    train = TaskSuite.load("household/train").tasks
    noop_tasks = noop_suite(64, length=50).tasks
    noop = NoOpEnv()
    base_steps = rate(fixed_steps(noop, noop_tasks[0], "noop"), sec)
    base_resets = rate(resets(noop, noop_tasks), sec)
    env = HouseholdEnv()
    rows = [
        ("random admissible commands", "steps/s", rate(random_steps(env, unseen), sec), base_steps),
        (
            "invalid commands (Nothing happens.)",
            "steps/s",
            rate(fixed_steps(env, unseen[0], "dance"), sec),
            base_steps,
        ),
        (
            "expert episodes (planning, one reset per episode)",
            "steps/s",
            rate(expert_episodes(env, unseen), sec),
            base_steps,
        ),
        ("resets, warm (scene compiled)", "resets/s", rate(resets(env, unseen), sec), base_resets),
        ("resets, cold (3,553 new train tasks)", "resets/s", cold_resets(train), base_resets),
        ("snapshot + restore", "pairs/s", rate(snapshot_restore(env, unseen[0]), sec), base_resets),
    ]
    per_env, per_scene = bytes_per_env(train)
    table = Table(title=f"Household-v0 on one core ({sec:.0f} s per figure; shared machine: noisy)")
    for col in ["workload", "rate", "unit", "NoOp baseline", "ratio to NoOp", "target", "meets"]:
        table.add_column(col, justify="left" if col in ("workload", "unit") else "right")
    for name, unit, value, baseline in rows:
        target = TARGETS.get(unit)
        table.add_row(
            name,
            f"{value:,.0f}",
            unit,
            f"{baseline:,.0f}",
            f"{value / baseline:.2f}",
            f"{target:,.0f}" if target else "",
            ("yes" if value >= target else "NO") if target else "",
        )
    table.add_row("memory per env instance", f"{per_env / 1024:,.1f}", "KiB", "", "", "", "")
    table.add_row(
        "memory per compiled scene (shared)", f"{per_scene / 1024:,.1f}", "KiB", "", "", "", ""
    )
    Console(width=130).print(table)


if __name__ == "__main__":
    main()
