"""Sandbox speed: cold start, warm acquire, exec round trip, and how many sandboxes run at once.

Baselines measured in the same run with the same Docker SDK: ``containers.run`` + start of a
plain container (what a naive provider pays per episode) and ``docker exec`` of ``true`` in a
running container (what a stateless ``docker exec`` loop pays per command). Targets from the
issue: warm acquire p50 < 20 ms, exec p50 < 40 ms, >= 64 concurrent sandboxes.
Run: ``python benchmarks/sandbox.py [--cold 10] [--execs 200] [--concurrent 64]``.
Figures are noisy on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from rich.console import Console
from rich.table import Table

from agentgym.sandbox import SandboxConfig, SandboxPool, get_provider, open_sandbox
from agentgym.sandbox.docker_provider import DockerProvider, docker_client


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def baseline_docker(client: object, n_cold: int, n_exec: int) -> tuple[list[float], list[float]]:
    """Plain SDK: create+start of a sleeping container; ``docker exec true`` in it."""
    cold, boxes = [], []
    for _ in range(n_cold):
        t0 = time.perf_counter()
        c = client.containers.run(
            "agentgym-sandbox:latest",
            ["sleep", "600"],
            detach=True,
            network_mode="none",
            labels={"agentgym.sandbox": "1"},
        )  # type: ignore[attr-defined]
        cold.append((time.perf_counter() - t0) * 1000)
        boxes.append(c)
    execs = timed(lambda: boxes[0].exec_run(["true"]), n_exec)
    for c in boxes:
        c.remove(force=True)
    return cold, execs


def ours(n_cold: int, n_exec: int, n_acquire: int) -> dict[str, list[float]]:
    provider = DockerProvider(SandboxConfig())
    cold = []
    for _ in range(n_cold):
        t0 = time.perf_counter()
        sb = provider.create()
        cold.append((time.perf_counter() - t0) * 1000)
        sb.close()
    with SandboxPool(provider, size=2) as pool:
        acquire = []
        for _ in range(n_acquire):
            t0 = time.perf_counter()
            lease = pool.acquire()
            acquire.append((time.perf_counter() - t0) * 1000)
            lease.close()
            time.sleep(0.05)  # let the background reset finish, as between real episodes
        with pool.acquire() as sb:
            execs = timed(lambda: sb.exec(["true"]), n_exec)
            shell = timed(lambda: sb.exec("echo hi"), n_exec // 2)
    with open_sandbox("local") as lb:
        local = timed(lambda: lb.exec(["true"]), n_exec)
    return {"cold": cold, "acquire": acquire, "exec": execs, "shell": shell, "local": local}


def concurrent(n: int) -> tuple[int, float]:
    """Start ``n`` sandboxes at once, each running a bash loop; how many answer a command."""
    provider = get_provider("docker", SandboxConfig(memory="128m", cpus=0.1))
    t0 = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        boxes = list(pool.map(lambda _: provider.create(), range(n)))
    for sb in boxes:
        sb.exec("nohup bash -c 'while true; do sleep 0.5; done' > /dev/null 2>&1 &")
    alive = sum(sb.exec("echo ok", timeout=60).stdout == "ok\n" for sb in boxes)
    elapsed = time.perf_counter() - t0
    provider.close_all()  # type: ignore[attr-defined]
    return alive, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cold", type=int, default=10)
    parser.add_argument("--execs", type=int, default=200)
    parser.add_argument("--acquires", type=int, default=50)
    parser.add_argument("--concurrent", type=int, default=64)
    args = parser.parse_args()
    base_cold, base_exec = baseline_docker(docker_client(), args.cold, args.execs)
    m = ours(args.cold, args.execs, args.acquires)
    table = Table(title="agentgym sandboxes vs. the plain Docker SDK (ms; noisy shared machine)")
    for col in ["measure", "p50", "p95", "baseline p50", "ratio", "target"]:
        table.add_column(col, justify="right" if col != "measure" else "left")

    def row(name: str, xs: list[float], base: list[float] | None, target: str) -> None:
        b = statistics.median(base) if base else None
        ratio = f"{statistics.median(xs) / b:.2f}x" if b else "-"
        table.add_row(
            name,
            f"{pct(xs, 0.5):.1f}",
            f"{pct(xs, 0.95):.1f}",
            f"{b:.1f}" if b else "-",
            ratio,
            target,
        )

    row("cold start (create+start+ready)", m["cold"], base_cold, "-")
    row("warm acquire (pool)", m["acquire"], base_cold, "p50 < 20")
    row("exec `true` round trip (docker)", m["exec"], base_exec, "p50 < 40")
    row("exec `bash -c` round trip (docker)", m["shell"], base_exec, "-")
    row("exec `true` round trip (bubblewrap)", m["local"], base_exec, "-")
    Console().print(table)
    alive, secs = concurrent(args.concurrent)
    Console().print(
        f"concurrent: {alive}/{args.concurrent} sandboxes with a bash loop answered (started in {secs:.1f}s); target >= 64"
    )


if __name__ == "__main__":
    main()
