import sqlite3

import pytest
from support import RaisingAgent, SlowNoopAgent, exploding_suite

import agentgym
from agentgym.runner import episode_seed
from agentgym.testing import noop_suite


def test_expert_solves_noop_suite_concurrently(tmp_path):
    result = agentgym.evaluate(
        noop_suite(40, length=5), "expert", concurrency=8, samples=2, db=tmp_path / "r.db"
    )
    rows = result.episode_rows()
    assert len(rows) == 80
    assert all(
        r["success"] and r["status"] == "limit" for r in rows
    )  # NoOp truncates at its length
    assert {(r["task_id"], r["sample"]) for r in rows} == {
        (f"noop-{i:05d}", s) for i in range(40) for s in (0, 1)
    }


def test_rerun_resumes_and_skips_finished(tmp_path):
    db = tmp_path / "r.db"
    suite = noop_suite(10, length=2)
    first = agentgym.evaluate(suite.filter(limit=4), "expert", db=db)
    assert len(first.new_episodes) == 4
    again = agentgym.evaluate(suite.filter(limit=4), "expert", db=db)
    assert again.run_id == first.run_id and again.new_episodes == [] and again.progress.skipped == 4


def test_errors_in_env_and_agent_are_recorded_not_raised(tmp_path):
    suite = exploding_suite(n_ok=3, n_boom=2)
    result = agentgym.evaluate(suite, "expert", db=tmp_path / "e.db", concurrency=2)
    rows = {r["task_id"]: r for r in result.episode_rows()}
    assert [rows[f"ok-{i}"]["status"] for i in range(3)] == ["limit"] * 3
    for tid in ("boom-3", "boom-4"):
        assert rows[tid]["status"] == "error" and rows[tid]["success"] is False
        assert "env exploded on purpose" in rows[tid]["error"]
    agent_err = agentgym.evaluate(noop_suite(2), RaisingAgent, db=tmp_path / "e.db")
    assert all("agent failed on purpose" in r["error"] for r in agent_err.episode_rows())


def test_errored_episodes_rerun_only_when_asked(tmp_path):
    db = tmp_path / "e.db"
    suite = exploding_suite(n_ok=1, n_boom=1)
    agentgym.evaluate(suite, "expert", db=db)
    assert agentgym.evaluate(suite, "expert", db=db).new_episodes == []
    retried = agentgym.evaluate(suite, "expert", db=db, retry_errors=True)
    assert [e.task_id for e in retried.new_episodes] == ["boom-1"]
    assert len(retried.episode_rows()) == 2


def test_steps_tokens_and_cost_are_stored(tmp_path):
    result = agentgym.evaluate(
        noop_suite(3, length=4), lambda env: SlowNoopAgent(env, 0.0), db=tmp_path / "t.db"
    )
    eps = list(result.store.episodes(result.run_id))
    assert [len(e.steps) for e in eps] == [4, 4, 4]
    assert eps[0].prompt_tokens == 40 and eps[0].completion_tokens == 8
    assert eps[0].cost == pytest.approx(0.004)
    assert [s.action for s in eps[0].steps] == ["noop"] * 4


def test_step_limit_and_seeds(tmp_path):
    result = agentgym.evaluate(noop_suite(2, length=50), "expert", max_steps=3, seed=7)
    eps = sorted(result.new_episodes, key=lambda e: e.task_id)
    assert [e.status for e in eps] == ["limit", "limit"] and all(not e.success for e in eps)
    assert [len(e.steps) for e in eps] == [3, 3]
    assert eps[0].seed == episode_seed(7, "noop-00000", 0) != eps[1].seed


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="concurrency"):
        agentgym.evaluate(noop_suite(1), "expert", concurrency=0)
    with pytest.raises(ValueError, match="unknown agent 'gpt'.*allowed: expert"):
        agentgym.evaluate(noop_suite(1), "gpt")
    with pytest.raises(FileNotFoundError, match="no task suite 'nope/test'.*clarify/test"):
        agentgym.evaluate("nope/test", "expert")


def test_store_file_is_wal_and_consistent(tmp_path):
    db = tmp_path / "w.db"
    agentgym.evaluate(noop_suite(5, length=3), "expert", db=db)
    con = sqlite3.connect(db)
    assert con.execute("pragma journal_mode").fetchone()[0] == "wal"
    assert con.execute("select count(*) from steps").fetchone()[0] == 15
    assert con.execute("select sum(steps) from episodes").fetchone()[0] == 15


def test_a_run_is_checked_once_and_its_episodes_build_envs_unchecked(tmp_path, monkeypatch):
    from agentgym import registry
    from agentgym.runner import check_run, run_checked

    checked = check_run(noop_suite(6, length=2), ["expert", "random"], concurrency=3)

    def again(*args):
        raise AssertionError("checked again while running")

    monkeypatch.setattr(registry, "check_isolate", again)  # what make() checks per env built
    monkeypatch.setattr(registry, "check_nesting", again)
    for agent in ("expert", "random"):
        result = run_checked(checked, agent, db=tmp_path / "r.db")
        assert [r["status"] for r in result.episode_rows()] == ["limit"] * 6
    with pytest.raises(ValueError, match="agent 'human' was not checked"):
        run_checked(checked, "human", db=tmp_path / "r.db")
