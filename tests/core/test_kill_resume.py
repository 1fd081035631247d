"""A real ``kill -9`` or Ctrl-C in the middle of an eval loses only in-flight episodes, duplicates nothing.

The eval child gets the default SIGINT handling whatever this process has: a test run started with
SIGINT ignored (``cmd &`` in a non-interactive shell) would otherwise pass that on, and Ctrl-C would
not stop the child.
"""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = """
import sys
import agentgym
from agentgym.testing import noop_suite
from support import SlowNoopAgent
agentgym.evaluate(noop_suite(120, length=5), lambda env: SlowNoopAgent(env, 0.01),
                  concurrency=4, samples=2, db=sys.argv[1])
"""
TOTAL = 240


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=10) as con:
            return con.execute("select count(*) from episodes").fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Python then installs its KeyboardInterrupt


def _start(db: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(db)], env=env, preexec_fn=_default_sigint
    )


def test_kill_and_ctrl_c_then_resume(tmp_path):
    db = tmp_path / "kill.db"
    seen_before_kill = []
    for threshold, sig in ((15, signal.SIGKILL), (70, signal.SIGINT), (150, signal.SIGKILL)):
        proc = _start(db)
        deadline = time.time() + 60
        while _count(db) < threshold and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, f"the run ended before the {sig.name} stage could stop it"
        os.kill(proc.pid, sig)  # SIGINT = Ctrl-C
        proc.wait(timeout=30)
        seen_before_kill.append(_count(db))
        assert proc.returncode != 0, f"{sig.name} did not stop the run (it exited 0)"
        assert seen_before_kill[-1] < TOTAL, f"{sig.name} did not stop the run: all {TOTAL} stored"
    with sqlite3.connect(db) as con:
        stored = {
            r[0]: r[1]
            for r in con.execute("select task_id || ':' || sample, started_at from episodes")
        }
    subprocess.run(
        [sys.executable, "-c", SCRIPT, str(db)],
        check=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
    )
    with sqlite3.connect(db) as con:
        assert con.execute("pragma integrity_check").fetchone()[0] == "ok"
        rows = con.execute(
            "select task_id, sample, steps, status, started_at from episodes"
        ).fetchall()
        n_steps = con.execute("select count(*) from steps").fetchone()[0]
        orphans = con.execute(
            "select count(*) from steps s left join episodes e using (run_id, task_id, sample) "
            "where e.task_id is null"
        ).fetchone()[0]
        runs = con.execute("select count(*) from runs").fetchone()[0]
    assert len(rows) == TOTAL and len({(r[0], r[1]) for r in rows}) == TOTAL
    assert all(r[2] == 5 and r[3] == "limit" for r in rows)
    assert n_steps == 5 * TOTAL and orphans == 0 and runs == 1
    # episodes finished before a kill were kept as they were, not rerun
    assert all(dict(((f"{r[0]}:{r[1]}"), r[4]) for r in rows)[k] == v for k, v in stored.items())
