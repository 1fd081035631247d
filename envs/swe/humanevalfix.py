"""HumanEvalFix as repository tasks: one small repo per bug, hidden tests split per assertion.

Each of the 164 rows of HumanEvalPack-Python (bigcode-project/octopack, MIT) becomes:
``solution.py`` (the prompt with its docstring + the buggy body), ``test_example.py`` (the row's
``example_test``: the visible examples; six rows have none), and, hidden, ``tests/test_hidden.py`` (the row's ``test``:
each ``assert`` of ``check`` becomes its own test, so the score is the share of assertions that
pass; a ``check`` with other statements stays one test). Every hidden test has a 10 s alarm: three
buggy versions loop forever. The reference fix replaces the buggy body with the canonical one.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Any

from agentgym.envs.swe.config import Edit, SweConfig
from agentgym.task import Task

MODULE = "solution.py"
VISIBLE = "test_example.py"
HIDDEN = "tests/test_hidden.py"
TEST_TIMEOUT_S = 10
HIDDEN_HEADER = f'''\
"""Hidden tests (HumanEvalFix ``test``), one per assertion of ``check``."""
import signal

import pytest

import solution as _solution
from solution import *  # noqa: F403  (helpers the original tests use)


@pytest.fixture(autouse=True)
def _time_limit():
    def _expire(signum, frame):
        raise TimeoutError("test ran longer than {TEST_TIMEOUT_S} s")

    previous = signal.signal(signal.SIGALRM, _expire)
    signal.alarm({TEST_TIMEOUT_S})
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)

'''
INSTRUCTION = (
    "Fix bugs in {entry_point}. The function is in solution.py; test_example.py shows expected "
    "behaviour on examples. Hidden tests check the fix."
)


def _strip_check_calls(source: str) -> tuple[str, ast.FunctionDef]:
    """The test source without its top-level ``check(...)`` call, and the ``check`` definition."""
    tree = ast.parse(source)
    lines = source.splitlines()
    drop = set()
    check = None
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Name) and func.id == "check":
                drop |= set(range(node.lineno - 1, (node.end_lineno or node.lineno)))
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            check = node
    if check is None:
        raise ValueError("the test has no check() function")
    kept = "\n".join(line for i, line in enumerate(lines) if i not in drop).strip()
    return kept + "\n", check


def hidden_tests(test: str, entry_point: str) -> tuple[str, list[str]]:
    """The hidden test module and its test names."""
    body, check = _strip_check_calls(test)
    param = check.args.args[0].arg if check.args.args else "candidate"
    stmts = [
        s for s in check.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    out = HIDDEN_HEADER + "\n" + body + "\n"
    if stmts and all(isinstance(s, ast.Assert) for s in stmts):
        names = []
        for i, stmt in enumerate(stmts):
            src = textwrap.dedent(ast.get_source_segment(test, stmt) or "")
            names.append(f"test_case_{i}")
            out += f"\ndef test_case_{i}():\n    {param} = _solution.{entry_point}\n"
            out += textwrap.indent(src, "    ") + "\n"
        return out, names
    out += f"\ndef test_check():\n    check(_solution.{entry_point})\n"
    return out, ["test_check"]


def visible_tests(example_test: str, entry_point: str) -> str:
    """The visible example test module (six rows have no examples: it only imports the module)."""
    if not example_test.strip():
        return f"from solution import {entry_point}  # noqa: F401  (this task has no examples)\n"
    try:
        body, _ = _strip_check_calls(example_test)
    except SyntaxError:  # row 119's example_test is prefixed by a pasted solution body
        body, _ = _strip_check_calls(example_test[example_test.rindex("\ndef check(") + 1 :])
    return f"from solution import *  # noqa: F403\n\n\n{body}\n\ndef test_example():\n    check({entry_point})\n"


def task_from_row(row: dict[str, Any], outcomes: dict[str, bool]) -> Task:
    """One task; ``outcomes`` says which hidden tests pass on the buggy version (measured)."""
    entry, buggy, fixed = row["entry_point"], row["buggy_solution"], row["canonical_solution"]
    module = row["prompt"] + buggy
    if module.count(buggy) != 1:
        raise ValueError(f"{row['task_id']}: the buggy body is not unique in the module")
    hidden, names = hidden_tests(row["test"], entry)
    ids = [f"{HIDDEN}::{n}" for n in names]
    number = row["task_id"].split("/")[-1]
    config = SweConfig(
        files={MODULE: module, VISIBLE: visible_tests(row["example_test"], entry)},
        test_command=f"python3 -m pytest -q -p no:cacheprovider {VISIBLE}",
        max_turns=20,
        command_timeout=30,
        grade_timeout=120,
    )
    return Task(
        id=f"humanevalfix-{int(number):03d}",
        env="agentgym/Swe-v0",
        split="test",
        instruction=INSTRUCTION.format(entry_point=entry),
        config=config.model_dump(exclude_defaults=True),
        gold={
            "fail_to_pass": [t for t in ids if not outcomes.get(t, False)],
            "pass_to_pass": [t for t in ids if outcomes.get(t, False)],
            "hidden_tests": {HIDDEN: hidden},
            "fix": [Edit(path=MODULE, old=buggy, new=fixed).model_dump()],
        },
        tags=["humanevalfix", row["bug_type"].replace(" ", "-")],
        difficulty=row["bug_type"],
    )
