"""Grading a submission the SWE-bench way: restore the hidden tests, run them, count what passes.

Before running, the hidden test files are written over the agent's repository and pytest's
configuration files (``conftest.py``, ``pytest.ini``, ``tox.ini``, ``setup.cfg``,
``pyproject.toml``) are put back as they were in the task (ones the agent created are removed),
so editing tests or test configuration cannot fake a pass; Python runs with ``-s`` so a
``.pth`` or ``usercustomize`` planted in the user site folder is not loaded. Not prevented: a
module planted in the repository root that shadows ``pytest`` itself (SWE-bench grades the same
way and has the same gap). Success means every FAIL_TO_PASS and
PASS_TO_PASS test passes; the score is the share that pass.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from agentgym.envs.swe.config import SweConfig, SweGold
from agentgym.sandbox import Sandbox

CONFIG_FILES = ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
_OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR|XPASS|XFAIL|SKIPPED) (.+?)(?: - .*)?$", re.MULTILINE)
_TIMING = re.compile(r" in \d+(?:\.\d+)?s(?: \([0-9:.]+\))?")


@dataclass(frozen=True)
class Grade:
    """The hidden tests' verdict."""

    passed: list[str]
    failed: list[str]
    output: str

    @property
    def score(self) -> float:
        total = len(self.passed) + len(self.failed)
        return len(self.passed) / total if total else 0.0

    @property
    def success(self) -> bool:
        return bool(self.passed) and not self.failed


def normalise(output: str) -> str:
    """pytest output without run times, so the same repository gives the same text."""
    return _TIMING.sub("", output)


def pytest_outcomes(output: str) -> dict[str, str]:
    """``{node id: PASSED|FAILED|...}`` from pytest's ``-rA`` short summary."""
    return {m.group(2).strip(): m.group(1) for m in _OUTCOME.finditer(output)}


def restore_tests(sandbox: Sandbox, repo: str, gold: SweGold, original: dict[str, str]) -> None:
    """Hidden tests and the task's own test configuration over whatever the agent left."""
    for path, text in gold.hidden_tests.items():
        sandbox.write_file(f"{repo}/{path}", text)
    for path, text in original.items():
        if path.rsplit("/", 1)[-1] in CONFIG_FILES:
            sandbox.write_file(f"{repo}/{path}", text)
    names = " -o ".join(f"-name {shlex.quote(n)}" for n in CONFIG_FILES)
    listing = sandbox.exec(f"find . -path ./.git -prune -o \\( {names} \\) -print", cwd=repo).stdout
    for found in listing.split():
        if found.removeprefix("./") not in original:
            sandbox.exec(["rm", "-f", found], cwd=repo)


def grade(
    sandbox: Sandbox, repo: str, config: SweConfig, gold: SweGold, original: dict[str, str]
) -> Grade:
    """Run the hidden tests in ``repo`` and sort FAIL_TO_PASS + PASS_TO_PASS into passed/failed."""
    restore_tests(sandbox, repo, gold, original)
    wanted = [*gold.fail_to_pass, *gold.pass_to_pass]
    files = sorted({t.split("::", 1)[0] for t in wanted})
    cmd = "python3 -s -m pytest -rA --tb=short -p no:cacheprovider -o addopts='' " + " ".join(
        shlex.quote(f) for f in files
    )
    try:
        result = sandbox.exec(cmd, cwd=repo, timeout=config.grade_timeout)
        output = normalise(result.stdout + result.stderr)
    except TimeoutError:
        output = f"The hidden tests did not finish within {config.grade_timeout:.0f}s."
    outcomes = pytest_outcomes(output)
    passed = [t for t in wanted if outcomes.get(t) == "PASSED"]
    return Grade(passed, [t for t in wanted if t not in set(passed)], output)
