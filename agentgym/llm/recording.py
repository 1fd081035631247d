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
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

SESSION_HEADER = "x-session-id"
MAX_SESSION_ID = 200
DEFAULT_MAX_CALLS = 1000
"""Calls (requests) one session may make before the server refuses it with 429."""
KEEP_SESSIONS = 4096
"""Sessions whose texts are kept in memory for continuation (the oldest are forgotten)."""

_SESSIONS = {"id": str, "created_at": float, "max_calls": int, "calls": int, "meta": str}
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
}


class RecordingError(Exception):
    """A request recording refuses: the HTTP status and one line saying what to do."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


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
class _Prefix:
    """What a later call of the session may continue: text and ids of prompt plus sample."""

    call_id: int
    text: str
    ids: list[int]


@dataclass
class _Session:
    max_calls: int
    calls: int
    inflight: int = 0
    prefixes: list[_Prefix] = field(default_factory=list)


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
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db = sqlite_utils.Database(conn)  # explicit transactions below, one per call
        self.db.execute("PRAGMA busy_timeout=10000")
        self.db.enable_wal()
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.table("sessions").create(_SESSIONS, pk="id", if_not_exists=True)
        self.db.table("calls").create(_CALLS, pk="id", if_not_exists=True)
        self.db.table("calls").create_index(["session", "seq"], if_not_exists=True)
        self.open_sessions, self.max_calls = open_sessions, max_calls
        self._version = policy_version
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    # ------------------------------------------------------------------ sessions
    def open(self, session: str, max_calls: int | None = None, meta: Any = None) -> None:
        """Start ``session`` (a trainer, before its harness runs); an existing one is kept."""
        _check_id(session)
        limit = self.max_calls if max_calls is None else max_calls
        with self._lock:
            self._write(
                "insert or ignore into sessions values (?, ?, ?, 0, ?)",
                (session, time.time(), limit, json.dumps(meta)),
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
            "select max_calls, calls from sessions where id = ?", (session,)
        ).fetchone()
        if row is None:
            return None
        state = _Session(int(row[0]), int(row[1]))
        self._sessions[session] = state
        while len(self._sessions) > KEEP_SESSIONS:
            self._sessions.popitem(last=False)
        return state

    # ------------------------------------------------------------------ calls
    def plan(
        self,
        session: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tokenizer: Any,
    ) -> Plan:
        """Reserve a call of ``session`` and its prompt ids (continuing an earlier call when
        the text allows); a 404 for an unknown session, a 429 for one at its limit."""
        text = render_text(tokenizer, messages, tools)
        with self._lock:
            state = self._state(session)
            if state is None and self.open_sessions:
                self._write(
                    "insert or ignore into sessions values (?, ?, ?, 0, 'null')",
                    (session, time.time(), self.max_calls),
                )
                state = self._state(session)
            if state is None:
                raise RecordingError(
                    404,
                    f"unknown session {session!r}: this gateway records only the sessions its "
                    "trainer opened (use the session id it gave the agent)",
                    "session_not_found",
                )
            if state.calls + state.inflight >= state.max_calls:
                raise RecordingError(
                    429,
                    f"session {session!r} is over its limit of {state.max_calls} calls; "
                    "start a new session",
                    "session_limit",
                )
            seq = state.calls + state.inflight
            state.inflight += 1
            prefix = _longest_prefix(state.prefixes, text)
        if prefix is None:
            return Plan(session, seq, encode(tokenizer, text), text, None)
        ids = prefix.ids + encode(tokenizer, text[len(prefix.text) :])
        return Plan(session, seq, ids, text, prefix.call_id)

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
        with self._lock:
            state = self._sessions.get(plan.session) or self._state(plan.session)
            try:
                self.db.execute("begin immediate")
                for choice, g in enumerate(generations):
                    cursor = self.db.execute(
                        "insert into calls (session, seq, choice, created_at, policy_version, "
                        "parent, prompt_ids, completion_ids, logprobs, finish_reason, text, "
                        "messages, tools, request) "
                        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                for call_id, g in zip(ids, generations, strict=True):
                    sampled = tokenizer.decode(list(g.token_ids), skip_special_tokens=False)
                    ids_then = plan.prompt_ids + list(g.token_ids)
                    state.prefixes.append(_Prefix(call_id, plan.prompt_text + sampled, ids_then))
        return ids

    # ------------------------------------------------------------------ reading
    def calls(self, session: str) -> list[Call]:
        """Every recorded call of ``session`` in the order they were made."""
        with self._lock:
            rows = list(
                self.db.execute(
                    f"select {', '.join(c for c in _CALLS if c != 'tools')} from calls "
                    "where session = ? order by id",
                    (session,),
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
        cols = ", ".join(c for c in _CALLS if c != "tools")
        rows = conn.execute(
            f"select {cols} from calls where session = ? order by id", (session,)
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


def _longest_prefix(prefixes: list[_Prefix], text: str) -> _Prefix | None:
    best = None
    for p in prefixes:
        if text.startswith(p.text) and (best is None or len(p.text) > len(best.text)):
            best = p
    return best


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
