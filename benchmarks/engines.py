"""Generation engines side by side on SmolLM2: the generate path, continuous batching, vLLM.

``python benchmarks/engines.py`` (SmolLM2-135M-Instruct, fp32 on the CPU; ``--threads``, default 2)
prints one table, every ratio against a baseline measured in the same run (the engine's load
seconds first):

1. the agent-shaped workload: 16 episodes x 6 turns, an 800-token prefix shared by all plus 200
   tokens of each episode's own, 16 greedy tokens per turn, then 50 observation tokens appended;
   each turn prompts with the whole history. Its compute limit is the tokens a perfect prefix cache
   computes (each prompt token once, plus every generated token) at the tokens/s of one large
   forward (``--forward-tokens`` tokens, batch 1), measured here;
2. raw decode tokens/s at batch 1, 8 and 32 (32 new tokens from short prompts);
3. ``agentgym eval clarify/test -a hf:smollm2 --limit 20 -c 8`` (in this process, over the
   engine under test; its load is not counted);
4. one RL step of the KBQA demo config (``configs/kbqa_r1_grpo.yaml`` on SmolLM2, with
   ``--rl-tasks`` x ``--rl-group`` episodes, to fit a CPU), with the step's generation seconds
   and, for vLLM rollouts, the logprob gap between the engine and the policy.

Engines: ``before`` is the fallback path (:class:`FallbackEngine`:
``transformers.generate`` behind a dynamic batcher, with its prefix cache), ``after`` the
continuous-batching :class:`LocalEngine` at its default memory budget, ``unbounded`` the same
with a budget nothing reaches (``kv_cache_gb=64``: what the default's sharing must keep up
with), and ``vllm`` (:class:`VLLMEngine`, the same interface)
where vLLM is installed (``VLLM_CPU_OMP_THREADS_BIND=0`` binds it to one core). Greedy outputs of
all engines are compared; the table says whether they agree. ``--skip clarify,rl`` leaves parts
out; ``--episodes/--turns`` shrink the workload on a busy machine (the table states the sizes run).
Every figure is printed as it arrives with the load average, and the table with the last one.
``after@REV`` measures the continuous-batching engine as it was at git revision ``REV`` (this
script's own history from a40781c on, which prints figures as ``label: {cells} unit``), in a
subprocess running that revision's copy of this script with the same flags, so one table compares
a change's before and after; its compute-limit ratio is taken against this run's compute limit.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's agentgym, not an installed copy elsewhere

console = Console(width=160)


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


# ---------------------------------------------------------------------------- engines
def engine_factories(path: str, only: list[str]) -> dict[str, Callable[[], Any]]:
    """name -> a function building that engine (vLLM only where its module imports)."""
    from agentgym.llm.engine import FallbackEngine, LocalEngine

    factories: dict[str, Callable[[], Any]] = {
        "before": lambda: FallbackEngine(path, max_batch_size=32),
        "after": lambda: LocalEngine(path, max_batch_size=32),
        "unbounded": lambda: LocalEngine(path, max_batch_size=32, kv_cache_gb=64),
    }
    from agentgym.llm.engine.vllm import VLLMEngine, vllm_available

    if vllm_available():
        factories["vllm"] = lambda: VLLMEngine(path, max_batch_size=32)
    else:
        console.print("[dim]vllm: skipped (not installed)[/]")
    return {k: v for k, v in factories.items() if not only or k in only}


def at_revision(spec: str, argv: list[str]) -> list[tuple[str, str, dict[str, str]]]:
    """Rows of ``after`` measured by revision ``spec = "after@REV"``'s own benchmark script."""
    root = Path(__file__).resolve().parent.parent
    rev = spec.split("@", 1)[1]
    flags = list(argv)
    for i, a in enumerate(argv):  # every flag but --engines (as "--engines E" or "--engines=E")
        if a.startswith("--engines"):
            flags[i : i + 1 + (a == "--engines")] = [""] * (1 + (a == "--engines"))
    flags = [a for a in flags if a]
    with tempfile.TemporaryDirectory() as tmp:
        tree = subprocess.run(
            ["git", "-C", str(root), "archive", rev], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=tree.stdout, check=True)
        cmd = [sys.executable, f"{tmp}/benchmarks/engines.py", *flags, "--engines", "after"]
        env = {**os.environ, "PYTHONPATH": tmp}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
    if proc.returncode != 0:
        raise RuntimeError(f"{spec} failed: {proc.stderr[-2000:]}")
    rows = []
    for line in proc.stdout.splitlines():
        if m := re.match(r"^(.*): (\{.*\}) (\S+) \(load", line):
            found = ast.literal_eval(m[2])
            cells = {spec: found["after"]} if "after" in found else {}
            if cells and "compute limit" not in m[1]:  # the limit: this process's forward rate
                rows.append((m[1], m[3], cells))
                console.print(f"{m[1]}: {cells} {m[3]} (load {load()})")
    return rows


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
    from agentgym.llm.engine import SamplingSpec

    pool = text_tokens(tokenizer, prefix + episodes * own + episodes * turns * obs)
    shared, rest = pool[:prefix], pool[prefix:]
    histories = [shared + rest[i * own : (i + 1) * own] for i in range(episodes)]
    observations = rest[episodes * own :]
    unique = prefix + episodes * own
    generated, outputs = 0, []
    started = time.perf_counter()
    for turn in range(turns):
        gens = engine.generate_batch(histories, SamplingSpec(max_tokens=new))
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
    from agentgym.llm.engine import SamplingSpec

    prompts = [
        engine.render(
            [{"role": "user", "content": f"Write a long story about a ship ({i})."}], None
        )
        for i in range(batch)
    ]
    engine.generate_batch(prompts[:1], SamplingSpec(max_tokens=2))  # warm
    t0 = time.perf_counter()
    gens = engine.generate_batch(prompts, SamplingSpec(max_tokens=new))
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


def rl_step(name: str, tasks: int, group: int, new_tokens: int) -> dict[str, float]:
    """One GRPO step of the KBQA demo config on SmolLM2 with engine ``name`` (load excluded):
    step and generation seconds, and the engine-vs-policy logprob gap where the trainer logs it."""
    from agentgym.llm.engine import FallbackEngine
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
                f"rollout.max_tokens={new_tokens}",
                f"rollout.engine={'vllm' if name == 'vllm' else 'local'}",
                "env.eval_suite=null",
            ],
        )
        trainer = Trainer(cfg)
        try:
            if name == "before":
                r = cfg.rollout
                trainer._engine = FallbackEngine.from_model(
                    trainer.model,
                    trainer.tokenizer,
                    max_batch_size=r.max_batch_size,
                    prefix_cache_mb=r.prefix_cache_mb,
                )
            _ = trainer.engine  # loaded outside the timing
            t0 = time.perf_counter()
            trainer.run()
            seconds = time.perf_counter() - t0
            row = trainer.history[-1]
        finally:
            trainer.close()
    out = {"s": seconds, "generate_s": float(row.get("generate_s", 0.0))}
    for key in ("logprob_gap_mean", "logprob_gap_max"):
        if key in row:
            out[key] = float(row[key])
    return out


# ---------------------------------------------------------------------------- main
def workload_parser(doc: str | None, threads: int) -> argparse.ArgumentParser:
    """A parser with the workload's size and the torch thread count (shared by engine_time.py)."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    parser.add_argument("--threads", type=int, default=threads)
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--turns", type=int, default=6)
    return parser


def main() -> None:
    parser = workload_parser(__doc__, threads=2)
    parser.add_argument("--prefix", type=int, default=800, help="shared prefix tokens")
    parser.add_argument("--own", type=int, default=200, help="each episode's own tokens")
    parser.add_argument("--decode-tokens", type=int, default=32)
    parser.add_argument("--forward-tokens", type=int, default=512)
    parser.add_argument(
        "--engines",
        default="",
        help="comma-separated subset of before,after,vllm (vllm where installed)",
    )
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
    wanted = list(filter(None, args.engines.split(",")))
    factories = engine_factories(path, wanted)
    names = [n for n in wanted if n in factories or "@" in n] or list(factories)
    rows: list[tuple[str, str, dict[str, str]]] = []
    outputs: dict[str, list[list[int]]] = {}
    rate = None

    def show(label: str, unit: str, cells: dict[str, str]) -> None:
        rows.append((label, unit, cells))
        console.print(f"{label}: {cells} {unit} (load {load()})")

    for name in names:
        if "@" in name:
            rows += at_revision(name, sys.argv[1:])
            continue
        make = factories[name]
        t0 = time.perf_counter()
        engine = make()
        show("engine load", "s", {name: f"{time.perf_counter() - t0:.1f}"})
        tok = engine.tokenizer
        if rate is None and "workload" not in skip and hasattr(engine, "model"):
            rate = forward_rate(engine.model, args.forward_tokens)
            show(
                f"one large forward ({args.forward_tokens} tokens)",
                "tok/s",
                {"compute": f"{rate:.0f}"},
            )
        if "workload" not in skip:
            w = agent_workload(engine, tok, args.episodes, args.turns, args.prefix, args.own)
            outputs[name] = w["outputs"]
            limit = (w["unique"] + w["generated"]) / (rate or float("nan"))
            label = f"agent workload ({args.episodes} x {args.turns} turns, {args.prefix}+{args.own} prompt)"
            show(label, "s", {name: f"{w['s']:.1f}", "compute": f"{limit:.1f}"})
            show("  ... x compute limit", "ratio", {name: f"{w['s'] / limit:.2f}x"})
        if "decode" not in skip:
            for batch in (1, 8, 32):
                tps = raw_decode(engine, tok, batch, args.decode_tokens)
                show(f"raw decode, batch {batch}", "tok/s", {name: f"{tps:.1f}"})
        if "clarify" not in skip:
            c = clarify_eval(engine, args.clarify_limit, 8)
            show(f"Clarify {args.clarify_limit} tasks, -c 8", "s", {name: f"{c['s']:.0f}"})
        engine.close()
        del engine
        if "rl" not in skip:
            r = rl_step(name, args.rl_tasks, args.rl_group, args.rl_tokens)
            label = f"KBQA GRPO step ({args.rl_tasks} x {args.rl_group}, {args.rl_tokens} tok)"
            show(label, "s", {name: f"{r['s']:.0f}"})
            show("  ... of which generation", "s", {name: f"{r['generate_s']:.0f}"})
            for key in ("logprob_gap_mean", "logprob_gap_max"):
                if key in r:
                    show(f"  ... {key} (engine vs policy)", "nats", {name: f"{r[key]:.2g}"})
    if rate:
        rows += limit_ratios(rows, [n for n in names if "@" in n])
    print_table(rows, names, args.threads)
    if len(outputs) > 1:
        first = next(iter(outputs.values()))
        same = {n: o == first for n, o in outputs.items()}
        console.print(f"greedy workload outputs identical to {next(iter(outputs))}: {same}")


def limit_ratios(
    rows: list[tuple[str, str, dict[str, str]]], names: list[str]
) -> list[tuple[str, str, dict[str, str]]]:
    """``... x compute limit`` of engines measured elsewhere, against this run's compute limit."""
    workload = {
        k: v for label, _, c in rows if label.startswith("agent workload") for k, v in c.items()
    }
    if "compute" not in workload:
        return []
    limit = float(workload["compute"])
    ratios = {n: f"{float(workload[n]) / limit:.2f}x" for n in names if n in workload}
    return [("  ... x compute limit", "ratio", ratios)] if ratios else []


def print_table(
    rows: list[tuple[str, str, dict[str, str]]], names: list[str], threads: int
) -> None:
    """One row per measurement, one column per engine, and how many times faster ``after`` is."""
    others = [n for n in names if n != "after"] if "after" in names else []
    table = Table(title=f"engines on SmolLM2, {threads} threads, load average {load()}")
    for col in ["measurement", "unit", "compute", *names, *(f"{n}/after" for n in others)]:
        table.add_column(col)
    merged: dict[tuple[str, str], dict[str, str]] = {}
    for label, unit, cells in rows:
        merged.setdefault((label, unit), {}).update(cells)
    for (label, unit), cells in merged.items():
        ratios = []
        for other in others:
            ratio = ""
            if other in cells and "after" in cells and unit in ("s", "tok/s"):
                b, a = float(cells[other]), float(cells["after"])
                ratio = f"{b / a:.2f}x" if unit == "s" else f"{a / b:.2f}x"
            ratios.append(ratio)
        row = [cells.get(n, "") for n in names]
        table.add_row(label, unit, cells.get("compute", ""), *row, *ratios)
    console.print(table)


if __name__ == "__main__":
    main()
