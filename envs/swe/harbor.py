"""Harbor task folders as ``Swe-v0`` tasks graded by the task's own tests, and ``Swe-v0`` suites
as Harbor task folders (``agentgym tasks import-harbor`` / ``export-harbor``).

Harbor itself reads every folder (:func:`agentgym.integrations.harbor.harbor_load`, its ``Task``).

Import (:func:`import_harbor`) takes tasks whose container our sandbox image can stand in for
(:mod:`agentgym.sandbox.dockerfile`: a python, debian or ubuntu base, ``WORKDIR``, ``COPY`` of
text files, ``RUN`` installs of python3, bash, git and pytest only) and whose shell scripts fetch
nothing (the sandbox has no network). The files copied under ``WORKDIR`` become the repository;
``tests/`` and ``solution/`` (as Harbor's file filter selects them) become ``gold.test_script``
and ``gold.fix_script``; ``/app`` (the ``WORKDIR``), ``/tests``, ``/logs/verifier`` and
``/solution`` are mapped onto sandbox folders (``SweConfig.paths``). Refused with the reason: a
prebuilt ``docker_image``, a ``docker-compose.yaml``, a multi-step task, a separate verifier
container, Windows, container environment variables, verifier or solution variables read from
the host (``${...}``: secrets), any other Dockerfile line, a script running curl, wget, apt,
pip or uv. ``verifier.env`` and ``solution.env`` go with the scripts.

Export (:func:`export_harbor`) writes the repository into ``environment/repo/`` under
``WORKDIR /app`` (``FROM python:3.11-slim``, git and pytest 8.4.1 installed), a ``tests/test.sh``
that writes the hidden tests and the task's pytest configuration over the repository and writes
reward 1 when every FAIL_TO_PASS and PASS_TO_PASS test passes (else 0), and a
``solution/solve.sh`` that applies the reference fix (fixed files, or ``git apply`` of the
patch). ``task.toml`` comes from Harbor's ``TaskConfig.model_dump_toml``, and every folder is
loaded back by Harbor's ``Task``.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path, PurePosixPath
from typing import Any

from agentgym.envs.swe.config import Scripted, SweConfig, SweGold, apply_edit
from agentgym.envs.swe.grading import CONFIG_FILES
from agentgym.envs.swe.repo import build_files
from agentgym.integrations.harbor import harbor_load, task_dirs
from agentgym.sandbox.dockerfile import Container, ImageNeeded, read_container
from agentgym.task import Task

ENV_ID = "agentgym/Swe-v0"
NETWORK = re.compile(r"\b(curl|wget|uvx|apt-get|apt|pip3?\s+install|uv\s+(?:pip|add|sync|tool))\b")
"""Commands a test or solve shell script would need the network for (the sandbox has none)."""
EXPORT_BASE = "python:3.11-slim"
CONTAINER_PATHS = {"/tests": "tests", "/logs/verifier": "verifier", "/solution": "solution"}


class UnsupportedTask(ValueError):
    """A Harbor task our sandbox cannot stand in for; the message says why."""


def _folder(root: Path, names: list[str]) -> dict[str, str]:
    try:
        return {n: (root / n).read_text(encoding="utf-8") for n in names}
    except UnicodeDecodeError as e:
        raise UnsupportedTask(f"{root.name}/ holds a binary file: {e}") from None


def to_task(loaded: dict[str, Any]) -> Task:
    """One Harbor task, as Harbor loaded it, as a ``Swe-v0`` task; :class:`UnsupportedTask`
    saying why when our sandbox cannot run it."""
    if "error" in loaded:
        raise ValueError(f"{loaded['dir']}: harbor refused it: {loaded['error']}")
    config, folder = loaded["config"], Path(loaded["dir"])
    env = config["environment"]
    verifier_env, solution_env = config["verifier"]["env"], config["solution"]["env"]
    if config.get("steps"):
        raise UnsupportedTask("a multi-step task (steps/)")
    if env.get("docker_image"):
        raise UnsupportedTask(f"a prebuilt image ({env['docker_image']}) to pull")
    if env.get("os", "linux") != "linux":
        raise UnsupportedTask(f"a {env['os']} container")
    if env.get("env"):
        raise UnsupportedTask(f"container environment variables ({', '.join(env['env'])})")
    secrets = [k for k, v in {**verifier_env, **solution_env}.items() if "${" in v]
    if secrets:
        raise UnsupportedTask(f"variables taken from the host ({', '.join(secrets)})")
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
        test_script=Scripted(files=tests, script=loaded["test_script"], env=verifier_env),
        fix_script=Scripted(files=solution, script=loaded["solve_script"], env=solution_env),
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
        except ValueError as e:  # Harbor refused the folder, or it makes no valid task
            if len(dirs) == 1:
                raise
            skipped[one.get("name", d.name)] = str(e)
    return tasks, skipped


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


class HarborFormat:
    """Harbor task folders as a task format (``agentgym.task_formats.TASK_FORMATS``)."""

    def import_tasks(self, path: Path) -> tuple[list[Task], dict[str, str]]:
        """The tasks under ``path`` that the sandbox runs, and the others with the reason."""
        return import_harbor(path)

    def export_tasks(self, tasks: list[Task], out: Path) -> str:
        """Write ``tasks`` as task folders under ``out``; one line saying so."""
        version, folders = export_harbor(tasks, out)
        return f"{len(folders)} Harbor task folder(s) -> {out} (loaded by harbor {version})"


HARBOR = HarborFormat()
