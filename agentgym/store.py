"""The SQLite store: one file, tables ``runs``, ``episodes``, ``steps`` (sqlite-utils, WAL).

An episode and its steps are written in one transaction keyed by (run, task, sample), so a process
killed at any moment leaves every finished episode exactly once and no partial one.

A file that is not a store, cannot be opened or written (read-only, disk full) is a
:class:`StoreError` naming the file and what went wrong, never an sqlite3 traceback; readers
(``report``, ``view``, ``export``) open with ``read_only=True`` and work on read-only files.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlite_utils
from pydantic import ValidationError

from agentgym.episode import Episode, Step, Usage
from agentgym.redact import redact, redact_text
from agentgym.safetext import clean

SCHEMA_VERSION = 1

_RUNS = {
    "id": str,
    "name": str,
    "suite": str,
    "agent": str,
    "config": str,
    "versions": str,
    "git_sha": str,
    "created_at": float,
}
_EPISODES = {
    "run_id": str,
    "task_id": str,
    "sample": int,
    "env_id": str,
    "seed": int,
    "status": str,
    "reward": float,
    "success": int,
    "score": float,
    "steps": int,
    "prompt_tokens": int,
    "completion_tokens": int,
    "cost": float,
    "started_at": float,
    "duration_s": float,
    "error": str,
    "instruction": str,
    "first_observation": str,
    "tags": str,
    "format_version": int,
    "escaped": str,
}
"""``escaped``: JSON list of the fields whose text was not valid Unicode (a lone surrogate) and was
stored with ``\\uXXXX`` escapes instead (``action`` of step 3 is ``steps.3.action``); NULL if none."""
_STEPS = {
    "run_id": str,
    "task_id": str,
    "sample": int,
    "t": int,
    "action": str,
    "observation": str,
    "reward": float,
    "terminated": int,
    "truncated": int,
    "valid": int,
    "info": str,
    "agent_latency_s": float,
    "env_latency_s": float,
    "usage": str,
}

_INSERT_EPISODE = (
    f"insert or replace into episodes ({', '.join(_EPISODES)}) "
    f"values ({', '.join(':' + c for c in _EPISODES)})"
)
_INSERT_STEP = (
    f"insert into steps ({', '.join(_STEPS)}) values ({', '.join(':' + c for c in _STEPS)})"
)


class StoreError(ValueError):
    """The store file cannot be used: not SQLite, not a store, read-only, or the disk is full."""


def connect_read_only(path: str | Path) -> sqlite3.Connection:
    """A read-only connection that also works where SQLite cannot create its WAL index file.

    ``mode=ro`` sees a concurrent writer's commits (the live viewer), but a WAL database in a
    read-only folder cannot be opened that way; there ``immutable=1`` (nobody can write it there).
    """
    uri = Path(path).resolve().as_uri()
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
        conn.execute("select count(*) from sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)


@contextlib.contextmanager
def _explained(path: Any, doing: str) -> Iterator[None]:
    """sqlite3 errors as one :class:`StoreError` line: the file, what we did, what went wrong."""
    try:
        yield
    except sqlite3.DatabaseError as e:
        hint = ""
        if "readonly" in str(e) or "unable to open" in str(e):
            hint = " (eval needs a writable file and folder; report, view and export read it)"
        elif "not a database" in str(e):
            hint = " (the file is not an SQLite database)"
        raise StoreError(f"cannot {doing.format(path=path)}: {e}{hint}") from None


class Store:
    """Results of evaluation runs in one SQLite file (``None`` or ``":memory:"`` for in-memory).

    ``read_only=True`` opens an existing store for reading only (reports of a read-only file).
    """

    def __init__(self, path: str | Path | None = None, read_only: bool = False) -> None:
        self.path = path
        if read_only:
            if path is None or str(path) == ":memory:" or not Path(path).is_file():
                raise StoreError(f"no store at {path} to read")
            with _explained(path, "read {path}"):
                self.db = sqlite_utils.Database(connect_read_only(path))
                self._check_tables()
            return
        in_memory = path is None or str(path) == ":memory:"
        with _explained(path, "open {path} for writing"):
            if in_memory:
                self.db = sqlite_utils.Database(memory=True)
            else:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite_utils.Database(path)
            self.db.execute("PRAGMA busy_timeout=10000")
            self.db.execute("PRAGMA trusted_schema=OFF")
            self._set_up(in_memory)
            self.runs()  # a run whose JSON was tampered with: one line now, not after the run

    def _set_up(self, in_memory: bool, tries: int = 200) -> None:
        """WAL, the trigger check and the schema, all idempotent, retried while another process
        sets up the same new file: shards opening one store at once otherwise fail with
        "database is locked" (SQLite does not wait on a lock a schema change meets with a
        stale read snapshot; 14 of 40 four-process opens failed without this)."""
        for attempt in range(tries):
            try:
                if not in_memory:
                    self.db.enable_wal()
                    self.db.execute("PRAGMA synchronous=NORMAL")
                self._refuse_triggers()
                self._create()
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or attempt == tries - 1:
                    raise
                time.sleep(0.01 * (1 + attempt % 10))

    def _refuse_triggers(self) -> None:
        """agentgym makes no triggers, so any trigger in the file was put there by someone else,
        and would run with every write eval makes: refuse the file instead."""
        names = [
            r[0] for r in self.db.execute("select name from sqlite_master where type='trigger'")
        ]
        if names:
            raise StoreError(
                f"{self.path} has SQLite triggers agentgym did not make ({', '.join(names)}); "
                "they would run on every write, so it is not opened for writing "
                "(report, view and export still read it; drop them with DROP TRIGGER to write)"
            )

    def _check_tables(self) -> None:
        missing = {"runs", "episodes", "steps"} - set(self.db.table_names())
        if missing:
            raise StoreError(f"{self.path} is not an agentgym store: no table {sorted(missing)}")

    def _create(self) -> None:
        self.db.table("runs").create(_RUNS, pk="id", if_not_exists=True)
        self.db.table("episodes").create(
            _EPISODES,
            pk=("run_id", "task_id", "sample"),
            if_not_exists=True,
            not_null={"run_id", "task_id", "sample", "status"},
        )
        self.db.table("steps").create(
            _STEPS, pk=("run_id", "task_id", "sample", "t"), if_not_exists=True
        )
        if "escaped" not in self.db.table("episodes").columns_dict:  # a store from before it
            self.db.execute("alter table episodes add column escaped text")
        # Covering index for the viewer's filters, sorts and comparisons (4-8x at 100k episodes).
        self.db.execute(
            "create index if not exists episodes_list on episodes (run_id, task_id, sample, success,"
            " status, steps, score, reward, duration_s, prompt_tokens, completion_tokens, cost,"
            " started_at, tags)"
        )
        self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ runs
    def start_run(
        self,
        run_id: str,
        name: str,
        suite: str,
        agent: str,
        config: dict[str, Any],
        versions: dict[str, str],
        git_sha: str | None,
    ) -> None:
        """Record a run unless it exists (a rerun of the same command resumes it).

        Secrets in the specs (``?api_key=``, URL passwords) are masked first: keys never reach
        the file (:mod:`agentgym.redact`). Text that is not valid Unicode is escaped as in
        episodes; runs have no ``escaped`` column (their text comes from the command line)."""
        escaped: list[str] = []
        with _explained(self.path, "write to {path}"), self.db.conn:
            self.db.table("runs").insert(
                {
                    "id": clean(run_id, "id", escaped),
                    "name": clean(redact(name), "name", escaped),
                    "suite": clean(redact(suite), "suite", escaped),
                    "agent": clean(redact(agent), "agent", escaped),
                    "config": json.dumps(redact(config), sort_keys=True, default=repr),
                    "versions": json.dumps(versions),
                    "git_sha": git_sha,
                    "created_at": time.time(),
                },
                ignore=True,
            )

    def runs(self) -> list[dict[str, Any]]:
        """All runs, oldest first, with their config decoded and secrets masked (stores written
        before redaction keep keys in clear: they are not shown)."""
        rows = list(self.db.query("select * from runs order by created_at"))
        for r in rows:
            for column in ("config", "versions"):
                try:
                    r[column] = json.loads(r[column] or "{}")
                except (json.JSONDecodeError, TypeError):
                    raise StoreError(
                        f"{self.path}: runs.{column} of run {str(r['id'])[:16]!r} is not JSON: "
                        "the store was changed by something other than agentgym"
                    ) from None
            r |= redact({k: r[k] for k in ("name", "suite", "agent", "config")})
        return rows

    def run(self, ref: str) -> dict[str, Any]:
        """A run by id, id prefix or name (the latest of that name)."""
        matches = [r for r in self.runs() if r["id"].startswith(ref) or r["name"] == ref]
        if not matches:
            known = ", ".join(f"{r['id'][:8]} ({r['name']})" for r in self.runs()) or "none"
            raise KeyError(f"no run {ref!r} in {self.path}; runs: {known}")
        return matches[-1]

    # ------------------------------------------------------------------ episodes
    def finished(self, run_id: str, include_errors: bool = True) -> set[tuple[str, int]]:
        """(task_id, sample) of the episodes already stored for ``run_id``."""
        where = "run_id = ?" + ("" if include_errors else " and status != 'error'")
        return {
            (r["task_id"], r["sample"])
            for r in self.db.query(f"select task_id, sample from episodes where {where}", [run_id])
        }

    def save_episode(self, run_id: str, ep: Episode, tags: list[str] | None = None) -> None:
        """Write an episode and its steps atomically, replacing an earlier attempt of the same key."""
        escaped: list[str] = []
        row = _episode_row(run_id, ep, tags or [], escaped)
        key = [row["run_id"], row["task_id"], ep.sample]
        steps = [_step_row(key, s, escaped) for s in ep.steps]
        row["escaped"] = json.dumps(escaped) if escaped else None
        # Plain executes on purpose: sqlite-utils' insert helpers commit on their own, which would
        # split this into several transactions and let a kill leave an episode without its steps.
        with _explained(self.path, "write to {path}"), self.db.conn as conn:
            conn.execute("delete from steps where run_id=? and task_id=? and sample=?", key)
            conn.execute(_INSERT_EPISODE, row)
            conn.executemany(_INSERT_STEP, steps)

    def episode_rows(self, run_id: str) -> list[dict[str, Any]]:
        """Episode summaries (no steps) of a run, with ``tags`` decoded and ``invalid_steps`` (steps
        whose action the env rejected) counted."""
        rows = list(
            self.db.query(
                "select e.*, (select count(*) from steps s where s.run_id = e.run_id"
                " and s.task_id = e.task_id and s.sample = e.sample and s.valid = 0)"
                " as invalid_steps from episodes e where e.run_id = ? order by e.task_id, e.sample",
                [run_id],
            )
        )
        for r in rows:
            r["tags"], r["success"] = json.loads(r["tags"] or "[]"), bool(r["success"])
        return rows

    def episodes(self, run_id: str) -> Iterator[Episode]:
        """Full episodes of a run, steps included."""
        for row in self.episode_rows(run_id):
            try:
                yield self._episode(run_id, row)
            except (ValidationError, ValueError, TypeError) as e:
                raise StoreError(
                    f"{self.path}: episode {row['task_id']!r} sample {row['sample']} of run "
                    f"{run_id[:16]!r} has a value agentgym did not write: {_first_error(e)}"
                ) from None

    def _episode(self, run_id: str, row: dict[str, Any]) -> Episode:
        """One episode from its row and its steps' rows."""
        steps = [
            Step(
                t=s["t"],
                action=s["action"],
                observation=s["observation"],
                reward=s["reward"],
                terminated=bool(s["terminated"]),
                truncated=bool(s["truncated"]),
                valid=bool(s["valid"]),
                info=json.loads(s["info"]),
                agent_latency_s=s["agent_latency_s"],
                env_latency_s=s["env_latency_s"],
                usage=Usage.model_validate_json(s["usage"]),
            )
            for s in self.db.query(
                "select * from steps where run_id=? and task_id=? and sample=? order by t",
                [run_id, row["task_id"], row["sample"]],
            )
        ]
        fields = {k: row[k] for k in Episode.model_fields if k in row and k != "steps"}
        return Episode(**fields, steps=steps)

    # ------------------------------------------------------------------ training metrics
    def save_train_metrics(
        self, run_id: str, step: int, metrics: dict[str, float], at: float | None = None
    ) -> None:
        """Record one training step's metrics (table ``train_metrics``, created on first use),
        written now or ``at`` (a restored step keeps its time).

        Long format, one row per (run, step, name): new metrics need no schema change, and a
        resumed run that repeats a step replaces its rows.
        """
        now = time.time() if at is None else at
        rows = [(run_id, step, name, float(value), now) for name, value in metrics.items()]
        with self.db.conn as conn:
            conn.execute(_TRAIN_METRICS)
            conn.executemany("insert or replace into train_metrics values (?, ?, ?, ?, ?)", rows)

    def train_metrics(self, run_id: str) -> list[dict[str, Any]]:
        """Rows ``{step, name, value, time}`` of a training run, by step then name."""
        if "train_metrics" not in self.db.table_names():
            return []
        return list(
            self.db.query(
                "select step, name, value, time from train_metrics where run_id = ? "
                "order by step, name",
                [run_id],
            )
        )


_TRAIN_METRICS = (
    "create table if not exists train_metrics (run_id text not null, step integer not null, "
    "name text not null, value real, time real, primary key (run_id, step, name))"
)


def _episode_row(run_id: str, ep: Episode, tags: list[str], escaped: list[str]) -> dict[str, Any]:
    """The ``episodes`` row of ``ep``, its text escaped where it is not valid Unicode."""
    row = {
        "run_id": run_id,
        "task_id": ep.task_id,
        "sample": ep.sample,
        "env_id": ep.env_id,
        "seed": ep.seed,
        "status": ep.status,
        "reward": ep.reward,
        "success": int(ep.success),
        "score": ep.score,
        "steps": ep.n_steps,
        "prompt_tokens": ep.prompt_tokens,
        "completion_tokens": ep.completion_tokens,
        "cost": ep.cost,
        "started_at": ep.started_at,
        "duration_s": ep.duration_s,
        "error": redact_text(ep.error) if ep.error else ep.error,  # a spec in a message
        "instruction": ep.instruction,
        "first_observation": ep.first_observation,
        "tags": json.dumps(clean(tags, "tags", escaped)),
        "format_version": ep.format_version,
    }
    return {k: clean(v, k, escaped) for k, v in row.items()}


def _step_row(key: list[Any], s: Step, escaped: list[str]) -> dict[str, Any]:
    """The ``steps`` row of ``s`` (``key``: its episode's, already escaped), text escaped."""
    where = f"steps.{s.t}"
    return {
        "run_id": key[0],
        "task_id": key[1],
        "sample": key[2],
        "t": s.t,
        "action": clean(s.action, f"{where}.action", escaped),
        "observation": clean(s.observation, f"{where}.observation", escaped),
        "reward": s.reward,
        "terminated": int(s.terminated),
        "truncated": int(s.truncated),
        "valid": int(s.valid),
        "info": json.dumps(clean(s.info, f"{where}.info", escaped), default=repr),
        "agent_latency_s": s.agent_latency_s,
        "env_latency_s": s.env_latency_s,
        "usage": _usage_json(s.usage, f"{where}.usage", escaped),
    }


def _usage_json(usage: Usage, where: str, escaped: list[str]) -> str:
    """``usage`` as JSON; pydantic refuses a lone surrogate (in ``history``), so those go escaped."""
    try:
        return usage.model_dump_json()
    except ValueError:  # PydanticSerializationError
        return Usage.model_validate(clean(usage.model_dump(), where, escaped)).model_dump_json()


def _first_error(e: Exception) -> str:
    """A validation error as ``field: message`` (its first problem), any other as its text."""
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        return f"{where}: {err['msg']} (got {str(err.get('input'))[:40]!r})"
    return f"{type(e).__name__}: {e}"
