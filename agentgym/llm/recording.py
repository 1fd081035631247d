"""Recording for ``agentgym serve --record DB``: every call of a session, as token ids.

An agent program that talks to the server over the OpenAI API can be trained on its own calls:
per session (named by the request's OpenAI ``user`` field, or the ``X-Session-Id`` header) the
server stores every request's prompt token ids as the model read them, the sampled token ids
(the end-of-sequence token included: stopping is an action), their logprobs, the finish reason
and the policy version. The ids and logprobs are those the engine returned while generating, so
recording costs no forward pass.

Token-exact continuation: a request whose chat template text starts with an earlier call's
prompt text followed by that call's sampled text (the agent sent back the reply it got and added
turns) is not tokenised again: its prompt is that call's prompt ids, its sampled ids, then the
ids of the new text alone. So the model reads exactly the tokens it sampled, and the calls form
one sequence a trainer can train as one row. A request that is not such a continuation (the agent
edited or cut its history, or the template rewrites earlier turns, as templates that drop earlier
``<think>`` blocks do) is rendered afresh; its ``parent`` is NULL and a trainer gives it a row of
its own.

Each call is one SQLite transaction (WAL, ``synchronous=FULL``): a server killed at any moment
keeps every call it answered. Nothing is recorded for a request that failed or whose client went
away before its answer.

A session is bound to a secret: the ``X-Session-Key`` header of the request that opened it (a
trainer's gateway: the key it gave the program). A request naming the session without that key is
refused, so no client adds calls to another's session. What a later call may continue is read
from the file (each call's prefix length and hash), never kept in memory, and one server holds an
exclusive lock on its file (``FILE-lock``): the file is the one count of a session's calls.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from agentgym.llm.recording_access import (
    KEY_HEADER,
    RecordingBusy,
    RecordingError,
    check_key,
    check_session_key,
    key_hash,
    lock_file,
)

__all__ = [
    "KEY_HEADER",
    "SESSION_HEADER",
    "Call",
    "Plan",
    "Recorder",
    "RecordingBusy",
    "RecordingError",
    "check_session_key",
    "key_hash",
    "read_calls",
]

SESSION_HEADER = "x-session-id"
MAX_SESSION_ID = 200
CONTINUE_FROM = 8
"""Earlier calls of a session a prompt is checked against for continuation: the longest that fit."""
DEFAULT_MAX_CALLS = 1000
"""Calls (requests) one session may make before the server refuses it with 429."""
KEEP_SESSIONS = 4096
"""Sessions whose counts are kept in memory (the oldest are read back from the file)."""

_SESSIONS = {
    "id": str,
    "created_at": float,
    "max_calls": int,
    "calls": int,
    "meta": str,
    "key_hash": str,
}
_CALLS = {
    "id": int,
    "session": str,
    "seq": int,
    "choice": int,
    "created_at": float,
    "policy_version": str,
    "parent": int,
    "prompt_ids": str,
    "completion_ids": str,
    "logprobs": str,
    "finish_reason": str,
    "text": str,
    "messages": str,
    "tools": str,
    "request": str,
    "prefix_len": int,
    "prefix_hash": str,
}
_SELECTED = ", ".join(c for c in _CALLS if c not in ("tools", "prefix_len", "prefix_hash"))


@dataclass(frozen=True)
class Call:
    """One recorded completion (one choice of one request)."""

    id: int
    session: str
    seq: int
    """The request's number in its session, from 0."""
    choice: int
    policy_version: str
    parent: int | None
    """The call whose prompt and sampled ids this prompt starts with (None: rendered afresh)."""
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    finish_reason: str
    text: str
    messages: list[dict[str, Any]]
    request: dict[str, Any]
    """How it was asked to sample: temperature, top_p, max_tokens, seed, stop."""


@dataclass
class _Session:
    max_calls: int
    calls: int
    key_hash: str | None
    inflight: int = 0


@dataclass
class Plan:
    """A request's prompt under recording, before it is generated."""

    session: str
    seq: int
    prompt_ids: list[int]
    prompt_text: str
    parent: int | None


class Recorder:
    """The recording of one server: sessions and their calls in the SQLite file at ``path``.

    ``open_sessions=True`` (``agentgym serve --record``) starts a session at its first request;
    False (a trainer's gateway) answers a session nobody :meth:`open`-ed with 404.
    ``policy_version`` names the weights that generate (a callable is asked at every call: a
    trainer's step).
    """

    def __init__(
        self,
        path: str | Path,
        open_sessions: bool = True,
        max_calls: int = DEFAULT_MAX_CALLS,
        policy_version: str | Callable[[], str] = "0",
    ) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(path)
        self._file_lock = lock_file(self.path)
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db = sqlite_utils.Database(conn)  # explicit transactions below, one per call
        self.db.execute("PRAGMA busy_timeout=10000")
        self.db.enable_wal()
        self.db.execute("PRAGMA synchronous=FULL")
        for name, columns in (("sessions", _SESSIONS), ("calls", _CALLS)):
            table = self.db.table(name)
            table.create(columns, pk="id", if_not_exists=True)
            for column, kind in columns.items():  # a file recorded by an earlier version
                if column not in table.columns_dict:
                    table.add_column(column, kind)
        self.db.table("calls").create_index(["session", "seq"], if_not_exists=True)
        self.open_sessions, self.max_calls = open_sessions, max_calls
        self._version = policy_version
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    # ------------------------------------------------------------------ sessions
    def open(self, session: str, key: str, max_calls: int | None = None, meta: Any = None) -> None:
        """Start ``session``, bound to ``key`` (a trainer, before its harness runs)."""
        _check_id(session)
        check_key(key, session)
        limit = self.max_calls if max_calls is None else max_calls
        with self._lock:
            self._write(
                "insert into sessions values (?, ?, ?, 0, ?, ?)",
                (session, time.time(), limit, json.dumps(meta), key_hash(key)),
            )
            self._state(session)

    def session_of(self, user: str | None, header: str | None) -> str:
        """The session a request names (``user`` field, else the header), or a 400."""
        if user and header and user != header:
            raise RecordingError(
                400,
                f"the request names two sessions: user {user!r} and {SESSION_HEADER} "
                f"{header!r}; send one, or the same in both",
            )
        name = user or header
        if not name:
            raise RecordingError(
                400,
                "this server records sessions: name one with the OpenAI 'user' field "
                f"(user=SESSION in the request) or the {SESSION_HEADER} header",
            )
        _check_id(name)
        return name

    def _state(self, session: str) -> _Session | None:
        """The session's state (under the lock); None for a session nobody opened."""
        state = self._sessions.get(session)
        if state is not None:
            self._sessions.move_to_end(session)
            return state
        row = self.db.execute(
            "select max_calls, calls, key_hash from sessions where id = ?", (session,)
        ).fetchone()
        if row is None:
            return None
        state = _Session(int(row[0]), int(row[1]), row[2])
        self._sessions[session] = state
        while len(self._sessions) > KEEP_SESSIONS:
            self._sessions.popitem(last=False)
        return state

    # ------------------------------------------------------------------ calls
    def plan(
        self,
        session: str,
        key: str | None,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tokenizer: Any,
    ) -> Plan:
        """Reserve a call of ``session`` and its prompt ids (continuing an earlier call when
        the text allows); a 401 or 403 without the session's key, a 404 for an unknown
        session, a 429 for one at its limit."""
        text = render_text(tokenizer, messages, tools)
        with self._lock:
            state = self._state(session)
            if state is None and self.open_sessions:
                check_key(key, session)
                self._write(
                    "insert or ignore into sessions values (?, ?, ?, 0, 'null', ?)",
                    (session, time.time(), self.max_calls, key_hash(str(key))),
                )
                state = self._state(session)
            if state is None:
                raise RecordingError(
                    404,
                    f"unknown session {session!r}: this gateway records only the sessions its "
                    "trainer opened (use the session id it gave the agent)",
                    "session_not_found",
                )
            check_session_key(session, state.key_hash, key)
            if state.calls + state.inflight >= state.max_calls:
                raise RecordingError(
                    429,
                    f"session {session!r} is over its limit of {state.max_calls} calls; "
                    "start a new session",
                    "session_limit",
                )
            seq = state.calls + state.inflight
            state.inflight += 1
            candidates = self.db.execute(
                "select id, prefix_len, prefix_hash from calls where session = ? and "
                "prefix_len <= ? order by prefix_len desc, id desc limit ?",
                (session, len(text), CONTINUE_FROM),
            ).fetchall()
        try:
            return self._prompt(session, seq, text, candidates, tokenizer)
        except BaseException:
            self.release(Plan(session, seq, [], text, None))
            raise

    def _prompt(
        self, session: str, seq: int, text: str, candidates: list[Any], tokenizer: Any
    ) -> Plan:
        """The prompt ids of ``text``: the longest earlier call it continues, then its rest."""
        parent = next((c for c in candidates if _digest(text[: c[1]]) == c[2]), None)
        if parent is None:
            return Plan(session, seq, encode(tokenizer, text), text, None)
        with self._lock:
            prompt, sampled = self.db.execute(
                "select prompt_ids, completion_ids from calls where id = ?", (parent[0],)
            ).fetchone()
        ids = json.loads(prompt) + json.loads(sampled) + encode(tokenizer, text[parent[1] :])
        return Plan(session, seq, ids, text, int(parent[0]))

    def release(self, plan: Plan) -> None:
        """Give back a planned call that was not answered (failed, timed out, disconnected)."""
        with self._lock:
            state = self._sessions.get(plan.session)
            if state is not None:
                state.inflight = max(0, state.inflight - 1)

    def record(
        self,
        plan: Plan,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        generations: Sequence[Any],
        tokenizer: Any,
        request: dict[str, Any] | None = None,
    ) -> list[int]:
        """Store every choice of an answered call in one transaction; return their call ids.
        ``request``: how it was asked to sample (filed with the call)."""
        version = self._version() if callable(self._version) else self._version
        now, ids = time.time(), []
        prefixes = [  # what a later call continues: the prompt's text, then the sampled text
            plan.prompt_text + tokenizer.decode(list(g.token_ids), skip_special_tokens=False)
            for g in generations
        ]
        with self._lock:
            state = self._sessions.get(plan.session) or self._state(plan.session)
            try:
                self.db.execute("begin immediate")
                for choice, (g, prefix) in enumerate(zip(generations, prefixes, strict=True)):
                    cursor = self.db.execute(
                        "insert into calls (session, seq, choice, created_at, policy_version, "
                        "parent, prompt_ids, completion_ids, logprobs, finish_reason, text, "
                        "messages, tools, request, prefix_len, prefix_hash) "
                        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            plan.session,
                            plan.seq,
                            choice,
                            now,
                            str(version),
                            plan.parent,
                            json.dumps(plan.prompt_ids),
                            json.dumps(list(g.token_ids)),
                            json.dumps(list(g.logprobs)),
                            g.finish_reason,
                            json.dumps(g.text),
                            json.dumps(messages),
                            json.dumps(tools),
                            json.dumps(request or {}),
                            len(prefix),
                            _digest(prefix),
                        ),
                    )
                    ids.append(int(cursor.lastrowid or 0))
                self.db.execute(
                    "update sessions set calls = calls + 1 where id = ?", (plan.session,)
                )
                self.db.execute("commit")
            except BaseException:
                self.db.execute("rollback")
                raise
            finally:
                if state is not None:
                    state.inflight = max(0, state.inflight - 1)
            if state is not None:
                state.calls += 1
        return ids

    # ------------------------------------------------------------------ reading
    def calls(self, session: str) -> list[Call]:
        """Every recorded call of ``session`` in the order they were made."""
        with self._lock:
            rows = list(
                self.db.execute(
                    f"select {_SELECTED} from calls where session = ? order by id", (session,)
                )
            )
        return [_call(row) for row in rows]

    def sessions(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self.db.execute("select id from sessions order by rowid")]

    def forget(self, session: str) -> None:
        """Drop the in-memory state of a finished session (its calls stay in the file)."""
        with self._lock:
            self._sessions.pop(session, None)

    def close(self) -> None:
        with self._lock:
            self.db.conn.close()
            os.close(self._file_lock)  # after SQLite's own descriptors: its locks are its own

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        self.db.execute("begin immediate")
        try:
            self.db.execute(sql, params)
            self.db.execute("commit")
        except BaseException:
            self.db.execute("rollback")
            raise


def read_calls(path: str | Path, session: str) -> list[Call]:
    """The calls of ``session`` in a recording file (read-only; a server may be writing it)."""
    from agentgym.store import connect_read_only

    conn = connect_read_only(path)
    try:
        rows = conn.execute(
            f"select {_SELECTED} from calls where session = ? order by id", (session,)
        ).fetchall()
    finally:
        conn.close()
    return [_call(row) for row in rows]


def _call(row: Sequence[Any]) -> Call:
    (
        id_,
        session,
        seq,
        choice,
        _,
        version,
        parent,
        prompt,
        completion,
        lps,
        reason,
        text,
        msgs,
        asked,
    ) = row
    return Call(
        int(id_),
        session,
        int(seq),
        int(choice),
        version,
        None if parent is None else int(parent),
        json.loads(prompt),
        json.loads(completion),
        [float(x) for x in json.loads(lps)],
        reason,
        json.loads(text),
        json.loads(msgs),
        json.loads(asked or "{}"),
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _check_id(session: str) -> None:
    if not session or len(session) > MAX_SESSION_ID or not session.isprintable():
        raise RecordingError(
            400,
            f"session id {session[:40]!r}... is not allowed: use 1 to {MAX_SESSION_ID} "
            "printable characters",
        )


def render_text(tokenizer: Any, messages: list[dict[str, Any]], tools: Any) -> str:
    """The chat template's text of a prompt (``add_generation_prompt``)."""
    return str(
        tokenizer.apply_chat_template(
            messages, tools=tools, add_generation_prompt=True, tokenize=False
        )
    )


def encode(tokenizer: Any, text: str) -> list[int]:
    """Ids of template text, as ``apply_chat_template(tokenize=True)`` makes them."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def without_eos(generation: Any, eos_id: int | None) -> Any:
    """A generation as a client sees it: without the end-of-sequence token recording keeps."""
    ids = list(generation.token_ids)
    if ids and ids[-1] == eos_id and generation.finish_reason == "stop":
        return generation.model_copy(
            update={"token_ids": ids[:-1], "logprobs": list(generation.logprobs)[:-1]}
        )
    return generation
