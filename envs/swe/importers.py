"""Bring your own tasks: SWE-bench instances on a local checkout, or a folder of buggy programs.

``from_swebench(instances, checkout)``: rows in SWE-bench's format (``instance_id``, ``repo``,
``base_commit``, ``patch``, ``test_patch``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``,
``problem_statement``; the lists may be JSON strings as in the released files) plus a git checkout
of the repository on this machine. Each task's repo is the checkout at ``base_commit``; the hidden
tests are the files ``test_patch`` touches, as the patch leaves them; the reference fix is
``patch``. Test ids must be pytest node ids (the Python repos of SWE-bench use them, Django does
not), and the sandbox image must hold the repository's dependencies.

``from_directory(root, pool)``: one folder per task with ``buggy.py``, ``fixed.py`` and test files
(``test_*.py``, at the top or under ``tests/``), and optionally ``task.json``
(``{"module": name, "instruction": text}``). The buggy file is installed as ``<module>.py``
(default: the folder name); FAIL_TO_PASS and PASS_TO_PASS are measured by running the tests on the
buggy version in a sandbox.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentgym.envs.swe.config import Edit, GitSource, SweConfig, SweGold
from agentgym.envs.swe.grading import grade
from agentgym.envs.swe.repo import build_files, git_files, install
from agentgym.sandbox import SandboxPool
from agentgym.task import Task

ENV_ID = "agentgym/Swe-v0"
SWEBENCH_FIELDS = ("instance_id", "base_commit", "patch", "test_patch", "FAIL_TO_PASS")


def _id_list(value: Any, field: str, instance: str) -> list[str]:
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{instance}: {field} must be a list of test ids (or its JSON text)")
    return value


def _patched_files(checkout: str, commit: str, patch: str) -> dict[str, str]:
    """The files a patch touches, as they are after applying it to ``commit``."""
    source = GitSource(path=checkout, commit=commit)
    files = git_files(source, [Path(checkout)])  # the checkout the caller named
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        touched = subprocess.run(
            ["git", "apply", "--numstat", "-"],
            input=patch.encode(),
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout.decode()
        paths = [line.split("\t")[2] for line in touched.splitlines() if line.count("\t") >= 2]
        for p in paths:
            if p in files:
                (root / p).parent.mkdir(parents=True, exist_ok=True)
                (root / p).write_text(files[p])
        proc = subprocess.run(
            ["git", "apply", "-"], input=patch.encode(), cwd=root, capture_output=True
        )
        if proc.returncode != 0:
            raise ValueError(
                f"test_patch does not apply at {commit}: {proc.stderr.decode()[-500:]}"
            )
        return {p: (root / p).read_text() for p in paths if (root / p).exists()}


def from_swebench(
    instances: Iterable[dict[str, Any]] | str | Path, checkout: str | Path
) -> list[Task]:
    """Tasks from SWE-bench-format rows (a list, or a JSON/JSONL file) on a local checkout."""
    rows = _load_rows(instances)
    checkout = Path(checkout).resolve()
    tasks = []
    for row in rows:
        missing = [f for f in SWEBENCH_FIELDS if f not in row]
        if missing:
            raise ValueError(
                f"{row.get('instance_id', '?')}: missing field(s) {', '.join(missing)}"
            )
        iid = row["instance_id"]
        config = SweConfig(git=GitSource(path=str(checkout), commit=row["base_commit"]))
        gold = SweGold(
            fail_to_pass=_id_list(row["FAIL_TO_PASS"], "FAIL_TO_PASS", iid),
            pass_to_pass=_id_list(row.get("PASS_TO_PASS", []), "PASS_TO_PASS", iid),
            hidden_tests=_patched_files(str(checkout), row["base_commit"], row["test_patch"]),
            fix_patch=row["patch"],
        )
        tasks.append(
            Task(
                id=iid,
                env=ENV_ID,
                instruction=row.get("problem_statement") or f"Resolve {iid}.",
                config=config.model_dump(exclude_defaults=True),
                gold=gold.model_dump(exclude_defaults=True),
                tags=["swebench", row.get("repo", "local")],
            )
        )
    return tasks


def _load_rows(instances: Iterable[dict[str, Any]] | str | Path) -> list[dict[str, Any]]:
    if not isinstance(instances, (str, Path)):
        return list(instances)
    text = Path(instances).read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        data: list[dict[str, Any]] = json.loads(text)
        return data
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def from_directory(root: str | Path, pool: SandboxPool) -> list[Task]:
    """Tasks from folders of ``buggy.py`` + ``fixed.py`` + tests, labelled by running the tests."""
    tasks = []
    for folder in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        tasks.append(_program_task(folder, pool))
    if not tasks:
        raise ValueError(f"{root} has no task folders (each needs buggy.py, fixed.py and tests)")
    return tasks


def _program_task(folder: Path, pool: SandboxPool) -> Task:
    for need in ("buggy.py", "fixed.py"):
        if not (folder / need).is_file():
            raise ValueError(f"{folder}: missing {need}")
    meta = (
        json.loads((folder / "task.json").read_text()) if (folder / "task.json").is_file() else {}
    )
    module = meta.get("module", folder.name)
    tests = {
        str(p.relative_to(folder)): p.read_text()
        for p in sorted(folder.rglob("test_*.py"))
        if "__pycache__" not in p.parts
    }
    if not tests:
        raise ValueError(f"{folder}: no test_*.py files")
    buggy, fixed = (folder / "buggy.py").read_text(), (folder / "fixed.py").read_text()
    config = SweConfig(
        files={f"{module}.py": buggy, **tests},
        test_command="python3 -m pytest -q -p no:cacheprovider",
    )
    ids = _all_test_ids(pool, config, tests)
    probe = SweGold(
        fail_to_pass=ids, hidden_tests=tests, fix=[Edit(path=f"{module}.py", old="", new=fixed)]
    )
    with pool.acquire() as box:
        files = build_files(config)
        g = grade(box, install(box, files), config, probe, files)
    f2p = [t for t in ids if t not in set(g.passed)]
    if not f2p:
        raise ValueError(f"{folder}: every test passes on buggy.py, so nothing tells a fix apart")
    gold = probe.model_copy(
        update={"fail_to_pass": f2p, "pass_to_pass": [t for t in ids if t in set(g.passed)]}
    )
    return Task(
        id=folder.name,
        env=ENV_ID,
        instruction=meta.get("instruction")
        or f"Fix the bug in {module}.py so that its tests pass.",
        config=config.model_dump(exclude_defaults=True),
        gold=gold.model_dump(exclude_defaults=True),
        tags=["directory", module],
    )


def _all_test_ids(pool: SandboxPool, config: SweConfig, tests: dict[str, str]) -> list[str]:
    with pool.acquire() as box:
        repo = install(box, build_files(config))
        r = box.exec(
            ["python3", "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *tests],
            cwd=repo,
        )
    ids = [line.strip() for line in r.stdout.splitlines() if "::" in line]
    if not ids:
        raise ValueError(f"pytest collected no tests: {r.stdout[-500:]}{r.stderr[-500:]}")
    return ids
