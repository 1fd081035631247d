"""Per-task agreement of verifiers', Inspect AI's and an `openenv:` env's evaluations with
`agentgym eval`, one greedy model behind `agentgym serve` (the model must be served first, e.g.
`agentgym serve smollm2 --port 8765`). Prints one row per task: success and actions in each
harness, and whether they agree.

    python benchmarks/integrations_agreement.py --base-url http://127.0.0.1:8765/v1 \
        --model smollm2 --suite textarena/GuessTheNumber-v0 --limit 20
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import agentgym
from agentgym.task import TaskSuite

BIN = Path(sys.executable).parent


def ours(args: argparse.Namespace) -> dict[str, tuple[bool, list[str]]]:
    spec = f"openai:{args.model}?base_url={args.base_url}&api_key=unused"
    result = agentgym.evaluate(TaskSuite.load(args.suite).filter(limit=args.limit), spec)
    return {e.task_id: (bool(e.success), [s.action for s in e.steps]) for e in result.new_episodes}


def verifiers_run(args: argparse.Namespace, out: Path) -> dict[str, tuple[bool, list[str]]]:
    from agentgym.integrations.verifiers import vf_eval_command

    env_id = TaskSuite.load(args.suite).tasks[0].env
    command = vf_eval_command(
        str(BIN / "vf-eval"), args.suite, args.limit, args.base_url, args.model, str(out), env_id
    )
    env = {**os.environ, "OPENAI_API_KEY": "unused", "PATH": f"{BIN}:{os.environ['PATH']}"}
    subprocess.run(command, env=env, check=True, capture_output=True, text=True)
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


def inspect_run(args: argparse.Namespace, out: Path) -> dict[str, tuple[bool, list[str]]]:
    from inspect_ai.log import list_eval_logs, read_eval_log

    env = {**os.environ, "AGENTGYM_BASE_URL": args.base_url, "AGENTGYM_API_KEY": "unused"}
    command = [
        str(BIN / "inspect"),
        "eval",
        "agentgym/agentgym_suite",
        "-T",
        f"suite={args.suite}",
        "-T",
        f"limit={args.limit}",
        "--model",
        f"openai-api/agentgym/{args.model}",
        "--max-samples",
        "1",
        "--display",
        "none",
        "--log-dir",
        str(out),
    ]
    subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    log = read_eval_log(list_eval_logs(str(out))[0].name)
    rows = {}
    for sample in log.samples or []:
        meta = sample.scores["env_reward"].metadata or {}
        rows[str(sample.id)] = (bool(meta.get("success")), list(meta.get("actions", [])))
    return rows


def openenv_run(args: argparse.Namespace) -> dict[str, tuple[bool, list[str]]]:
    """``agentgym eval`` on the suite's env served by ``agentgym env serve`` (in this process)."""
    from agentgym.integrations.openenv.server import EnvServerThread, ServeSettings

    server = EnvServerThread(ServeSettings(TaskSuite.load(args.suite).tasks[0].env))
    spec = f"openai:{args.model}?base_url={args.base_url}&api_key=unused"
    try:
        suite = TaskSuite.load(args.suite).filter(limit=args.limit)
        result = agentgym.evaluate(suite, spec, env=f"openenv:{server.url}")
    finally:
        server.stop()
    return {e.task_id: (bool(e.success), [s.action for s in e.steps]) for e in result.new_episodes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--suite", default="textarena/GuessTheNumber-v0")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--only", choices=["verifiers", "inspect", "openenv"], default=None)
    args = parser.parse_args()
    base = ours(args)
    with tempfile.TemporaryDirectory() as tmp:
        others = {}
        if args.only in (None, "verifiers"):
            others["verifiers"] = verifiers_run(args, Path(tmp) / "vf")
        if args.only in (None, "inspect"):
            others["inspect"] = inspect_run(args, Path(tmp) / "inspect")
        if args.only in (None, "openenv"):
            others["openenv"] = openenv_run(args)
    names = list(others)
    print("| task | agentgym eval | " + " | ".join(f"{n} | same actions" for n in names) + " |")
    print("|---|---|" + "---|---|" * len(names))
    agree = dict.fromkeys(names, 0)
    for task_id, (success, actions) in base.items():
        cells = []
        for n in names:
            got = others[n].get(task_id)
            same = got is not None and got == (success, actions)
            agree[n] += same
            cells += ["missing" if got is None else str(got[0]), "yes" if same else "NO"]
        print(f"| {task_id} | {success} | " + " | ".join(cells) + " |")
    for n in names:
        print(
            f"{n}: {agree[n]}/{len(base)} tasks with the same success and actions as agentgym eval"
        )


if __name__ == "__main__":
    main()
