"""Deterministic generator of the ``tooluse`` task suites from the shipped tau2-bench/tau-bench data.

    python -m agentgym.envs.tooluse.generate [--out tasks/tooluse]

Suites: ``retail-train``/``retail-test`` and ``airline-train``/``airline-test`` (tau2-bench's
own splits), ``mock`` (tau2-bench's 10 mock tasks), ``telecom-train``/``telecom-test`` (74/40,
tau2's base split), ``telecom-small`` (20) and ``telecom-full`` (all 2,285 of ``tasks.json``),
``tau-bench-retail-test`` (115) and ``tau-bench-retail-dev`` (20) (tau-bench v1); and
``tasks/bfcl/{simple,multiple,parallel}`` (BFCL v4: 400, 200, 200). Tasks are converted, never
edited.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
from pathlib import Path
from typing import Any

from agentgym.envs.tooluse.data import DATA, read_json, read_jsonl
from agentgym.envs.tooluse.reward import gold_world, tau2_reward, tau_bench_reward
from agentgym.envs.tooluse.tasks import TauConfig, TauGold, from_tau2, from_tau_bench
from agentgym.envs.tooluse.toolkit import ToolKind
from agentgym.envs.tooluse.world import World, get_domain
from agentgym.task import Task, suite_bytes, write_manifest, write_tasks

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV_IDS = {
    "retail": "agentgym/TauRetail-v0",
    "airline": "agentgym/TauAirline-v0",
    "mock": "agentgym/TauMock-v0",
    "telecom": "agentgym/TauTelecom-v0",
    "tau_bench_retail": "agentgym/TauBenchRetail-v0",
}
INSTRUCTION = (
    "Serve the customer who contacts you, using the {domain} tools under the {domain} policy."
)


INACTION_TAG = "inaction-succeeds"
ACTION_TAG = "needs-action"
INACTION_NOTE = (
    "Per suite, the tasks an episode that does nothing (the agent greets, the user leaves) "
    "solves under the benchmark's own grading: their correct outcome is the unchanged database "
    "and nothing has to be said (tau2 grades them so). They are tagged 'inaction-succeeds' and "
    "every other task 'needs-action', so `agentgym report` shows success on each group apart."
)


def inaction_succeeds(config: TauConfig, gold: TauGold) -> bool:
    """Whether the benchmark's grader gives reward 1 to an episode with no action at all."""
    domain = get_domain(config.domain)
    world = World(domain)
    world.apply_initial_state(config.initial_state)
    reference = gold_world(domain, config, gold)
    if domain.style == "tau_bench":
        return tau_bench_reward(world, reference, gold, []).reward == 1.0
    return tau2_reward(world, reference, gold, [], [], []).reward == 1.0


def _task(task_id: str, split: str, config: TauConfig, gold: TauGold, tags: list[str]) -> Task:
    domain = config.domain
    tags = [*tags, INACTION_TAG if inaction_succeeds(config, gold) else ACTION_TAG]
    return Task(
        id=task_id,
        env=ENV_IDS[domain],
        split=split,
        instruction=INSTRUCTION.format(domain=domain.replace("tau_bench_", "")),
        config=config.model_dump(exclude_defaults=True),
        gold=gold.model_dump(exclude_defaults=True),
        tags=tags,
        difficulty=len(gold.actions or []),
    )


def tau2_suites(domain: str) -> dict[str, list[Task]]:
    """tau2-bench tasks of one domain, by split (the domain's ``split_tasks.json``)."""
    raw = {t["id"]: t for t in read_json(f"tau2/{domain}/tasks.json")}
    splits: dict[str, list[str]] = read_json(f"tau2/{domain}/split_tasks.json")
    wanted = WANTED_SPLITS.get(domain, {"train": "train", "test": "test"})
    suites = {}
    for split, suite in wanted.items():
        tasks = []
        for task_id in splits[split]:
            config, gold = from_tau2(raw[task_id], domain)
            tags = ["tau2", domain, *([] if gold.actions is None else _write_tag(gold, domain))]
            tasks.append(_task(f"tau2-{domain}-{task_id}", split, config, gold, tags))
        name = suite if domain == "mock" else f"{domain}-{suite}"
        suites[name] = tasks
    return suites


WANTED_SPLITS = {
    "mock": {"base": "mock"},
    "telecom": {"train": "train", "test": "test", "small": "small", "full": "full"},
}
"""Splits of ``split_tasks.json`` turned into suites, per domain (others: train and test)."""


def _write_tag(gold: TauGold, domain: str = "retail") -> list[str]:
    """``write`` when some gold action may change a database (either side), else ``read-only``."""
    d = get_domain(domain)
    kits = {"assistant": d.toolkit, "user": d.user_toolkit}
    has_write = any(
        (kit := kits[a.requestor]) is not None and kit.kind(a.name) == ToolKind.WRITE
        for a in gold.actions or []
    )
    return ["write" if has_write else "read-only"]


def tau_bench_suites() -> dict[str, list[Task]]:
    """tau-bench v1 retail tasks (test and dev), on v1's own data."""
    suites = {}
    for split in ("test", "dev"):
        tasks = []
        for i, raw in enumerate(read_json(f"tau_bench/retail/tasks_{split}.json")):
            config, gold = from_tau_bench(raw)
            tags = [
                "tau-bench",
                "retail",
                *_write_tag(gold, "tau_bench_retail"),
                *(["outputs"] if gold.outputs else []),
            ]
            tasks.append(_task(f"tau-bench-retail-{split}-{i:03d}", split, config, gold, tags))
        suites[f"tau-bench-retail-{split}"] = tasks
    return suites


BFCL_FILES = {
    "simple": "BFCL_v4_simple_python",
    "multiple": "BFCL_v4_multiple",
    "parallel": "BFCL_v4_parallel",
}


def bfcl_suites() -> dict[str, list[Task]]:
    """BFCL v4 simple (Python), multiple and parallel, with their possible answers."""
    suites = {}
    for category, stem in BFCL_FILES.items():
        answers = {
            row["id"]: row["ground_truth"]
            for row in read_jsonl(f"bfcl/possible_answer/{stem}.jsonl")
        }
        tasks = []
        for row in read_jsonl(f"bfcl/{stem}.jsonl"):
            question = [m for turn in row["question"] for m in turn]
            tasks.append(
                Task(
                    id=f"bfcl-{row['id']}",
                    env="agentgym/BFCL-v0",
                    split="test",
                    instruction=" ".join(
                        str(m["content"]) for m in question if m["role"] == "user"
                    ),
                    config={
                        "category": category,
                        "question": question,
                        "functions": row["function"],
                    },
                    gold={"answers": answers[row["id"]]},
                    tags=["bfcl", category],
                    difficulty=len(answers[row["id"]]),
                )
            )
        suites[category] = tasks
    return suites


def generate_bfcl(out: Path) -> dict[str, Any]:
    """Write the BFCL suites, the licence and ``manifest.json``."""
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, tasks in bfcl_suites().items():
        path = out / f"{name}.jsonl"
        write_tasks(path, tasks)
        files[name] = {"tasks": len(tasks), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    shutil.copyfile(DATA / "bfcl" / "LICENSE", out / "LICENSE-bfcl")
    manifest = {
        "generator": "agentgym.envs.tooluse.generate",
        "suites": files,
        "sources": {
            "bfcl": "ShishirPatil/gorilla berkeley-function-call-leaderboard v4 (Apache-2.0, LICENSE-bfcl)"
        },
    }
    return write_manifest(out, manifest)


GZIPPED = {"telecom-full"}
"""Suites kept gzipped: telecom-full's 2,285 tasks are 9.8 MB of JSONL, 0.5 MB gzipped."""


def generate(out: Path) -> dict[str, Any]:
    """Write every suite, the licences and ``manifest.json``; return the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    suites = {
        **tau2_suites("retail"),
        **tau2_suites("airline"),
        **tau2_suites("mock"),
        **tau2_suites("telecom"),
        **tau_bench_suites(),
    }
    files = {}
    for name, tasks in sorted(suites.items()):
        path = out / f"{name}.jsonl{'.gz' if name in GZIPPED else ''}"
        write_tasks(path, tasks)
        files[name] = {
            "tasks": len(tasks),
            "sha256": hashlib.sha256(suite_bytes(path)).hexdigest(),
            "inaction_succeeds": [t.id for t in tasks if INACTION_TAG in t.tags],
        }
    shutil.copyfile(DATA / "tau2" / "LICENSE", out / "LICENSE-tau2")
    shutil.copyfile(DATA / "tau_bench" / "LICENSE", out / "LICENSE-tau-bench")
    manifest = {
        "generator": "agentgym.envs.tooluse.generate",
        "suites": files,
        "inaction_succeeds": INACTION_NOTE,
        "sources": {
            "tau2": "sierra-research/tau2-bench data/tau2/domains/{retail,airline,mock,telecom} (MIT, LICENSE-tau2)",
            "tau-bench": "sierra-research/tau-bench tau_bench/envs/retail (MIT, LICENSE-tau-bench)",
        },
    }
    return write_manifest(out, manifest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "tasks" / "tooluse")
    parser.add_argument("--bfcl-out", type=Path, default=REPO_ROOT / "tasks" / "bfcl")
    args = parser.parse_args()
    for manifest in (generate(args.out), generate_bfcl(args.bfcl_out)):
        for name, entry in manifest["suites"].items():
            print(f"{name}: {entry['tasks']} tasks")


if __name__ == "__main__":
    main()
