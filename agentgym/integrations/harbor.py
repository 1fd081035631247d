"""Harbor task directories both ways: imported as ``Swe-v0`` tasks graded by the task's own
tests, and our SWE suites exported as task directories that Harbor's loader accepts.

A Harbor task is a folder: ``instruction.md``, ``task.toml``, ``environment/Dockerfile`` (the
container the agent works in), ``tests/test.sh`` (writes ``/logs/verifier/reward.txt`` or
``reward.json``) and ``solution/solve.sh`` (the oracle). Harbor itself reads it:
``harbor.models.task.task.Task`` parses ``task.toml`` into its ``TaskConfig``, checks the
folder, strips the instruction's canary and picks the test and solve scripts; its file filter
says which files of ``tests/`` and ``solution/`` a trial uploads.

Harbor needs Python 3.12 or newer. Where agentgym runs on an older Python, Harbor runs in its own
interpreter (:func:`harbor_python`: ``$AGENTGYM_HARBOR_PYTHON``, else the virtual environment
``scripts/setup.d/40-harbor.sh`` makes); only its parsing runs there, the rest here.

Import (:func:`import_harbor`) takes tasks whose container our sandbox image can stand in for:
the Dockerfile may only set ``WORKDIR``, ``COPY``/``ADD`` files of ``environment/`` under it and
``RUN`` installs of what the image already has (python3, bash, git, pytest:
:mod:`agentgym.sandbox.dockerfile`); the
scripts must not install anything (the sandbox has no network). Others are refused with the
reason: a prebuilt ``docker_image``, a ``docker-compose.yaml``, multi-step tasks, a separate
verifier container, Windows, any other Dockerfile line (their image must be built where Docker
can pull). Container paths (``/app``, ``/tests``, ``/logs/verifier``, ``/solution``) are mapped
onto the sandbox by the env (``SweConfig.paths``).

Export (:func:`export_harbor`) writes the repository into ``environment/repo/`` under
``WORKDIR /app`` (``FROM python:3.11-slim`` with pytest), a ``test.sh`` that writes the hidden
tests over the repository and gives reward 1 when every FAIL_TO_PASS and PASS_TO_PASS test
passes, and a ``solve.sh`` that applies the reference fix; ``task.toml`` is written by Harbor's
``TaskConfig.model_dump_toml`` and every folder is loaded back with Harbor's ``Task``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

from agentgym.extras import MissingExtra
from agentgym.sandbox.dockerfile import Container, ImageNeeded, read_container
from agentgym.task import Task

ENV_ID = "agentgym/Swe-v0"
PYTHON_VARIABLE = "AGENTGYM_HARBOR_PYTHON"
"""An interpreter (Python 3.12+) that imports harbor, for agentgym on an older Python."""
DEFAULT_VENV = Path.home() / ".cache" / "agentgym" / "harbor-venv"
"""Where ``scripts/setup.d/40-harbor.sh`` installs harbor when this Python is older than 3.12."""
NETWORK = re.compile(r"\b(curl|wget|uvx|apt-get|apt|pip3?\s+install|uv\s+(?:pip|add|sync|tool))\b")
"""Commands a test or solve shell script would need the network for (the sandbox has none)."""
EXPORT_BASE = "python:3.11-slim"
CONTAINER_PATHS = {"/tests": "tests", "/logs/verifier": "verifier", "/solution": "solution"}

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


class UnsupportedTask(ValueError):
    """A Harbor task our sandbox cannot stand in for; the message says why."""


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


# ------------------------------------------------------------------ import
def _folder(root: Path, names: list[str]) -> dict[str, str]:
    try:
        return {n: (root / n).read_text(encoding="utf-8") for n in names}
    except UnicodeDecodeError as e:
        raise UnsupportedTask(f"{root.name}/ holds a binary file: {e}") from None


def to_task(loaded: dict[str, Any]) -> Task:
    """One Harbor task, as Harbor loaded it, as a ``Swe-v0`` task; :class:`UnsupportedTask`
    saying why when our sandbox cannot run it."""
    from agentgym.envs.swe.config import Scripted, SweConfig, SweGold

    if "error" in loaded:
        raise ValueError(f"{loaded['dir']}: harbor refused it: {loaded['error']}")
    config, folder = loaded["config"], Path(loaded["dir"])
    env = config["environment"]
    if config.get("steps"):
        raise UnsupportedTask("a multi-step task (steps/)")
    if env.get("docker_image"):
        raise UnsupportedTask(f"a prebuilt image ({env['docker_image']}) to pull")
    if env.get("os", "linux") != "linux":
        raise UnsupportedTask(f"a {env['os']} container")
    if loaded["verifier_mode"] != "shared":
        raise UnsupportedTask("its tests run in a separate verifier container")
    if not loaded["test_script"] or not loaded["solve_script"]:
        raise UnsupportedTask("no tests/test.sh or no solution/solve.sh")
    try:
        box = read_container(folder / "environment")
    except ImageNeeded as e:
        raise UnsupportedTask(str(e)) from None
    if box.workdir == "/":
        raise UnsupportedTask("no WORKDIR: the agent's folder is /")
    tests = _folder(folder / "tests", loaded["tests"])
    solution = _folder(folder / "solution", loaded["solution"])
    for name, text in {**tests, **solution}.items():
        commands = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
        if name.endswith(".sh") and (m := NETWORK.search("\n".join(commands))):
            raise UnsupportedTask(f"{name} runs {m.group(0)!r}, which needs the network")
    files = _repo_files(box)
    swe = SweConfig(
        files=files or {".gitkeep": ""},  # a git repository needs one file
        grade_timeout=config["verifier"]["timeout_sec"],
        paths={box.workdir: "repo", **CONTAINER_PATHS},
    )
    gold = SweGold(
        test_script=Scripted(files=tests, script=loaded["test_script"]),
        fix_script=Scripted(files=solution, script=loaded["solve_script"]),
    )
    meta, package = config.get("metadata") or {}, config.get("task") or {}
    tags = ["harbor", *package.get("keywords", []), *meta.get("tags", [])]
    return Task(
        id=loaded["name"],
        env=ENV_ID,
        instruction=loaded["instruction"],
        config=swe.model_dump(exclude_defaults=True),
        gold=gold.model_dump(exclude_defaults=True),
        tags=list(dict.fromkeys(str(t) for t in tags + [meta.get("category")] if t)),
        difficulty=meta.get("difficulty"),
    )


def _repo_files(box: Container) -> dict[str, str]:
    root = PurePosixPath(box.workdir)
    out = {}
    for path, text in box.files.items():
        p = PurePosixPath(path)
        if not p.is_relative_to(root):
            raise UnsupportedTask(f"COPY to {path}, outside WORKDIR {box.workdir}")
        out[p.relative_to(root).as_posix()] = text
    return out


def import_harbor(path: str | Path) -> tuple[list[Task], dict[str, str]]:
    """The tasks of a Harbor task folder (or a folder of them) that our sandbox can run, and the
    others' names with the reason; :class:`UnsupportedTask` when ``path`` is one such task."""
    dirs = task_dirs(path)
    _, loaded = harbor_load([{"dir": d.resolve()} for d in dirs])
    tasks, skipped = [], {}
    for d, one in zip(dirs, loaded, strict=True):
        try:
            tasks.append(to_task(one))
        except UnsupportedTask as e:
            if len(dirs) == 1:
                raise UnsupportedTask(f"{d}: {e}") from None
            skipped[one.get("name", d.name)] = str(e)
    return tasks, skipped


# ------------------------------------------------------------------ export
DOCKERFILE = f"""FROM {EXPORT_BASE}
RUN apt-get update && apt-get install -y --no-install-recommends git \\
 && rm -rf /var/lib/apt/lists/* && pip install --no-cache-dir pytest==8.4.1
WORKDIR /app
COPY repo/ /app/
"""
TEST_SH = """#!/bin/bash
# Graded as agentgym's Swe-v0 grades: the hidden tests and the task's pytest configuration go
# over the repository, then reward 1 when every FAIL_TO_PASS and PASS_TO_PASS test passes.
mkdir -p /logs/verifier
cd /app
if [ -d /tests/hidden ]; then cp -r /tests/hidden/. /app/; fi
if python3 -s -m pytest -rA -p no:cacheprovider -o addopts='' {ids}; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def harbor_files(task: Task) -> tuple[dict[str, str], dict[str, Any]]:
    """The files of ``task``'s Harbor folder (but ``task.toml``) and its ``TaskConfig`` data."""
    from agentgym.envs.swe.config import SweConfig, SweGold, apply_edit
    from agentgym.envs.swe.grading import CONFIG_FILES
    from agentgym.envs.swe.repo import build_files

    config, gold = SweConfig.model_validate(task.config), SweGold.model_validate(task.gold)
    if gold.test_script is not None or config.paths:
        raise ValueError(f"{task.id}: already a Harbor task (its folder is where it came from)")
    repo = build_files(config)
    out = {
        "instruction.md": task.instruction.rstrip("\n") + "\n",
        "environment/Dockerfile": DOCKERFILE,
    }
    out |= {f"environment/repo/{p}": t for p, t in repo.items()}
    hidden = dict(gold.hidden_tests)
    hidden |= {p: t for p, t in repo.items() if p.rsplit("/", 1)[-1] in CONFIG_FILES}
    out |= {f"tests/hidden/{p}": t for p, t in hidden.items()}
    ids = " ".join(shlex.quote(t) for t in [*gold.fail_to_pass, *gold.pass_to_pass])
    out["tests/test.sh"] = TEST_SH.format(ids=ids)
    if gold.fix:
        fixed: dict[str, str] = {}
        for edit in gold.fix:
            fixed[edit.path] = apply_edit(fixed.get(edit.path, repo.get(edit.path, "")), edit)
        out |= {f"solution/fixed/{p}": t for p, t in fixed.items()}
        out["solution/solve.sh"] = "#!/bin/bash\ncp -r /solution/fixed/. /app/\n"
    else:
        out["solution/fix.patch"] = gold.fix_patch or ""
        out["solution/solve.sh"] = "#!/bin/bash\ncd /app && git apply /solution/fix.patch\n"
    meta: dict[str, Any] = {"agentgym_id": task.id, "agentgym_env": task.env, "tags": task.tags}
    if task.difficulty is not None:
        meta["difficulty"] = task.difficulty
    data = {
        "metadata": meta,
        "verifier": {"timeout_sec": config.grade_timeout},
        "agent": {"timeout_sec": config.command_timeout * config.max_turns},
    }  # no network_mode: Harbor's docker environment enforces "no-network" only with its
    # egress-control sidecar, whose images it pulls
    return out, data


def folder_name(task_id: str) -> str:
    """A task id as a folder name (``/`` and other unsafe characters become ``-``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", task_id).strip(".-") or "task"


def export_harbor(tasks: list[Task], out: str | Path) -> tuple[str, list[Path]]:
    """Write each task as a Harbor task folder under ``out``; ``task.toml`` is written and every
    folder loaded back by Harbor itself. Returns Harbor's version and the folders; ``ValueError``
    listing the folders Harbor refused."""
    root = Path(out)
    folders: list[Path] = []
    jobs = []
    for task in tasks:
        files, data = harbor_files(task)
        folder = root / folder_name(task.id)
        if folder.exists():
            raise ValueError(f"{folder} exists; export into an empty folder")
        for rel, text in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text, encoding="utf-8")
            if rel.endswith(".sh"):
                (folder / rel).chmod(0o755)
        folders.append(folder.resolve())
        jobs.append({"dir": folders[-1], "config": data})
    version, loaded = harbor_load(jobs)
    bad = [
        f"{one['dir']}: {one.get('error', 'Task.is_valid_dir is False')}"
        for one in loaded
        if "error" in one or not one["valid"]
    ]
    if bad:
        raise ValueError(f"harbor {version} refused {len(bad)} folder(s): " + "; ".join(bad[:3]))
    return version, folders
