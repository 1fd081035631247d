"""The episode loops at this tree against another revision, measured in the same run.

Three loops play episodes and all record them through ``Episode.record_step``: ``agentgym eval``'s
rollout, the trainer's batched rollouts and a harness program. This script times the first two
(the harness's cost is its program's) on this tree and on ``--against`` (checked out into a
temporary git worktree), alternating the two ``--repeats`` times in fresh processes, and prints
the medians and their ratio. Rates are per CPU second of the measuring process (one torch
thread), not of wall time, so other jobs on a shared machine move them less:

- eval: the expert through ``agentgym.rollout.rollout`` on NoOp tasks of 200 steps (the env
  costs nothing, so the loop and its recording are all that is timed) and on Household
  valid_unseen tasks (a real env), in steps per CPU second, after one untimed pass;
- training: ``agentgym.train.rollout.collect`` with a tiny model on Clarify (16 episodes of at
  most 6 turns), in episodes per CPU second.

    python benchmarks/episode_loop.py --against 9ee01ef   # the loops before the shared record
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"agentgym.envs": "envs", "agentgym.agents": "agents", "agentgym.sandbox": "sandbox",
            "agentgym.tasks": "tasks"}  # fmt: skip
"""pyproject's package-dir: where a tree keeps the subpackages an install maps into agentgym."""


def import_tree(root: Path) -> None:
    """Import ``agentgym`` from ``root`` with its mapped subpackages, as an install would."""
    import importlib.util

    sys.path.insert(0, str(root))
    import agentgym

    assert Path(agentgym.__file__).is_relative_to(root), agentgym.__file__
    for name, folder in PACKAGES.items():
        spec = importlib.util.spec_from_file_location(
            name, root / folder / "__init__.py", submodule_search_locations=[str(root / folder)]
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


def measure() -> dict[str, float]:
    """Rates of this process's tree (imported by :func:`import_tree`)."""
    import torch

    import agentgym
    from agentgym.agent import ExpertAgent
    from agentgym.rollout import rollout
    from agentgym.task import TaskSuite
    from agentgym.testing.noop import noop_suite

    torch.set_num_threads(1)
    out: dict[str, float] = {}
    for name, env_id, tasks in (
        ("eval NoOp steps/CPU s", "NoOp-v0", noop_suite(20, length=200).tasks),
        ("eval Household steps/CPU s", "agentgym/Household-v0",
         TaskSuite.load("household/valid_unseen").tasks[:20]),
    ):  # fmt: skip
        env = agentgym.make(env_id)
        for i, task in enumerate(tasks):  # warm-up: first-use costs (planning caches) left out
            rollout(env, ExpertAgent(env), task, seed=i)
        started, steps = time.process_time(), 0
        for i, task in enumerate(tasks):
            steps += rollout(env, ExpertAgent(env), task, seed=i).n_steps
        out[name] = steps / (time.process_time() - started)
    out["train collect episodes/CPU s"] = _collect_rate()
    return out


def _collect_rate() -> float:
    import torch

    from agentgym.llm.engine import load_engine
    from agentgym.llm.tiny import TinyModelConfig, init_model
    from agentgym.task import TaskSuite
    from agentgym.train import rollout as train_rollout
    from agentgym.train.chat import ChatFormat
    from agentgym.train.envpool import LocalEnvPool
    from agentgym.train.policy import load_model, load_tokenizer

    folder = init_model(Path(tempfile.mkdtemp(prefix="episode-loop-")) / "tiny", TinyModelConfig())
    torch.manual_seed(0)
    model, tok = load_model(folder), load_tokenizer(folder)
    engine = load_engine("local", model, 16, tokenizer=tok)
    chat = ChatFormat(tok, system_prompt=False)
    tasks = TaskSuite.load("clarify/train").tasks[:4]
    jobs = [train_rollout.Job(t, t.id, k, k) for t in tasks for k in range(4)]
    limits = _limits(train_rollout)
    pool = LocalEnvPool("Clarify-v0")
    train_rollout.collect(engine, chat, pool, jobs, *limits, seed=0)  # warm-up
    started = time.process_time()
    rounds = 3
    for r in range(rounds):
        train_rollout.collect(engine, chat, pool, jobs, *limits, seed=r)
    return rounds * len(jobs) / (time.process_time() - started)


def _limits(train_rollout: Any) -> tuple[Any, ...]:
    """``collect``'s arguments for six turns of eight tokens sampled at temperature 1 with no
    stop string, in the revision's own terms (a ``Sampling`` before the one sampling spec)."""
    if hasattr(train_rollout, "Sampling"):
        return (train_rollout.Sampling(max_turns=6, max_new_tokens=8, temperature=1.0),)
    from agentgym.llm.sampling import SamplingSpec
    from agentgym.train.config import RolloutConfig

    return RolloutConfig(max_turns=6), SamplingSpec(max_tokens=8, temperature=1.0, stop=())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="the git revision to compare with (required)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        import_tree(args.measure)
        print(json.dumps(measure()))
        return
    if args.against is None:
        parser.error("--against REV is required")

    base = Path(tempfile.mkdtemp(prefix="episode-loop-base-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base),
                    args.against], check=True)  # fmt: skip
    runs: dict[str, list[dict[str, float]]] = {"this tree": [], args.against: []}
    try:
        for _ in range(args.repeats):
            for label, tree in (("this tree", ROOT), (args.against, base)):
                cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", str(tree)]
                env = {**os.environ, "OMP_NUM_THREADS": "1"}
                done = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if done.returncode != 0:
                    raise SystemExit(f"{label} failed:\n{done.stderr[-3000:]}")
                runs[label].append(json.loads(done.stdout.splitlines()[-1]))
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)])
    print(f"| loop (median of {args.repeats}) | this tree | {args.against} | ratio |")
    print("|---|---:|---:|---:|")
    for metric in runs["this tree"][0]:
        ours = statistics.median(r[metric] for r in runs["this tree"])
        theirs = statistics.median(r[metric] for r in runs[args.against])
        print(f"| {metric} | {ours:,.1f} | {theirs:,.1f} | {ours / theirs:.3f}x |")


if __name__ == "__main__":
    main()
