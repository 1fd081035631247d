"""The README's shell and Python blocks, run as written; the docs pages' blocks that no test runs.

Every ``bash`` and ``python`` block of the README either runs here or is marked, on the line just
before it, ``<!-- not run: WHY -->`` (it needs an API key, a GPU, a model download, or minutes).
Python blocks run in a temporary folder; shell blocks run there command by command, each
``agentgym ...`` as ``python -m agentgym.cli ...`` against this source tree. ``pip install`` is the
one other command a runnable block may hold: the install these tests already run in.

The pages under ``docs/`` are reference: a few of their blocks run here too (``DOCS_RUN``), others
where a test reads their section (``COVERED``); the rest are listed, and counted, by
``test_docs_blocks_no_test_runs_are_recorded``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CODE = {"bash", "sh", "shell", "python"}
FENCE = re.compile(r"^```(\S*)\s*$")
NOT_RUN = re.compile(r"^<!-- not run: (\S.*?) -->$")
HEADING = re.compile(r"^(#{1,6}) (.+)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown page."""

    page: str
    line: int  # of the opening fence
    lang: str
    code: str
    heading: str  # the nearest heading above it
    not_run: str | None  # the reason of a ``<!-- not run: ... -->`` mark just before it

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, with the heading it sits under and its mark, if any."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    heading, i = "", 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            if match := HEADING.match(lines[i]):
                heading = match.group(2).strip()
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        assert end is not None, f"{path.name}:{i + 1}: a code block is never closed"
        mark = NOT_RUN.match(lines[i - 1]) if i else None
        code = "\n".join(lines[i + 1 : end]) + "\n"
        rel = str(path.relative_to(ROOT))
        found.append(Block(rel, i + 1, fence.group(1), code, heading, mark and mark.group(1)))
        i = end + 1
    return found


def commands(code: str) -> list[list[str]]:
    """A shell block's commands: continuation lines joined, comments dropped, ``&&`` split."""
    out: list[list[str]] = []
    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            out.append(words[:cut])
            words = words[cut + 1 :]
    return out


def run_shell(block: Block, cwd: Path) -> None:
    """Run each command of ``block`` in ``cwd``; the first that fails fails the test."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    for words in commands(block.code):
        if words[:2] == ["pip", "install"]:
            continue  # the install: these tests already run in it
        assert words[0] == "agentgym", (
            f"{block.where} runs `{shlex.join(words)}`, which this test cannot run: "
            "make it an agentgym command or mark the block <!-- not run: WHY -->"
        )
        argv = [sys.executable, "-m", "agentgym.cli", *words[1:]]
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (
            f"{block.where}: `{shlex.join(words)}` exited {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )


README_BLOCKS = [b for b in blocks(ROOT / "README.md") if b.lang in CODE]

DOCS_RUN = {("docs/evaluation.md", "Evaluation")}
"""(page, heading) of docs blocks cheap enough to run here as the README's are."""
DOCS_RUN_BLOCKS = [
    b for page, heading in sorted(DOCS_RUN) for b in blocks(ROOT / page)
    if b.heading == heading and b.lang in CODE
]  # fmt: skip


def test_the_readme_has_blocks_and_marks_name_a_reason():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    marks = re.findall(r"^<!-- not run:.*$", text, flags=re.M)
    marked = [b for b in README_BLOCKS if b.not_run]
    assert len(marks) == len(marked), (
        "a <!-- not run: WHY --> mark stands elsewhere than just before a block"
    )
    assert {b.lang for b in README_BLOCKS} == {"bash", "python"}
    assert len(README_BLOCKS) - len(marked) >= 3  # the Quick start, the Python API, the eval


@pytest.mark.parametrize(
    "block",
    [b for b in README_BLOCKS if not b.not_run] + DOCS_RUN_BLOCKS,
    ids=lambda b: f"{b.page}:{b.line}",
)
def test_every_runnable_block_runs(block: Block, tmp_path, monkeypatch):
    if block.lang == "python":
        monkeypatch.chdir(tmp_path)
        exec(compile(block.code, block.where, "exec"), {"__name__": "__main__"})
    else:
        run_shell(block, tmp_path)


def test_the_runner_refuses_what_it_cannot_run(tmp_path):
    """A block holding any other command fails until it is marked: the check is not vacuous."""
    block = Block("README.md", 1, "bash", "curl -s localhost:8000 && agentgym envs\n", "", None)
    with pytest.raises(AssertionError, match="mark the block"):
        run_shell(block, tmp_path)
    assert commands("pip install . && agentgym eval x \\\n  -a expert  # why\n") == [
        ["pip", "install", "."],
        ["agentgym", "eval", "x", "-a", "expert"],
    ]


COVERED = {
    ("docs/envs.md", "An env: 1 folder + 1 line"): "tests/envs/test_adding_env.py",
    ("docs/evaluation.md", "An agent: 1 module"): "tests/core/test_adding_agent.py",
    (
        "docs/methods.md",
        "Adding an algorithm, a credit function or a method",
    ): "tests/train/test_train_trainer.py",
    ("docs/integrations.md", "OpenEnv"): "tests/integrations/test_trl_openenv_harness.py",
}
"""(page, heading) -> the test that runs the blocks under that heading."""

UNCOVERED = 17
"""Shell and Python blocks of docs/*.md that no test runs (listed when the count changes)."""


def test_docs_blocks_no_test_runs_are_recorded():
    found = [b for page in sorted(DOCS.glob("*.md")) for b in blocks(page) if b.lang in CODE]
    headings = {(b.page, b.heading) for b in found}
    assert DOCS_RUN_BLOCKS and headings >= DOCS_RUN
    covered = {**COVERED, **dict.fromkeys(DOCS_RUN, "tests/core/test_docs_blocks.py")}
    for (page, heading), test in covered.items():
        assert (page, heading) in headings, f"{page} has no blocks under '{heading}'"
        assert Path(page).name in (ROOT / test).read_text(encoding="utf-8"), (
            f"{test} no longer reads {page}"
        )
    uncovered = [b for b in found if (b.page, b.heading) not in covered]
    listing = "\n".join(f"  {b.where} ({b.lang}, under '{b.heading}')" for b in uncovered)
    print(f"docs blocks no test runs: {len(uncovered)}\n{listing}")
    assert len(uncovered) == UNCOVERED, f"record the new count in UNCOVERED:\n{listing}"
