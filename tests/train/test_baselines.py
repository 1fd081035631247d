"""experiments/baselines.py: evenly spread subsets, resumable runs, the docs table."""

import contextlib
import io

from rich.console import Console

from experiments import baselines


def test_spread_takes_every_kth_task():
    from agentgym.task import TaskSuite

    suite = TaskSuite.load("clarify/test")
    sub = baselines.spread(suite, 30)
    assert len(sub) == 30 and sub.tasks[1] is suite.tasks[len(suite) // 30]
    assert {t.tags[0] for t in sub} != {suite.tasks[0].tags[0]}  # not just the first tag's tasks


def test_run_resumes_and_writes_the_docs_table(tmp_path):
    family = baselines.Family("clarify", "clarify/test", agents=("random", "expert"))
    db, quiet = tmp_path / "b.db", Console(file=io.StringIO())
    rows = baselines.run([family], 4, db, 2, quiet)
    assert [(r["agent"], r["episodes"], r["successes"]) for r in rows][1] == ("expert", 4, 4)
    again = baselines.run([family], 4, db, 2, quiet)  # nothing new: read back from the store
    assert [r["successes"] for r in again] == [r["successes"] for r in rows]
    doc = tmp_path / "results.md"
    doc.write_text(f"intro\n{baselines.START}\nold\n{baselines.END}\nrest\n")
    baselines.write_docs(baselines.markdown(rows, "CMD"), doc)
    text = doc.read_text()
    assert "old" not in text and "| clarify | expert | 4 | 1.00" in text and text.endswith("rest\n")


def test_stored_only_runs_nothing_and_marks_partial_families(tmp_path):
    from agentgym.store import Store

    family = baselines.Family("clarify", "clarify/test", agents=("random", "expert"))
    db, quiet = tmp_path / "b.db", Console(file=io.StringIO())
    assert baselines.run([family], 4, db, 2, quiet, stored_only=True) == []  # no store yet
    baselines.run([family], 4, db, 2, quiet)
    store = Store(db)
    expert = next(r for r in store.runs() if r["agent"] == "expert")
    store.db.execute(
        "delete from episodes where run_id = ? and rowid in "
        "(select rowid from episodes where run_id = ? limit 1)",
        [expert["id"]] * 2,
    )
    store.db.conn.commit()
    store.close()
    rows = baselines.run([family], 4, db, 2, quiet, stored_only=True)
    assert [(r["agent"], r["episodes"]) for r in rows] == [("random", 4), ("expert", 3)]
    assert rows[1]["suite"].endswith("(3 of 4)") and not rows[0]["suite"].endswith(")")
    with contextlib.closing(Store(db, read_only=True)) as after:
        assert len(after.episode_rows(expert["id"])) == 3  # nothing was run
