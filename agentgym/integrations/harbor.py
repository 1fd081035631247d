"""Harbor's own task loader, run for agentgym: the thin adapter to the ``harbor`` package.

A Harbor task is a folder: ``instruction.md``, ``task.toml``, ``environment/Dockerfile`` (the
container the agent works in), ``tests/test.sh`` (writes ``/logs/verifier/reward.txt`` or
``reward.json``) and ``solution/solve.sh`` (the oracle). :func:`harbor_load` has Harbor read it:
``harbor.models.task.task.Task`` parses ``task.toml`` into its ``TaskConfig``, checks the folder,
strips the instruction's canary and picks the test and solve scripts, its file filter says which
files of ``tests/`` and ``solution/`` a trial uploads, and its verifier-mode resolution says
whether the tests share the agent's container. For an export it first writes ``task.toml`` with
``TaskConfig.model_dump_toml``.

Harbor needs Python 3.12 or newer. Where agentgym runs on an older Python, Harbor runs in its own
interpreter (:func:`harbor_python`: ``$AGENTGYM_HARBOR_PYTHON``, else the virtual environment
``scripts/setup.d/40-harbor.sh`` makes); only this loading runs there. What the folders become
(``Swe-v0`` tasks, and back) is the SWE env's business: ``agentgym.envs.swe.harbor``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentgym.extras import MissingExtra

PYTHON_VARIABLE = "AGENTGYM_HARBOR_PYTHON"
"""An interpreter (Python 3.12+) that imports harbor, for agentgym on an older Python."""
DEFAULT_VENV = Path.home() / ".cache" / "agentgym" / "harbor-venv"
"""Where ``scripts/setup.d/40-harbor.sh`` installs harbor when this Python is older than 3.12."""

_SIDE = r"""
import json, sys
from importlib.metadata import version
from pathlib import Path
from harbor.models.task.config import TaskConfig
from harbor.models.task.task import Task
from harbor.models.task.verifier_mode import resolve_task_verifier_mode

def files(task, folder):
    if not folder.is_dir():
        return []
    chosen = task.file_filter.select(folder).relative_paths
    return sorted(p.as_posix() for p in chosen if (folder / p).is_file())

def load(folder):
    task = Task(folder)
    os_ = task.config.environment.os
    test, solve = task.paths.discovered_test_path_for(os_), task.paths.discovered_solve_path_for(os_)
    return {
        "dir": folder, "name": task.name, "instruction": task.instruction,
        "config": task.config.model_dump(mode="json"),
        "verifier_mode": resolve_task_verifier_mode(task.config).value,
        "valid": Task.is_valid_dir(folder),
        "tests": files(task, task.paths.tests_dir), "test_script": test and test.name,
        "solution": files(task, task.paths.solution_dir), "solve_script": solve and solve.name,
    }

def one(job):
    try:
        if "config" in job:  # export: task.toml by Harbor's own writer, then loaded back
            toml = TaskConfig.model_validate(job["config"]).model_dump_toml()
            (Path(job["dir"]) / "task.toml").write_text(toml)
        return load(job["dir"])
    except Exception as e:
        return {"dir": job["dir"], "error": f"{type(e).__name__}: {e}"}

jobs = json.load(sys.stdin)
json.dump({"harbor": version("harbor"), "tasks": [one(j) for j in jobs]}, sys.stdout)
"""
"""Runs in Harbor's interpreter: loads task folders with Harbor's ``Task`` (and, for an export,
first writes ``task.toml`` with ``TaskConfig.model_dump_toml``); prints JSON."""


# ------------------------------------------------------------------ running Harbor
def harbor_python() -> str:
    """An interpreter that imports harbor: this one, ``$AGENTGYM_HARBOR_PYTHON`` or the default
    virtual environment; ``ImportError`` saying how to install it otherwise."""
    if importlib.util.find_spec("harbor") is not None:
        return sys.executable
    named = os.environ.get(PYTHON_VARIABLE)
    candidate = Path(named) if named else DEFAULT_VENV / "bin" / "python"
    if candidate.exists():
        return str(candidate)
    raise MissingExtra(
        "Harbor task directories need harbor (Python 3.12+): pip install '.[harbor]' on Python "
        f"3.12+, or set ${PYTHON_VARIABLE} to a Python 3.12+ that has it "
        "(scripts/setup.d/40-harbor.sh makes one)",
        ["harbor"],
    )


def harbor_load(jobs: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Harbor's version and, per job (``{"dir": ...}``, plus ``config`` to write ``task.toml``
    first), what its ``Task`` made of the folder, or ``{"error": ...}``."""
    proc = subprocess.run(
        [harbor_python(), "-c", _SIDE],
        input=json.dumps([{**j, "dir": str(j["dir"])} for j in jobs]),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"harbor failed to load the tasks: {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout)
    return out["harbor"], out["tasks"]


def task_dirs(path: str | Path) -> list[Path]:
    """``path`` itself when it holds ``task.toml``, else its subfolders that do (sorted)."""
    root = Path(path)
    if (root / "task.toml").is_file():
        return [root]
    found = (
        sorted(p for p in root.iterdir() if (p / "task.toml").is_file()) if root.is_dir() else []
    )
    if not found:
        raise FileNotFoundError(f"{path}: neither a Harbor task (task.toml) nor a folder of them")
    return found
