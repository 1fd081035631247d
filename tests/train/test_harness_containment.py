"""Harness programs are contained: the whole process group dies on a timeout and when the program
exits, and stderr is kept as a bounded tail however much is written. Real programs, real gateway."""

from __future__ import annotations

import sys
import time
import tracemalloc
from pathlib import Path

import pytest
import torch

from agentgym.llm.engine import LocalEngine
from agentgym.task import TaskSuite
from agentgym.train.config import RolloutConfig
from agentgym.train.harness import HarnessRollouts
from agentgym.train.rollout import Job

ENV = "agentgym/Clarify-v0"
ROLLOUT = RolloutConfig(max_turns=2, max_tokens=4)


@pytest.fixture(scope="module")
def engine(tiny_model):
    torch.manual_seed(0)
    engine = LocalEngine(tiny_model, max_batch_size=4)
    yield engine
    engine.close()


def _jobs(n: int = 1) -> list[Job]:
    task = TaskSuite.load("clarify/train").tasks[0]
    return [Job(task, task.id, k, 5 + k) for k in range(n)]


def _run(engine, tmp_path, code: str, **kw):
    program = tmp_path / "agent.py"
    program.write_text(code)
    command = f"{sys.executable} {program}"
    harness = HarnessRollouts(command, engine, ENV, {}, tmp_path / "gw", lambda: "v0", **kw)
    try:
        episodes, _ = harness.collect(_jobs(), ROLLOUT, ROLLOUT.for_env())
    finally:
        harness.close()
    return episodes


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper has already died)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _gone(pid: int, within_s: float = 30.0) -> bool:
    deadline = time.monotonic() + within_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not _alive(pid)


def _spawner(pid_file: Path, then: str) -> str:
    """A program that starts a grandchild (which sleeps), writes its pid, then does ``then``."""
    return (
        "import subprocess, sys, time, pathlib\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(child.pid))\n"
        f"{then}\n"
    )


def test_a_timeout_kills_the_programs_whole_process_group(engine, tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    (ep,) = _run(engine, tmp_path, _spawner(pid_file, "time.sleep(300)"), timeout_s=3.0)
    assert not ep.ok and "timed out after 3 s" in ep.episode.error
    assert _gone(int(pid_file.read_text()))


def test_children_a_program_leaves_behind_are_killed_when_it_exits(engine, tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    (ep,) = _run(engine, tmp_path, _spawner(pid_file, "sys.exit(4)"))
    assert not ep.ok and "exited 4" in ep.episode.error
    assert _gone(int(pid_file.read_text()))


def test_stderr_is_kept_as_a_bounded_tail(engine, tmp_path):
    noisy = (
        "import sys\n"
        "block = b'x' * (1 << 20)\n"
        "for _ in range(120): sys.stderr.buffer.write(block)\n"
        "sys.stderr.write('the end of it'); sys.exit(3)\n"
    )
    tracemalloc.start()
    try:
        (ep,) = _run(engine, tmp_path, noisy)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not ep.ok and "exited 3" in ep.episode.error
    assert ep.episode.error.endswith("x" * 100 + "the end of it")
    assert peak < 20 * 2**20, f"{peak / 2**20:.0f} MiB held for 120 MiB of stderr"
