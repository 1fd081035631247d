"""Per-task agreement of verifiers', Inspect AI's, an `openenv:` env's and TRL's rollout
evaluations with `agentgym eval`, one greedy model behind `agentgym serve` (the model must be
served first, e.g. `agentgym serve smollm2 --port 8765`; TRL generates with the same checkpoint
loaded into its `GRPOTrainer`). Prints one row per task (success and actions in each harness,
and whether they agree) and, per suite, one summary row: tasks, and per harness how many agree.

    python benchmarks/integrations_agreement.py --base-url http://127.0.0.1:8765/v1 \
        --model smollm2 --suite textarena/GuessTheNumber-v0 --limit 20
    python benchmarks/integrations_agreement.py --base-url http://127.0.0.1:8765/v1 \
        --suite clarify/test --suite household/valid_seen --limit 10 --max-steps 4

`--max-steps` caps every episode at the same number of actions in every harness (`agentgym
eval`'s max_steps, Inspect's and verifiers' taskset `max_steps`, TRL's `max_turns`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import agentgym
from agentgym.task import TaskSuite

BIN = Path(sys.executable).parent
HARNESSES = ("verifiers", "inspect", "openenv", "trl")
Runs = dict[str, tuple[bool, list[str]]]
"""Each task's (success, the actions its env received)."""


def _suite(args: argparse.Namespace, name: str) -> TaskSuite:
    return TaskSuite.load(name).filter(limit=args.limit)


def _evaluate(args: argparse.Namespace, name: str, env: str | None = None) -> Runs:
    spec = f"openai:{args.model}?base_url={args.base_url}&api_key=unused"
    result = agentgym.evaluate(_suite(args, name), spec, env=env, max_steps=args.max_steps)
    return {e.task_id: (bool(e.success), [s.action for s in e.steps]) for e in result.new_episodes}


def ours(args: argparse.Namespace, name: str) -> Runs:
    return _evaluate(args, name)


def verifiers_run(args: argparse.Namespace, name: str, out: Path) -> Runs:
    from agentgym.integrations.verifiers import vf_eval_command

    env_id = TaskSuite.load(name).tasks[0].env
    command = vf_eval_command(
        str(BIN / "vf-eval"), name, args.limit, args.base_url, args.model, str(out), env_id,
        max_steps=args.max_steps,
    )  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": "unused", "PATH": f"{BIN}:{os.environ['PATH']}"}
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"vf-eval failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    rows = {}
    for path in out.rglob("traces.jsonl"):
        for line in path.read_text().splitlines():
            episode = json.loads(line)
            for trace in episode.get("traces", [episode]):
                info = trace.get("info", {}).get("agentgym") or {}
                success = (trace.get("rewards", {}).get("success") or {}).get("score", 0.0)
                if info:
                    rows[info["task_id"]] = (success == 1.0, info["actions"])
    return rows


def inspect_run(args: argparse.Namespace, name: str, out: Path) -> Runs:
    from inspect_ai.log import list_eval_logs, read_eval_log

    env = {**os.environ, "AGENTGYM_BASE_URL": args.base_url, "AGENTGYM_API_KEY": "unused"}
    command = [str(BIN / "inspect"), "eval", "agentgym/agentgym_suite", "-T", f"suite={name}",
               "-T", f"limit={args.limit}", "--model", f"openai-api/agentgym/{args.model}",
               "--max-samples", "1", "--display", "none", "--log-dir", str(out)]  # fmt: skip
    if args.max_steps is not None:
        command += ["-T", f"max_steps={args.max_steps}"]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"inspect eval failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    log = read_eval_log(list_eval_logs(str(out))[0].name)
    rows = {}
    for sample in log.samples or []:
        meta = sample.scores["env_reward"].metadata or {}
        rows[str(sample.id)] = (bool(meta.get("success")), list(meta.get("actions", [])))
    return rows


def openenv_run(args: argparse.Namespace, name: str) -> Runs:
    """``agentgym eval`` on the suite's env served by ``agentgym env serve`` (in this process)."""
    from agentgym.integrations.openenv.server import EnvServerThread, ServeSettings

    server = EnvServerThread(ServeSettings(TaskSuite.load(name).tasks[0].env))
    try:
        return _evaluate(args, name, env=f"openenv:{server.url}")
    finally:
        server.stop()


def trl_run(args: argparse.Namespace, name: str, out: Path) -> Runs:
    """TRL's rollout path: a real ``GRPOTrainer`` (:func:`agentgym.integrations.trl.grpo_trainer`)
    on the served checkpoint, greedy by TRL's own ``generation_kwargs``, its ``rollout_func``
    called as TRL calls it, one task per call (one sequence per generation batch, as ``agentgym
    serve`` answers one request at a time: no padding)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from agentgym.integrations.trl import grpo_trainer
    from agentgym.llm.models import resolve_model_path

    path = resolve_model_path(args.trl_model or args.model)
    suite = _suite(args, name)
    config = GRPOConfig(
        output_dir=str(out), per_device_train_batch_size=2, num_generations=2, max_steps=1,
        max_completion_length=args.trl_budget, use_cpu=True, bf16=False, report_to=[],
        save_strategy="no", seed=0, beta=0.0, generation_kwargs={"do_sample": False},
    )  # fmt: skip
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    trainer = grpo_trainer(
        model, suite.tasks[0].env, config, suite=suite,
        max_turns=args.max_steps or 10_000, processing_class=AutoTokenizer.from_pretrained(path),
    )  # fmt: skip
    rows: Runs = {}
    for task in suite.tasks:
        trainer.rollout_func([task.id], trainer)  # TRL's call: the dataset's prompt is the task id
        [episode] = trainer.rollout_func.episodes
        rows[task.id] = (bool(episode.success), episode.actions)
    return rows


def play_suite(args: argparse.Namespace, name: str, tmp: Path) -> tuple[Runs, dict[str, Runs]]:
    base = ours(args, name)
    others: dict[str, Runs] = {}
    for harness in args.harness or HARNESSES:
        out = tmp / name.replace("/", "_") / harness
        try:
            if harness == "verifiers":
                others[harness] = verifiers_run(args, name, out)
            elif harness == "inspect":
                others[harness] = inspect_run(args, name, out)
            elif harness == "openenv":
                others[harness] = openenv_run(args, name)
            else:
                others[harness] = trl_run(args, name, out)
        except Exception as e:  # the other harnesses still run; its tasks show as missing
            print(f"{name}: {harness} failed: {e!r}", file=sys.stderr, flush=True)
            others[harness] = {}
    return base, others


def agreement(base: Runs, others: dict[str, Runs]) -> dict[str, Any]:
    """Per task, each harness's success and whether its success and actions match eval's."""
    rows = []
    for task_id, (success, actions) in base.items():
        cells = {}
        for harness, runs in others.items():
            got = runs.get(task_id)
            cells[harness] = {
                "success": None if got is None else got[0],
                "same": got is not None and got == (success, actions),
                "actions": None if got is None else got[1],
            }
        rows.append({"task": task_id, "success": success, "actions": actions, "harness": cells})
    counts = {h: sum(r["harness"][h]["same"] for r in rows) for h in others}
    return {"tasks": len(rows), "agree": counts, "rows": rows}


def print_suite(name: str, result: dict[str, Any]) -> None:
    names = list(result["agree"])
    print(f"\n## {name}\n")
    print("| task | agentgym eval | " + " | ".join(f"{n} | same actions" for n in names) + " |")
    print("|---|---|" + "---|---|" * len(names))
    for row in result["rows"]:
        cells = []
        for n in names:
            cell = row["harness"][n]
            got = "missing" if cell["success"] is None else str(cell["success"])
            cells += [got, "yes" if cell["same"] else "NO"]
        print(f"| {row['task']} | {row['success']} | " + " | ".join(cells) + " |")
    for n in names:
        print(
            f"{n}: {result['agree'][n]}/{result['tasks']} tasks with the same success and actions"
        )


def print_summary(results: dict[str, dict[str, Any]], max_steps: int | None) -> None:
    names = list(next(iter(results.values()))["agree"])
    print(f"\n## Summary (max steps: {max_steps or 'none'})\n")
    print("| suite | tasks | eval successes | " + " | ".join(names) + " |")
    print("|---|---:|---:|" + "---:|" * len(names))
    for suite, result in results.items():
        wins = sum(r["success"] for r in result["rows"])
        counts = " | ".join(f"{result['agree'][n]}/{result['tasks']}" for n in names)
        print(f"| {suite} | {result['tasks']} | {wins} | {counts} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--suite", action="append", help="repeat for several suites")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--max-steps", type=int, default=None, help="actions per episode, at most")
    parser.add_argument("--harness", action="append", choices=HARNESSES, help="default: all")
    parser.add_argument("--trl-model", default=None, help="TRL's checkpoint (default: --model's)")
    parser.add_argument("--trl-budget", type=int, default=7000, help="max_completion_length")
    parser.add_argument("--json", type=Path, default=None, help="write every row here too")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.suite or ["textarena/GuessTheNumber-v0"]:
            results[name] = agreement(*play_suite(args, name, Path(tmp)))
            print_suite(name, results[name])
            if args.json is not None:
                args.json.write_text(json.dumps({"max_steps": args.max_steps} | results, indent=1))
    print_summary(results, args.max_steps)


if __name__ == "__main__":
    main()
