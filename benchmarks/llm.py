"""LLM layer speed: batched rollouts, `agentgym serve`, ChatAgent overhead; tiny model or SmolLM2.

Run ``python benchmarks/llm.py`` (builds a tiny model in a temp dir; no downloads). Prints
1. the ChatAgent's own cost per step, beyond the model call;
2. env-steps/s of an eval at concurrency 1, 8, 32, batched engine vs one request at a time;
3. requests/s and p50/p95 latency of ``agentgym serve`` under 32 concurrent OpenAI clients, at
   max batch 1 and 32 (the clients run in a process of their own, as real clients do: in the
   server's process their ~10 ms of SDK work per request shares its interpreter lock).

``python benchmarks/llm.py --model smollm2 [--quick]`` measures the real SmolLM2-135M-Instruct
(``agentgym model fetch smollm2``; fp32 on the CPU) instead:
1. generation tokens/s of direct engine calls at batch 1, 8 and 32;
2. a Clarify eval with ``hf:smollm2`` agents (one-line actions: each request stops at a newline)
   at concurrency 1, 8 and 32, the engine at max batch 1 vs 32, with the share of prompt tokens
   the prefix cache supplied;
3. ``agentgym serve`` with 1 client vs 32 concurrent clients.
Every ratio is against a baseline measured in the same run; the machine's load average is
printed with each table, since timings on a shared machine move with it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import agentgym
from agentgym.chat_agent import ChatAgent, ChatAgentConfig
from agentgym.llm.clients import ClientOptions, HFClient
from agentgym.llm.engine import LocalEngine, SamplingSpec
from agentgym.llm.tiny import TinyModelConfig, init_model
from agentgym.task import TaskSuite
from agentgym.testing import ScriptedClient, noop_suite

console = Console(width=150)


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


# ---------------------------------------------------------------------------- evals
def eval_run(
    model: str,
    batch: int,
    suite: TaskSuite,
    concurrency: int,
    config: ChatAgentConfig,
    max_steps: int | None = None,
) -> dict[str, float]:
    """Steps/s of an eval whose agents share one engine of max batch ``batch``, and its stats."""
    client = HFClient(model, ClientOptions(max_batch_size=batch))
    t0 = time.perf_counter()
    try:
        result = agentgym.evaluate(
            suite,
            lambda env: ChatAgent(client, env, config),
            concurrency=concurrency,
            max_steps=max_steps,
        )
    finally:
        client.engine.close()
    elapsed = time.perf_counter() - t0
    errors = [e for e in result.new_episodes if e.status == "error"]
    assert not errors, errors[0].error
    stats = client.engine.stats
    return {
        "steps/s": sum(len(e.steps) for e in result.new_episodes) / elapsed,
        "seconds": elapsed,
        "mean batch": statistics.mean(client.engine.batch_sizes),
        "cached": stats.cached_tokens / max(stats.prompt_tokens, 1),
        "tokens/step": stats.completion_tokens / max(stats.rows, 1),
        "prefilled": stats.prefill_tokens / max(stats.rows, 1),
    }


def batching_table(
    title: str,
    model: str,
    suites: dict[int, TaskSuite],
    config: ChatAgentConfig,
    max_steps: int | None = None,
) -> Table:
    """Unbatched (max batch 1) vs batched (max batch 32) at each concurrency in ``suites``."""
    table = Table(title=f"{title} ({load()} at start)")
    columns = ["concurrency", "episodes", "unbatched steps/s", "batched steps/s"]
    columns += ["batched / unbatched", "mean batch", "prompt tokens from cache"]
    columns += ["prefilled tokens/step", "new tokens/step"]
    for col in columns:
        table.add_column(col, justify="right")
    for c, suite in suites.items():
        one = eval_run(model, 1, suite, c, config, max_steps)
        many = eval_run(model, 32, suite, c, config, max_steps)
        table.add_row(
            str(c),
            str(len(suite.tasks)),
            f"{one['steps/s']:,.2f}",
            f"{many['steps/s']:,.2f}",
            f"{many['steps/s'] / one['steps/s']:.1f}x",
            f"{many['mean batch']:.1f}",
            f"{many['cached']:.0%}",
            f"{many['prefilled']:,.0f}",
            f"{many['tokens/step']:.1f}",
        )
    return table


# ---------------------------------------------------------------------------- generation
def generation_table(model: str, batches: tuple[int, ...], new_tokens: int) -> Table:
    """Tokens/s of direct engine calls (short prompts, no stops) at each batch size."""
    engine = LocalEngine(model, prefix_cache_mb=0)
    topics = ["the sea", "a lighthouse", "trains", "winter", "a garden", "robots", "the moon"]
    prompts = [
        engine.render([{"role": "user", "content": f"Write a long story about {t} ({i})."}], None)
        for i, t in enumerate(topics * 5)
    ]
    engine.generate_batch(prompts[:1], SamplingSpec(max_tokens=4))  # warm up
    table = Table(
        title=f"generation: {new_tokens} new tokens a row, direct engine calls ({load()} at start)"
    )
    for col in ["batch", "seconds", "tokens", "tokens/s", "vs batch 1"]:
        table.add_column(col, justify="right")
    base = None
    for b in batches:
        t0 = time.perf_counter()
        gens = engine.generate_batch(prompts[:b], SamplingSpec(max_tokens=new_tokens))
        elapsed = time.perf_counter() - t0
        tokens = sum(len(g.token_ids) for g in gens)
        rate = tokens / elapsed
        base = base or rate
        table.add_row(str(b), f"{elapsed:.1f}", str(tokens), f"{rate:,.1f}", f"{rate / base:.1f}x")
    engine.close()
    return table


# ---------------------------------------------------------------------------- serve
def _clients(url: str, clients: int, per_client: int, max_tokens: int) -> tuple[float, list, int]:
    """In a process of its own: ``clients`` threads posting chat completions.

    Plain ``httpx`` (what the OpenAI SDK sends, without its ~10 ms of request building and
    response parsing a call), so the clients keep up with the server on a busy two-core machine.
    Connections are set up before the clock starts. Returns (seconds, latencies, tokens).
    """
    import httpx

    latencies: list[float] = []
    tokens = [0]
    lock = threading.Lock()
    ready = threading.Barrier(clients + 1)

    def worker(i: int) -> None:
        with httpx.Client(base_url=url, timeout=600) as http:
            ready.wait()
            for j in range(per_client):
                body = {
                    "model": "m",
                    "max_tokens": max_tokens,
                    "temperature": 0,
                    "messages": [{"role": "user", "content": f"Write a poem about {i * 100 + j}."}],
                }
                t = time.perf_counter()
                r = http.post("/chat/completions", json=body)
                r.raise_for_status()
                with lock:
                    latencies.append(time.perf_counter() - t)
                    tokens[0] += r.json()["usage"]["completion_tokens"]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    ready.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, latencies, tokens[0]


def serve_table(
    model: str, name: str, setups: list[tuple[int, int]], per_client: int, max_tokens: int
) -> Table:
    """`agentgym serve` throughput for each (max batch, concurrent clients) in ``setups``."""
    from agentgym.llm.server import ServerThread, create_app

    title = f"agentgym serve ({name}): {per_client} requests a client, {max_tokens} tokens each"
    table = Table(title=f"{title} ({load()} at start)")
    columns = ["max batch", "clients", "requests/s", "tokens/s", "p50 latency ms"]
    columns += ["p95 latency ms", "mean batch", "requests/s vs first row"]
    for col in columns:
        table.add_column(col, justify="right")
    base = None
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        pool.submit(int).result()  # start the client process before timing anything
        for batch, clients in setups:
            engine = LocalEngine(model, max_batch_size=batch)
            server = ServerThread(create_app(engine, "m"))
            pool.submit(_clients, server.url, 1, 1, max_tokens).result()  # warm up
            before = len(engine.batch_sizes)
            job = pool.submit(_clients, server.url, clients, per_client, max_tokens)
            elapsed, latencies, tokens = job.result()
            batches = engine.batch_sizes[before:]
            server.stop()
            engine.close()
            rps = len(latencies) / elapsed
            base = base or rps
            q = statistics.quantiles(latencies, n=20) if len(latencies) > 1 else latencies * 19
            table.add_row(
                str(batch),
                str(clients),
                f"{rps:,.1f}",
                f"{tokens / elapsed:,.1f}",
                f"{statistics.median(latencies) * 1e3:,.0f}",
                f"{q[18] * 1e3:,.0f}",
                f"{statistics.mean(batches):.1f}",
                f"{rps / base:.1f}x",
            )
    return table


# ---------------------------------------------------------------------------- agent overhead
def agent_overhead_table(steps: int) -> Table:
    """Per-step time of ChatAgent.act with an instant client, against the bare client call."""
    client = ScriptedClient(lambda request: "Thought: easy.\nAction: ask[color=blue]")
    env = agentgym.make("Clarify-v0")
    obs, info = env.reset(seed=0)
    agent = ChatAgent(client, env)
    agent.reset(info)
    t0 = time.perf_counter()
    for _ in range(steps):
        agent.act(obs, info)
    per_act = (time.perf_counter() - t0) / steps
    request = client.requests[-1]
    t0 = time.perf_counter()
    for _ in range(steps):
        client.complete(request)
    per_call = (time.perf_counter() - t0) / steps
    table = Table(title=f"ChatAgent overhead ({steps} steps, history kept, Clarify observations)")
    for col in ["bare client call µs", "ChatAgent.act µs", "agent overhead µs/step"]:
        table.add_column(col, justify="right")
    table.add_row(
        f"{per_call * 1e6:,.0f}", f"{per_act * 1e6:,.0f}", f"{(per_act - per_call) * 1e6:,.0f}"
    )
    return table


# ---------------------------------------------------------------------------- main
def tiny(args: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        model = str(init_model(Path(tmp) / "tiny", TinyModelConfig()))
        console.print(agent_overhead_table(200))
        suite = noop_suite(args.episodes, args.length)
        config = ChatAgentConfig(max_tokens=16, max_format_errors=0)
        title = f"eval of a tiny model: {args.episodes} NoOp episodes x {args.length} steps"
        suites = {c: suite for c in (1, 8, 32)}
        console.print(batching_table(title + ", 16 new tokens a step", model, suites, config))
        setups = [(1, 32), (32, 32)]
        console.print(serve_table(model, "tiny", setups, args.requests, 16))


def smollm2(args: Any) -> None:
    quick = args.quick
    console.print(generation_table("smollm2", (1, 8, 32), 16 if quick else 32))
    clarify = TaskSuite.load("clarify/test")
    steps = 2 if quick else 4
    suites = {c: clarify.filter(limit=max(c, 2)) for c in (1, 8, 32)}
    config = ChatAgentConfig(max_tokens=48, max_format_errors=0)
    title = f"eval of hf:smollm2 on clarify/test, at most {steps} steps an episode"
    console.print(batching_table(title, "smollm2", suites, config, max_steps=steps))
    setups = [(32, 1), (32, 32)]
    console.print(serve_table("smollm2", "smollm2", setups, 2 if quick else 3, 16 if quick else 32))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", choices=["tiny", "smollm2"], default="tiny")
    parser.add_argument("--quick", action="store_true", help="smollm2: fewer steps and tokens")
    parser.add_argument("--episodes", type=int, default=64, help="tiny: NoOp episodes")
    parser.add_argument("--length", type=int, default=4, help="tiny: steps an episode")
    parser.add_argument("--requests", type=int, default=8, help="tiny: requests a serve client")
    parser.add_argument(
        "--threads", type=int, help="torch CPU threads (default: 1 on a busy machine, else all)"
    )
    args = parser.parse_args()
    import torch

    cores = os.cpu_count() or 1
    # OpenMP threads spin at every op's barrier: on cores other processes keep busy, a second
    # thread makes a small model ~10x slower, not faster.
    threads = args.threads or (1 if os.getloadavg()[0] >= cores else cores)
    torch.set_num_threads(threads)
    console.print(f"torch threads: {threads} of {cores} cores; {load()}")
    tiny(args) if args.model == "tiny" else smollm2(args)


if __name__ == "__main__":
    main()
