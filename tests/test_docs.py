"""The README's promises: its Python example runs, CI runs its test command, doctests pass."""

import doctest
import re
from pathlib import Path

import agentgym
import agentgym.envs.clarify
import agentgym.envs.household
import agentgym.envs.kbqa
import agentgym.envs.oversight
import agentgym.envs.webshop

ROOT = Path(__file__).resolve().parent.parent


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)


def test_readme_python_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for block in _blocks("python"):
        exec(compile(block, "README.md", "exec"), {})


def test_ci_runs_the_readme_test_command():
    ci_command = (ROOT / ".ci/run").read_text().strip().splitlines()[-1]
    assert ci_command in [b.strip() for b in _blocks("bash")]


def test_docstring_examples():
    for module in (
        agentgym,
        agentgym.envs.clarify,
        agentgym.envs.household,
        agentgym.envs.kbqa,
        agentgym.envs.oversight,
    ):
        assert doctest.testmod(module).failed == 0
