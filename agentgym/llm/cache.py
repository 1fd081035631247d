"""LLM call cache in SQLite, keyed by the full request (episode seed included).

With the cache on, rerunning an eval replays every model call exactly: same request, same seed,
same answer, no API cost. Thread-safe; one file can serve many runs.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path

from agentgym.llm.base import ChatRequest, ChatResponse


def cache_key(backend: str, request: ChatRequest) -> str:
    """sha256 of the backend and the canonical JSON of the whole request (an unset ``top_p``
    left out, as requests were before they carried it)."""
    text = request.model_dump_json(exclude={"top_p"} if request.top_p is None else None)
    return hashlib.sha256(f"{backend}\n{text}".encode()).hexdigest()


class LLMCache:
    """A table ``llm_cache(key, response)`` in a SQLite file (WAL)."""

    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self._conn.execute("pragma journal_mode=wal")
        self._conn.execute(
            "create table if not exists llm_cache (key text primary key, response text not null)"
        )
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: str) -> ChatResponse | None:
        with self._lock:
            row = self._conn.execute(
                "select response from llm_cache where key = ?", [key]
            ).fetchone()
            self.hits, self.misses = self.hits + bool(row), self.misses + (not row)
        if not row:
            return None
        # json.loads, not pydantic's parser: a "\\ud800" escape must come back as it was put
        return ChatResponse.model_validate(json.loads(row[0])).model_copy(update={"cached": True})

    def put(self, key: str, response: ChatResponse) -> None:
        with self._lock, self._conn:
            self._conn.execute(
                "insert or replace into llm_cache (key, response) values (?, ?)",
                [key, json.dumps(response.model_dump(mode="json"))],  # ASCII: any str survives
            )
