"""Mini-repo tasks: bugs injected into the bundled toolz 1.2.0, kept only if tests catch them.

For each module (``itertoolz``, ``functoolz``, ``dicttoolz``, ``recipes``) every single-node
mutation of every function is a candidate (:mod:`agentgym.envs.swe.mutate`); candidates are
shuffled with a fixed seed and tried in order against the module's own test file in a sandbox.
A mutation is kept when at least one test fails and at least one still passes, with at most
:data:`PER_FUNCTION` tasks per function so the suite spreads over the library. The problem
statement names the failing tests and the first failure message, as an issue from a user who
ran the test suite would.
"""

from __future__ import annotations

import random
import re
import shlex
from pathlib import Path

from agentgym.envs.swe.config import Edit, SweConfig
from agentgym.envs.swe.grading import normalise, pytest_outcomes
from agentgym.envs.swe.mutate import Mutation, mutations
from agentgym.envs.swe.repo import REPOS, bundled, install
from agentgym.sandbox import Sandbox, SandboxPool
from agentgym.task import Task

REPO = "toolz"
LICENSE = REPOS / REPO / "LICENSE.txt"
SEED = 20240607
TARGET = 120
PER_FUNCTION = 2
MODULES = {
    "toolz/itertoolz.py": "toolz/tests/test_itertoolz.py",
    "toolz/functoolz.py": "toolz/tests/test_functoolz.py",
    "toolz/dicttoolz.py": "toolz/tests/test_dicttoolz.py",
    "toolz/recipes.py": "toolz/tests/test_recipes.py",
}
_FAILED = re.compile(r"^FAILED (\S+) - (.*)$", re.MULTILINE)
_ADDRESS = re.compile(r"0x[0-9a-f]{6,}")


def run_file(box: Sandbox, repo: str, test_file: str) -> tuple[dict[str, str], str]:
    """pytest outcomes of one test file and its normalised output (addresses masked)."""
    cmd = (
        f"python3 -m pytest -rA --tb=no -p no:cacheprovider -o addopts='' {shlex.quote(test_file)}"
    )
    r = box.exec(cmd, cwd=repo, timeout=60, env={"COLUMNS": "240"})  # untruncated messages
    out = _ADDRESS.sub("0x...", normalise(r.stdout))
    return pytest_outcomes(out), out


def problem_statement(failing: list[str], output: str) -> str:
    shown = ", ".join(f"`{t}`" for t in failing[:3])
    more = f" and {len(failing) - 3} more" if len(failing) > 3 else ""
    messages = dict(_FAILED.findall(output))
    first = messages.get(failing[0], "").strip()
    detail = f"\n\nThe first failure says:\n\n    {first}" if first else ""
    return (
        f"Running the test suite of this repository (toolz), {shown}{more} fail.{detail}\n\n"
        "Fix the library code (not the tests) so that the test suite passes again."
    )


def candidates() -> list[Mutation]:
    files = bundled(REPO)
    found = [m for path in MODULES for m in mutations(path, files[path])]
    random.Random(SEED).shuffle(found)
    return found


def generate(pool: SandboxPool, target: int = TARGET) -> list[Task]:
    """Try candidates in seeded order until ``target`` tasks are kept."""
    files = bundled(REPO)
    tasks: list[Task] = []
    per_function: dict[tuple[str, str], int] = {}
    with pool.acquire() as box:
        repo = install(box, files)
        baseline = {t: run_file(box, repo, t)[0] for t in MODULES.values()}
        for m in candidates():
            key = (m.path, m.function)
            if len(tasks) >= target or per_function.get(key, 0) >= PER_FUNCTION:
                continue
            task = _try(box, repo, m, baseline[MODULES[m.path]], len(tasks))
            if task is not None:
                tasks.append(task)
                per_function[key] = per_function.get(key, 0) + 1
                print(f"{task.id}: {m.path}:{m.line} {m.function} ({m.operator})", flush=True)
    return tasks


def _try(box: Sandbox, repo: str, m: Mutation, before: dict[str, str], n: int) -> Task | None:
    test_file = MODULES[m.path]
    original = bundled(REPO)[m.path]
    if original.count(m.original) != 1:  # the edit must find its function unambiguously
        return None
    box.write_file(f"{repo}/{m.path}", original.replace(m.original, m.mutated))
    try:
        after, output = run_file(box, repo, test_file)
    except TimeoutError:
        return None
    finally:
        box.write_file(f"{repo}/{m.path}", original)
    passed_before = sorted(t for t, o in before.items() if o == "PASSED")
    f2p = [t for t in passed_before if after.get(t) != "PASSED"]
    p2p = [t for t in passed_before if after.get(t) == "PASSED"]
    if not f2p or not p2p:
        return None
    config = SweConfig(
        repo=REPO,
        edits=[Edit(path=m.path, old=m.original, new=m.mutated)],
        test_command="python3 -m pytest -q -p no:cacheprovider toolz/tests",
        max_turns=40,
    )
    module = Path(m.path).stem
    return Task(
        id=f"minirepo-toolz-{n:03d}",
        env="agentgym/Swe-v0",
        split="test",
        instruction=problem_statement(f2p, output),
        config=config.model_dump(exclude_defaults=True),
        gold={
            "fail_to_pass": f2p,
            "pass_to_pass": p2p,
            "hidden_tests": {test_file: bundled(REPO)[test_file]},
            "fix": [Edit(path=m.path, old=m.mutated, new=m.original).model_dump()],
        },
        tags=["minirepo", f"toolz.{module}", m.operator],
        difficulty="single-function",
    )
