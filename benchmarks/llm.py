"""LLM layer speed with a tiny local model: batched rollouts, `agentgym serve`, ChatAgent overhead.

Run: ``python benchmarks/llm.py`` (builds a tiny model in a temp dir; no downloads). Prints
1. env-steps/s of an eval at concurrency 1, 8, 32, batched engine vs one request at a time;
2. requests/s and p50/p95 latency of ``agentgym serve`` under 32 concurrent OpenAI clients;
3. the ChatAgent's own cost per step, beyond the model call.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

import agentgym
from agentgym.agents.llm import ChatAgent, ChatAgentConfig
from agentgym.llm.clients import ClientOptions, HFClient
from agentgym.llm.tiny import TinyModelConfig, init_model
from agentgym.testing import ScriptedClient, noop_suite

console = Console(width=150)


def eval_steps_per_s(
    model: Path, batch: int, concurrency: int, episodes: int, length: int
) -> float:
    client = HFClient(str(model), ClientOptions(max_batch_size=batch))
    config = ChatAgentConfig(max_tokens=16, max_format_errors=0)
    t0 = time.perf_counter()
    result = agentgym.evaluate(
        noop_suite(episodes, length),
        lambda env: ChatAgent(client, env, config),
        concurrency=concurrency,
    )
    elapsed = time.perf_counter() - t0
    steps = sum(len(e.steps) for e in result.new_episodes)
    assert all(e.status != "error" for e in result.new_episodes)
    return steps / elapsed


def batching_table(model: Path, episodes: int, length: int) -> Table:
    table = Table(
        title=f"eval of a tiny model: {episodes} NoOp episodes x {length} steps, 16 new tokens a step"
    )
    for col in ["concurrency", "unbatched steps/s", "batched steps/s", "batched / unbatched"]:
        table.add_column(col, justify="right")
    for c in (1, 8, 32):
        one = eval_steps_per_s(model, 1, c, episodes, length)
        many = eval_steps_per_s(model, 32, c, episodes, length)
        table.add_row(str(c), f"{one:,.1f}", f"{many:,.1f}", f"{many / one:.1f}x")
    return table


def serve_load(model: Path, batch: int, clients: int, per_client: int) -> tuple[float, list[float]]:
    """Requests/s and latencies of `agentgym serve` (max batch ``batch``) under concurrent clients."""
    import openai

    from agentgym.llm.engine import LocalEngine
    from agentgym.llm.server import ServerThread, create_app

    server = ServerThread(create_app(LocalEngine(model, max_batch_size=batch), "tiny"))
    latencies: list[float] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        sdk = openai.OpenAI(base_url=server.url, api_key="unused")
        for j in range(per_client):
            t = time.perf_counter()
            sdk.chat.completions.create(
                model="tiny",
                max_tokens=16,
                temperature=0,
                messages=[{"role": "user", "content": f"client {i} request {j}"}],
            )
            with lock:
                latencies.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rps = len(latencies) / (time.perf_counter() - t0)
    server.stop()
    return rps, latencies


def serve_table(model: Path, clients: int, per_client: int) -> Table:
    title = f"agentgym serve: {clients} concurrent clients x {per_client} requests, 16 tokens each"
    table = Table(title=title)
    for col in ["max batch", "requests/s", "p50 latency ms", "p95 latency ms", "vs batch 1"]:
        table.add_column(col, justify="right")
    base = None
    for batch in (1, 32):
        rps, latencies = serve_load(model, batch, clients, per_client)
        base = base or rps
        q = statistics.quantiles(latencies, n=20)
        table.add_row(
            str(batch),
            f"{rps:,.1f}",
            f"{statistics.median(latencies) * 1e3:,.0f}",
            f"{q[18] * 1e3:,.0f}",
            f"{rps / base:.1f}x",
        )
    return table


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--length", type=int, default=4)
    parser.add_argument("--requests", type=int, default=4, help="per serve client")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as tmp:
        model = init_model(Path(tmp) / "tiny", TinyModelConfig())
        console.print(agent_overhead_table(200))
        console.print(batching_table(model, args.episodes, args.length))
        console.print(serve_table(model, 32, args.requests))


if __name__ == "__main__":
    main()
