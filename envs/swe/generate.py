"""Deterministic generator of the ``swe`` task suites.

    python -m agentgym.envs.swe.generate [--data ../shared/data] [--out tasks/swe] [--only NAME]

- ``swe/humanevalfix`` (164): HumanEvalFix (bigcode-project/octopack, MIT) as small repos.
  FAIL_TO_PASS / PASS_TO_PASS are measured by the env's own pytest grading on the buggy version.
- ``swe/minirepo`` (>= 100): SWE-smith-style mutations of the bundled toolz 1.2.0 (BSD-3), one
  mutated function each, kept only when the mutation makes tests of its module fail.

Both run in the local (bubblewrap) sandbox; the suites do not depend on which provider grades.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from agentgym.cache import sha256_file
from agentgym.envs.swe import humanevalfix, minirepo
from agentgym.envs.swe.config import SweConfig, SweGold
from agentgym.envs.swe.grading import grade
from agentgym.envs.swe.repo import build_files, install
from agentgym.sandbox import Sandbox, SandboxPool, get_provider
from agentgym.task import Task, write_manifest, write_tasks

REPO_ROOT = Path(__file__).resolve().parents[2]
HUMANEVALFIX = "humanevalfix/humanevalpack_python.jsonl"


def measure(box: Sandbox, config: SweConfig, gold: SweGold) -> dict[str, bool]:
    """Outcome of every hidden test on the buggy repository, by real pytest grading."""
    files = build_files(config)
    repo = install(box, files)
    g = grade(box, repo, config, gold, files)
    return {t: t in set(g.passed) for t in gold.fail_to_pass + gold.pass_to_pass}


def humanevalfix_tasks(data: Path, pool: SandboxPool) -> list[Task]:
    lines = (data / HUMANEVALFIX).read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    tasks = []
    for row in rows:
        draft = humanevalfix.task_from_row(row, outcomes={})
        config = SweConfig.model_validate(draft.config)
        all_ids = draft.gold["fail_to_pass"] + draft.gold["pass_to_pass"]
        probe = SweGold.model_validate({**draft.gold, "fail_to_pass": all_ids, "pass_to_pass": []})
        with pool.acquire() as box:
            outcomes = measure(box, config, probe)
        task = humanevalfix.task_from_row(row, outcomes)
        if not task.gold["fail_to_pass"]:
            raise RuntimeError(f"{task.id}: the buggy version passes every hidden test")
        tasks.append(task)
        print(f"{task.id}: {len(task.gold['fail_to_pass'])} fail-to-pass", flush=True)
    return tasks


def write_suite(out: Path, name: str, tasks: list[Task], meta: dict[str, Any]) -> None:
    path = out / f"{name}.jsonl"
    write_tasks(path, tasks)
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"suites": {}}
    manifest["generator"] = "python -m agentgym.envs.swe.generate"
    manifest["suites"][name] = {
        "tasks": len(tasks),
        "sha256": sha256_file(path),
        **meta,
    }
    write_manifest(out, manifest, sort_keys=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "tasks" / "swe")
    parser.add_argument("--only", choices=["humanevalfix", "minirepo"], default=None)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with SandboxPool(get_provider("local"), size=2) as pool:
        if args.only in (None, "humanevalfix"):
            tasks = humanevalfix_tasks(args.data, pool)
            shutil.copyfile(
                args.data / "humanevalfix" / "LICENSE", args.out / "LICENSE-humanevalfix"
            )
            write_suite(
                args.out,
                "humanevalfix",
                tasks,
                {
                    "source": "bigcode-project/octopack HumanEvalPack python (humanevalpack_python.jsonl)",
                    "licence": "MIT (LICENSE-humanevalfix)",
                },
            )
        if args.only in (None, "minirepo"):
            tasks = minirepo.generate(pool)
            shutil.copyfile(minirepo.LICENSE, args.out / "LICENSE-toolz")
            write_suite(
                args.out,
                "minirepo",
                tasks,
                {
                    "source": "toolz 1.2.0 (PyPI sdist), functions mutated SWE-smith style",
                    "licence": "BSD-3-Clause (LICENSE-toolz)",
                    "seed": minirepo.SEED,
                },
            )


if __name__ == "__main__":
    main()
