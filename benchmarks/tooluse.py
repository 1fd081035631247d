"""Tool-use env speed: resets and tool calls per second, against tau-bench's deep copy.

Telecom rows: a reset there also runs the task's set-up actions on both sides (tau2 builds the
environment from a deep copy and runs them too), and every tool call is followed by the phone's
sync with the carrier's records, as in tau2.

    python benchmarks/tooluse.py [--episodes 200]

tau-bench reloads (deep-copies) the whole database on every reset; here a reset is a fresh
copy-on-write view. The baseline is ``copy.deepcopy`` of the same retail data, measured in the same
run. Figures are noisy on a shared machine.
"""

from __future__ import annotations

import argparse
import copy
import time
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

import agentgym
from agentgym.envs.tooluse import phone_state, retail, retail_v1, telecom
from agentgym.envs.tooluse.world import World, get_domain
from agentgym.task import TaskSuite


def rate(fn: Callable[[], object], n: int) -> float:
    """Calls per second of ``fn`` over ``n`` calls (best of 3 rounds)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - start)
    return n / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    n = parser.parse_args().episodes
    v1_data, tau2_db = retail_v1.base_tables(), retail.base_tables()
    world_v1, world_tau2 = World(get_domain("tau_bench_retail")), World(get_domain("retail"))
    world_tel = World(get_domain("telecom"))
    world_tel.apply_initial_state(TELECOM_SETUP)
    rows = [
        (
            "deepcopy of v1 retail data (tau-bench reset)",
            rate(lambda: copy.deepcopy(v1_data), max(n // 20, 3)),
        ),
        (
            "deepcopy of tau2 RetailDB records",
            rate(lambda: copy.deepcopy(tau2_db), max(n // 20, 3)),
        ),
        ("fresh COW world, v1 retail", rate(lambda: World(get_domain("tau_bench_retail")), n * 50)),
        ("fresh COW world, tau2 retail", rate(lambda: World(get_domain("retail")), n * 50)),
        ("env.reset(task) TauBenchRetail-v0 (world, gold replay, user)", _env_reset_rate(n)),
        (
            "deepcopy of tau2 TelecomDB + phone (tau2 reset)",
            rate(lambda: copy.deepcopy((telecom.base_db(), phone_state.base_user_db())), n),
        ),
        (
            "fresh world, tau2 telecom (both sides)",
            rate(lambda: World(get_domain("telecom")), n * 50),
        ),
        (
            "env.reset(task) TauTelecom-v0 (set-up actions, gold replay, user)",
            _env_reset_rate(n, "TauTelecom-v0", "tooluse/telecom-test"),
        ),
        (
            "world.reset() after a write",
            rate(lambda: (world_v1.call("modify_user_address", ADDRESS), world_v1.reset()), n * 10),
        ),
    ]
    calls = [
        (
            "tool call get_order_details (v1)",
            rate(lambda: world_v1.call("get_order_details", {"order_id": "#W2378156"}), n * 20),
        ),
        (
            "tool call get_order_details (tau2)",
            rate(lambda: world_tau2.call("get_order_details", {"order_id": "#W2378156"}), n * 20),
        ),
        (
            "tool call find_user_id_by_email (tau2, scans users)",
            rate(lambda: world_tau2.call("find_user_id_by_email", {"email": "x@y.z"}), n),
        ),
        (
            "tool call get_customer_by_phone (telecom agent, + phone sync)",
            rate(lambda: world_tel.call("get_customer_by_phone", PHONE), n * 5),
        ),
        (
            "tool call toggle_airplane_mode (telecom user, + phone sync)",
            rate(lambda: world_tel.call("toggle_airplane_mode", {}, "user"), n * 5),
        ),
        (
            "tool call run_speed_test (telecom user)",
            rate(lambda: world_tel.call("run_speed_test", {}, "user"), n * 5),
        ),
    ]
    env = agentgym.make("TauBenchRetail-v0")
    tasks = TaskSuite.load("tooluse/tau-bench-retail-test").tasks
    episodes = rate(lambda: _episode(env, tasks), min(n, len(tasks)))
    tel_env = agentgym.make("TauTelecom-v0")
    tel_tasks = TaskSuite.load("tooluse/telecom-test").tasks
    tel_episodes = rate(lambda: _episode(tel_env, tel_tasks), min(n, len(tel_tasks)))
    baseline = rows[0][1]
    table = Table(title=f"tool-use speed ({n} episodes; shared machine, noisy)")
    table.add_column("what")
    table.add_column("per second", justify="right")
    table.add_column("vs deepcopy reset", justify="right")
    for name, value in (
        rows
        + calls
        + [
            ("full expert episode, tau-bench retail (reset+steps+grading)", episodes),
            ("full expert episode, telecom (both sides act; reset+steps+grading)", tel_episodes),
        ]
    ):
        table.add_row(
            name, f"{value:,.0f}", f"{value / baseline:,.0f}x" if name in dict(rows) else ""
        )
    Console().print(table)


def _env_reset_rate(
    n: int, env_id: str = "TauBenchRetail-v0", suite: str = "tooluse/tau-bench-retail-test"
) -> float:
    env = agentgym.make(env_id)
    task = TaskSuite.load(suite).tasks[0]
    return rate(lambda: env.reset(seed=0, options={"task": task}), n)


ADDRESS = {
    "user_id": "noah_brown_6181",
    "address1": "1 Main St",
    "address2": "",
    "city": "Denver",
    "state": "CO",
    "country": "USA",
    "zip": "80279",
}
PHONE = {"phone_number": "555-123-2002"}
TELECOM_SETUP = {
    "initialization_actions": [
        {
            "env_type": "user",
            "func_name": "set_user_info",
            "arguments": {"name": "John Smith", "phone_number": "555-123-2002"},
        }
    ]
}
_cursor = [0]


def _episode(env: object, tasks: list) -> None:
    task = tasks[_cursor[0] % len(tasks)]
    _cursor[0] += 1
    env.reset(seed=0, options={"task": task})  # type: ignore[attr-defined]
    while not env.done:  # type: ignore[attr-defined]
        env.step(env.expert_action())  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
