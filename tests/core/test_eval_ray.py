"""``evaluate(..., backend="ray")`` / ``agentgym eval --backend ray``: episodes in Ray actors on a
local Ray instance give the same stored rows, resume and error records as the local threads."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest
from typer.testing import CliRunner

import agentgym
from agentgym.agent import ExpertAgent
from agentgym.cli import app
from agentgym.task import TaskSuite

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.xdist_group("ray")  # one local Ray instance at a time (tests/conftest.py)

TIMINGS = {"started_at", "duration_s", "agent_latency_s", "env_latency_s"}


@pytest.fixture(scope="module")
def local_ray():
    from agentgym.ray_backend import init_ray

    init_ray(num_cpus=2)  # the helper the trainer's Ray pool uses too
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def mixed_suite() -> TaskSuite:
    """Two envs in one suite, so every worker keeps (and reuses) one env per env id."""
    clarify = TaskSuite.load("clarify/test").tasks[:3]
    household = TaskSuite.load("household/valid_seen").tasks[:3]
    return TaskSuite("clarify+household", clarify + household)


def stored(result: agentgym.RunResult) -> tuple[list[dict], list[dict]]:
    """The run's episode and step rows as the store holds them, without wall-clock timings."""
    episodes = [
        {k: v for k, v in r.items() if k not in TIMINGS}
        for r in result.store.db.query(
            "select * from episodes where run_id = ? order by task_id, sample", [result.run_id]
        )
    ]
    steps = [
        {k: v for k, v in r.items() if k not in TIMINGS}
        for r in result.store.db.query(
            "select * from steps where run_id = ? order by task_id, sample, t", [result.run_id]
        )
    ]
    return episodes, steps


@pytest.mark.parametrize(("agent", "max_steps"), [("expert", None), ("random", 12)])
def test_ray_stores_the_same_rows_as_local(local_ray, mixed_suite, tmp_path, agent, max_steps):
    runs, seen = {}, {}
    for backend in ("local", "ray"):
        calls: list[tuple[str, int, int]] = []
        runs[backend] = agentgym.evaluate(
            mixed_suite,
            agent,
            concurrency=2,
            samples=2,
            db=tmp_path / f"{backend}.db",
            max_steps=max_steps,
            seed=7,
            backend=backend,
            on_episode=lambda ep, p, calls=calls: calls.append((ep.task_id, ep.sample, p.done)),
        )
        seen[backend] = calls
    local, remote = runs["local"], runs["ray"]
    assert remote.run_id == local.run_id  # the backend is not part of the run's identity
    assert stored(remote) == stored(local)
    episodes, steps = stored(remote)
    assert len(episodes) == 12 and len(steps) > 12
    assert {(t, s) for t, s, _ in seen["ray"]} == {(t, s) for t, s, _ in seen["local"]}
    assert [d for *_, d in seen["ray"]] == list(range(1, 13))
    assert all(e["status"] != "error" for e in episodes)
    if agent == "expert":
        assert all(e["success"] for e in episodes)
    else:  # seeded per (seed, task, sample): the two samples of a task play differently
        assert len({e["first_observation"] + str(e["steps"]) for e in episodes}) > 6


def test_ray_resumes_a_run_started_locally(local_ray, mixed_suite, tmp_path):
    db = tmp_path / "r.db"
    first = agentgym.evaluate(mixed_suite, "random", samples=2, db=db, max_steps=8, seed=1)
    before = stored(first)
    lost = [("clarify-products-test-0001", 1), (mixed_suite.tasks[4].id, 0)]
    with first.store.db.conn as conn:  # as if the first run had been killed before these two
        for key in lost:
            conn.execute(
                "delete from steps where run_id=? and task_id=? and sample=?", [first.run_id, *key]
            )
            conn.execute(
                "delete from episodes where run_id=? and task_id=? and sample=?",
                [first.run_id, *key],
            )
    resumed = agentgym.evaluate(
        mixed_suite, "random", samples=2, db=first.store, max_steps=8, seed=1, backend="ray"
    )
    assert resumed.run_id == first.run_id and resumed.progress.skipped == 10
    assert sorted((e.task_id, e.sample) for e in resumed.new_episodes) == sorted(lost)
    assert stored(resumed) == before
    again = agentgym.evaluate(
        mixed_suite, "random", samples=2, db=first.store, max_steps=8, seed=1, backend="ray"
    )
    assert again.new_episodes == [] and again.progress.skipped == 12


def test_agent_errors_in_a_ray_worker_are_recorded_like_local(local_ray, mixed_suite, tmp_path):
    def broken(env):  # defined here, so cloudpickle sends it by value to the workers
        raise RuntimeError("this agent cannot be built")

    suite = mixed_suite.filter(limit=2)
    rows = {
        backend: agentgym.evaluate(
            suite, broken, concurrency=2, db=tmp_path / f"{backend}.db", backend=backend
        ).episode_rows()
        for backend in ("local", "ray")
    }
    for r in rows["ray"]:
        assert r["status"] == "error" and not r["success"]
        assert (
            "Traceback" in r["error"] and "RuntimeError: this agent cannot be built" in r["error"]
        )
    last_lines = {b: [r["error"].splitlines()[-1] for r in rows[b]] for b in rows}
    assert last_lines["ray"] == last_lines["local"]  # the frames differ: the worker's wrapper


def test_a_dead_worker_errors_its_episode_and_is_replaced(local_ray, mixed_suite, tmp_path):
    victim = mixed_suite.tasks[1].id

    class Killer(ExpertAgent):
        def reset(self, info):
            if info["task_id"] == victim:
                os._exit(1)  # the worker process dies mid-episode

    result = agentgym.evaluate(
        mixed_suite.filter(limit=3), Killer, concurrency=1, db=tmp_path / "k.db", backend="ray"
    )
    rows = {r["task_id"]: r for r in result.episode_rows()}
    assert rows[victim]["status"] == "error" and "actor" in rows[victim]["error"].lower()
    others = [r for t, r in rows.items() if t != victim]
    assert len(others) == 2 and all(r["success"] for r in others)  # the next worker carried on
    assert result.progress.errors == 1


def test_bad_ray_settings_fail_up_front(local_ray, mixed_suite):
    lock = threading.Lock()
    with pytest.raises(ValueError, match="cannot be sent to Ray workers"):
        agentgym.evaluate(mixed_suite, lambda env, lock=lock: ExpertAgent(env), backend="ray")
    with pytest.raises(ValueError, match="use one of local, ray"):
        agentgym.evaluate(mixed_suite, "expert", backend="dask")
    with pytest.raises(ValueError, match="needs backend='ray'"):
        agentgym.evaluate(mixed_suite, "expert", address="auto")


def test_cli_eval_backend_ray(local_ray, tmp_path):
    cli = CliRunner()
    db = str(tmp_path / "c.db")
    args = ["eval", "clarify/test", "-a", "expert", "--limit", "3", "--db", db, "-c", "2"]
    result = cli.invoke(app, [*args, "--backend", "ray"])
    assert result.exit_code == 0, result.output
    rows = agentgym.Store(db).episode_rows(agentgym.Store(db).runs()[0]["id"])
    assert len(rows) == 3 and all(r["success"] for r in rows)
    bad = cli.invoke(app, [*args, "--backend", "dask"])
    assert bad.exit_code == 2 and "use one of local, ray" in bad.output
    stray = cli.invoke(app, [*args, "--address", "auto"])
    assert stray.exit_code == 2 and "needs backend='ray'" in stray.output


def test_cli_fails_fast_on_an_address_nobody_answers_at(tmp_path):
    with socket.socket() as s:  # a port that was free a moment ago: connecting is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["-a", "expert", "--limit", "1", "--db", str(tmp_path / "a.db")]
    done = subprocess.run(
        [sys.executable, "-m", "agentgym.cli", "eval", "clarify/test", *args, "--backend", "ray"]
        + ["--address", f"127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert f"no Ray cluster answers at '127.0.0.1:{port}'" in done.stderr
