"""Read-only access to a store file from the viewer's worker threads.

The viewer never writes: each thread keeps its own SQLite connection with ``query_only`` set, so a
running eval (the single writer, WAL mode) and the viewer never block each other.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from agentgym.store import connect_read_only

TABLES = ("runs", "episodes", "steps")
MMAP_BYTES = 1 << 30
CACHE_KIB = 64 * 1024
CACHE_ENTRIES = 32
T = TypeVar("T")


class StoreReader:
    """Thread-local read-only connections to one store file, checked once on opening."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(
                f"no store at {self.path}; make one with `agentgym eval SUITE -a AGENT --db "
                f"{self.path}`"
            )
        self._local = threading.local()
        self._lock = threading.Lock()
        self._cache: dict[tuple[Any, ...], Any] = {}
        self._check_tables()

    def _check_tables(self) -> None:
        try:
            names = {r["name"] for r in self.query("select name from sqlite_master")}
        except sqlite3.DatabaseError as e:
            raise ValueError(f"{self.path} is not an SQLite store: {e}") from None
        missing = [t for t in TABLES if t not in names]
        if missing:
            raise ValueError(
                f"{self.path} is not an agentgym store: no table {', '.join(missing)} "
                f"(expected tables {', '.join(TABLES)})"
            )

    @property
    def conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect_read_only(self.path)  # read-only files and folders too
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA query_only=1")
            conn.execute("PRAGMA busy_timeout=5000")
            # Scans of big runs read every episode row: mapping the file and a larger page cache
            # make them 2-3x faster than SQLite's default 2 MB cache of copied pages.
            conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
            self._local.conn = conn
        return conn

    def query(self, sql: str, args: list[Any] | tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Rows as dicts (one short read transaction)."""
        return [dict(r) for r in self.conn.execute(sql, args)]

    def one(self, sql: str, args: list[Any] | tuple[Any, ...] = ()) -> dict[str, Any] | None:
        row = self.conn.execute(sql, args).fetchone()
        return dict(row) if row is not None else None

    def run_exists(self, run_id: str) -> None:
        """KeyError naming the store when ``run_id`` is not a run of it."""
        if self.one("select 1 as ok from runs where id = ?", [run_id]) is None:
            raise KeyError(f"no run {run_id!r} in {self.path}")

    def cached(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """``compute()`` once per store version: whole-run aggregates are not redone per view."""
        full = (*key, self.version())
        with self._lock:
            if full in self._cache:
                return self._cache[full]  # type: ignore[no-any-return]
        value = compute()
        with self._lock:
            self._cache[full] = value
            while len(self._cache) > CACHE_ENTRIES:
                self._cache.pop(next(iter(self._cache)))
        return value

    def version(self) -> str:
        """Changes whenever a run or an episode is written: the live view polls this."""
        row = self.one(
            "select (select count(*) from runs) as runs, "
            "(select coalesce(max(rowid), 0) from episodes) as episodes"
        )
        assert row is not None
        return f"{row['runs']}-{row['episodes']}"
