"""Where LocalEngine's time goes on the agent workload, and what reading a shared prefix once saves.

``python benchmarks/engine_time.py --threads 1`` runs ``benchmarks/engines.py``'s agent workload
(16 episodes x 6 turns, 800-token shared prefix + 200 own, 16 greedy tokens a turn) on SmolLM2
with timers around the runner's forward and its two attention paths, and prints seconds in
decode-only steps, in steps that prefill, in decode attention, in prefill attention and outside
the forward (sampling, scheduling, prefix blocks), next to what the compute limit allows each
(tokens at one large forward's tokens/s). ``--repeat N`` alternates decode attention with the
shared prefix read once (``share_prefix``) and read per row, N times each, in this one process,
so the two are compared under the same load.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engines import agent_workload, forward_rate, load, workload_parser  # noqa: E402


def timed(engine: Any) -> dict[str, float]:
    """Wrap the engine's runner so every forward and attention call adds to the returned totals."""
    from agentgym.llm.engine import model_runner

    totals: dict[str, float] = defaultdict(float)
    forward = engine.runner.forward

    def step(chunks: list[Any], cache: Any, shared: int = 0) -> Any:
        t0 = time.perf_counter()
        out = forward(chunks, cache, shared)
        prefill = sum(len(c.ids) for c in chunks if len(c.ids) > 1)
        totals["prefill steps" if prefill else "decode steps"] += time.perf_counter() - t0
        totals["prefill tokens"] += prefill
        return out

    def wrap(owner: Any, name: str, key: str) -> None:
        inner = getattr(owner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            out = inner(*args, **kwargs)
            totals[key] += time.perf_counter() - t0
            return out

        setattr(owner, name, call)

    engine.runner.forward = step
    wrap(model_runner._Plan, "_decode", "decode attention")
    wrap(model_runner.F, "scaled_dot_product_attention", "prefill attention")
    return totals


def main() -> None:
    parser = workload_parser(__doc__, threads=1)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from agentgym.llm.engine import LocalEngine

    engine = LocalEngine("smollm2", max_batch_size=32)
    rate = forward_rate(engine.model, 512)
    totals = timed(engine)
    outputs = {}
    for rep in range(args.repeat):
        for share in (True, False):
            engine.clear_prefix_cache()
            engine.runner.share_prefix = share
            totals.clear()
            w = agent_workload(engine, engine.tokenizer, args.episodes, args.turns)
            outputs[share] = w["outputs"]
            inside = totals["prefill steps"] + totals["decode steps"]
            limit = (w["unique"] + w["generated"]) / rate
            print(
                f"[{rep}] share_prefix={share}: workload {w['s']:.1f} s, compute limit "
                f"{limit:.1f} s ({w['s'] / limit:.2f}x; {rate:.0f} tok/s), load {load()}"
            )
            for key in ("prefill steps", "prefill attention", "decode steps", "decode attention"):
                print(f"    {key}: {totals[key]:.1f} s")
            print(f"    outside the forward: {w['s'] - inside:.1f} s")
            print(
                f"    at the compute rate: {totals['prefill tokens']:.0f} prefill tokens "
                f"{totals['prefill tokens'] / rate:.1f} s, {w['generated']} decoded tokens "
                f"{w['generated'] / rate:.1f} s"
            )
    print(f"greedy outputs identical with and without: {outputs[True] == outputs[False]}")


if __name__ == "__main__":
    main()
