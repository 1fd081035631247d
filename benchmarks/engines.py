"""Local generation engines, before and after continuous batching, on SmolLM2 (issue 34).

``python benchmarks/engines.py`` (SmolLM2-135M-Instruct, fp32 on the CPU; ``--threads``, default 2)
prints one table, every ratio against a baseline measured in the same run:

1. the agent-shaped workload: 16 episodes x 6 turns, an 800-token prefix shared by all plus 200
   tokens of each episode's own, 16 greedy tokens per turn, then 50 observation tokens appended;
   each turn prompts with the whole history. Its compute limit is the tokens a perfect prefix cache
   computes (each prompt token once, plus every generated token) at the tokens/s of one large
   forward (``--forward-tokens`` tokens, batch 1), measured here;
2. raw decode tokens/s at batch 1, 8 and 32 (32 new tokens from short prompts);
3. ``agentgym eval clarify/test -a hf:smollm2 --limit 20 -c 8`` (in this process);
4. one RL step of the KBQA demo config (``configs/kbqa_r1_grpo.yaml`` on SmolLM2, with
   ``--rl-tasks`` x ``--rl-group`` episodes, to fit a CPU).

Engines: ``before`` is today's path up to issue 34 (``LocalEngine(mode="generate")``:
``transformers.generate`` behind a dynamic batcher, with its prefix cache), ``after`` the
continuous-batching :class:`LocalEngine`, and ``vllm`` where ``agentgym.llm.vllm_engine`` imports
(same interface). Greedy outputs of all engines are compared; the table says whether they agree.
``--skip clarify,rl`` leaves parts out; ``--episodes/--turns`` shrink the workload on a busy
machine (the table states the sizes run). The machine's load average is printed with the table.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console(width=160)


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


# ---------------------------------------------------------------------------- engines
def engine_factories(path: str, only: list[str]) -> dict[str, Callable[[], Any]]:
    """name -> a function building that engine (vLLM only where its module imports)."""
    from agentgym.llm.engine import LocalEngine

    factories: dict[str, Callable[[], Any]] = {
        "before": lambda: LocalEngine(path, max_batch_size=32, mode="generate"),
        "after": lambda: LocalEngine(path, max_batch_size=32),
    }
    try:
        from agentgym.llm.vllm_engine import VLLMEngine  # type: ignore[import-not-found]

        factories["vllm"] = lambda: VLLMEngine(path, max_batch_size=32)
    except ImportError as e:
        console.print(f"[dim]vllm: skipped ({e})[/]")
    return {k: v for k, v in factories.items() if not only or k in only}


# ---------------------------------------------------------------------------- workload
def text_tokens(tokenizer: Any, n: int) -> list[int]:
    """``n`` token ids of real English (the project's docs, repeated if need be)."""
    root = Path(__file__).resolve().parent.parent
    text = "\n".join(p.read_text() for p in sorted((root / "docs").glob("*.md")))
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    while len(ids) < n:
        ids += ids
    return ids[:n]


def agent_workload(
    engine: Any, tokenizer: Any, episodes: int, turns: int, prefix: int = 800, own: int = 200,
    new: int = 16, obs: int = 50,
) -> dict[str, Any]:  # fmt: skip
    """Run the workload; seconds, generated and uniquely-prefilled tokens, and the outputs."""
    pool = text_tokens(tokenizer, prefix + episodes * own + episodes * turns * obs)
    shared, rest = pool[:prefix], pool[prefix:]
    histories = [shared + rest[i * own : (i + 1) * own] for i in range(episodes)]
    observations = rest[episodes * own :]
    unique = prefix + episodes * own
    generated, outputs = 0, []
    started = time.perf_counter()
    for turn in range(turns):
        gens = engine.generate_batch(histories, max_new_tokens=new)
        for i, g in enumerate(gens):
            generated += len(g.token_ids)
            outputs.append(g.token_ids)
            if turn < turns - 1:
                start = (i * turns + turn) * obs
                histories[i] = histories[i] + g.token_ids + observations[start : start + obs]
                unique += len(g.token_ids) + obs
    seconds = time.perf_counter() - started
    return {"s": seconds, "generated": generated, "unique": unique, "outputs": outputs}


def forward_rate(model: Any, tokens: int) -> float:
    """Tokens/s of one large forward (batch 1, ``tokens`` positions): the compute rate."""
    import torch

    ids = torch.arange(100, 100 + tokens)[None]
    best = float("inf")
    with torch.inference_mode():
        for _ in range(2):
            t0 = time.perf_counter()
            model(ids, logits_to_keep=1)
            best = min(best, time.perf_counter() - t0)
    return tokens / best


def raw_decode(engine: Any, tokenizer: Any, batch: int, new: int = 32) -> float:
    """Generated tokens/s at ``batch`` rows (short prompts, ``new`` tokens each)."""
    prompts = [
        engine.render(
            [{"role": "user", "content": f"Write a long story about a ship ({i})."}], None
        )
        for i in range(batch)
    ]
    t0 = time.perf_counter()
    gens = engine.generate_batch(prompts, max_new_tokens=new)
    return sum(len(g.token_ids) for g in gens) / (time.perf_counter() - t0)


def clarify_eval(engine: Any, limit: int, concurrency: int) -> dict[str, float]:
    """``agentgym eval clarify/test -a hf:smollm2 --limit N -c C`` with ``engine`` underneath."""
    from agentgym.chat_agent import ChatAgent
    from agentgym.llm.clients import ClientOptions, HFClient
    from agentgym.runner import evaluate
    from agentgym.task import TaskSuite

    client = HFClient.__new__(HFClient)
    HFClient.__init__(client, "smollm2", ClientOptions())  # the real client ...
    client.engine.close()
    client.engine = engine  # ... over the engine under test
    suite = TaskSuite.load("clarify/test").filter((), limit)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        result = evaluate(
            suite,
            lambda env: ChatAgent(client, env),
            db=Path(tmp) / "runs.db",
            concurrency=concurrency,
        )
        seconds = time.perf_counter() - t0
    episodes = result.episode_rows() if hasattr(result, "episode_rows") else []
    return {"s": seconds, "episodes": float(len(episodes))}


def rl_step(mode: str, tasks: int, group: int, new_tokens: int) -> float:
    """Seconds of one GRPO step of the KBQA demo config on SmolLM2 with the given engine mode."""
    from agentgym.llm.engine import LocalEngine
    from agentgym.llm.models import resolve_model_path
    from agentgym.train.config import load_config
    from agentgym.train.trainer import Trainer

    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(
            root / "configs" / "kbqa_r1_grpo.yaml",
            [
                f"model.path={resolve_model_path('smollm2')}",
                "steps=1",
                f"out_dir={tmp}",
                f"rollout.tasks_per_step={tasks}",
                f"rollout.group_size={group}",
                f"rollout.max_new_tokens={new_tokens}",
                "env.eval_suite=null",
            ],
        )
        trainer = Trainer(cfg)
        r = cfg.rollout
        trainer._engine = LocalEngine.from_model(
            trainer.model,
            trainer.tokenizer,
            max_batch_size=r.max_batch_size,
            prefix_cache_mb=r.prefix_cache_mb,
            mode=mode,
        )
        t0 = time.perf_counter()
        trainer.run()
        return time.perf_counter() - t0


# ---------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--prefix", type=int, default=800, help="shared prefix tokens")
    parser.add_argument("--own", type=int, default=200, help="each episode's own tokens")
    parser.add_argument("--decode-tokens", type=int, default=32)
    parser.add_argument("--forward-tokens", type=int, default=512)
    parser.add_argument("--engines", default="", help="comma-separated subset of before,after,vllm")
    parser.add_argument("--skip", default="", help="comma-separated: workload,decode,clarify,rl")
    parser.add_argument("--clarify-limit", type=int, default=20)
    parser.add_argument("--rl-tasks", type=int, default=4)
    parser.add_argument("--rl-group", type=int, default=2)
    parser.add_argument("--rl-tokens", type=int, default=64)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from agentgym.llm.models import resolve_model_path

    path = resolve_model_path("smollm2")
    skip = set(filter(None, args.skip.split(",")))
    factories = engine_factories(path, list(filter(None, args.engines.split(","))))
    rows: list[tuple[str, str, dict[str, str]]] = []
    outputs: dict[str, list[list[int]]] = {}
    rate = None
    for name, make in factories.items():
        engine = make()
        tok = engine.tokenizer
        if rate is None and "workload" not in skip:
            rate = forward_rate(engine.model, args.forward_tokens)
            rows.append(("one large forward", "tok/s", {"compute": f"{rate:.0f}"}))
        if "workload" not in skip:
            w = agent_workload(engine, tok, args.episodes, args.turns, args.prefix, args.own)
            outputs[name] = w["outputs"]
            limit = (w["unique"] + w["generated"]) / (rate or 1)
            rows.append(
                (
                    f"agent workload ({args.episodes} x {args.turns} turns,"
                    f" {args.prefix}+{args.own} prompt)",
                    "s",
                    {name: f"{w['s']:.1f}", "compute": f"{limit:.1f}"},
                )
            )
            rows.append(("  ... x compute limit", "ratio", {name: f"{w['s'] / limit:.2f}x"}))
            console.print(f"{name}: workload {w['s']:.1f} s (load {load()})")
        if "decode" not in skip:
            for batch in (1, 8, 32):
                tps = raw_decode(engine, tok, batch, args.decode_tokens)
                rows.append((f"raw decode, batch {batch}", "tok/s", {name: f"{tps:.1f}"}))
                console.print(f"{name}: decode b{batch} {tps:.1f} tok/s (load {load()})")
        if "clarify" not in skip and name != "vllm":
            c = clarify_eval(engine, args.clarify_limit, 8)
            rows.append((f"Clarify {args.clarify_limit} tasks, -c 8", "s", {name: f"{c['s']:.0f}"}))
            console.print(f"{name}: clarify {c['s']:.0f} s (load {load()})")
        close = getattr(engine, "close", None)
        if close:
            close()
        del engine
        if "rl" not in skip and name in ("before", "after"):
            mode = "generate" if name == "before" else "auto"
            s = rl_step(mode, args.rl_tasks, args.rl_group, args.rl_tokens)
            label = f"KBQA GRPO step ({args.rl_tasks} x {args.rl_group}, {args.rl_tokens} tok)"
            rows.append((label, "s", {name: f"{s:.0f}"}))
            console.print(f"{name}: rl step {s:.0f} s (load {load()})")
    names = list(factories)
    table = Table(title=f"engines on SmolLM2, {args.threads} threads, load average {load()}")
    for col in ["measurement", "unit", "compute", *names, "before/after"]:
        table.add_column(col)
    merged: dict[tuple[str, str], dict[str, str]] = {}
    for label, unit, cells in rows:
        merged.setdefault((label, unit), {}).update(cells)
    for (label, unit), cells in merged.items():
        ratio = ""
        if "before" in cells and "after" in cells and unit in ("s", "tok/s"):
            b, a = float(cells["before"]), float(cells["after"])
            ratio = f"{b / a:.2f}x" if unit == "s" else f"{a / b:.2f}x"
        table.add_row(
            label, unit, cells.get("compute", ""), *[cells.get(n, "") for n in names], ratio
        )
    console.print(table)
    if len(outputs) > 1:
        first = next(iter(outputs.values()))
        same = {n: o == first for n, o in outputs.items()}
        console.print(f"greedy workload outputs identical to {next(iter(outputs))}: {same}")


if __name__ == "__main__":
    main()
