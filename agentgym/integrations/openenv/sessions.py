"""The sessions of ``agentgym env serve``: one per WebSocket connection, closed with a reason.

openenv-core's server keeps a session per WebSocket and runs its messages in a thread of its
own; its reaper closes idle sessions' envs. What it leaves open, and this module closes:

- a session exists only with a connection: HTTP ``POST /mcp openenv/session/create`` would hold
  a slot that no connection ever frees (every WebSocket client locked out until the idle timeout);
- a closed session's socket closes too, with its reason (idle, shutting down), and a client
  refused for want of a slot gets close code 1013 "server full: N sessions";
- closing never waits on a step: a session whose step still runs is closed beside it (closing
  a sandboxed env stops the step), and its handler stops waiting at once, so neither the idle
  reaper nor shutdown (SIGTERM) hangs on a step that does not return;
- a step that runs is activity: the idle clock starts when a message arrives, so a session is
  reaped when its client is silent, or its step runs, longer than the idle timeout.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
from collections.abc import Callable
from typing import Any

from openenv.core.env_server.exceptions import SessionCapacityError
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import WSErrorCode, WSErrorResponse

CLOSE_WAIT_S = 10.0
"""Seconds a closing session waits for its env's ``close`` (then it goes on without)."""
SERVER_FULL = 1013
"""WebSocket close code "try again later": every session slot is taken."""
GOING_AWAY = 1001
"""WebSocket close code of a server that shuts down."""
NO_CONNECTION = (
    "sessions here are WebSocket connections (/ws): a session without one is not created; "
    "connect to /ws and send reset"
)
log = logging.getLogger("agentgym.env_serve")


class SessionClosed(Exception):
    """The session closed while one of its messages ran; the message's answer is not sent."""


class Connection:
    """One WebSocket connection; ``close`` makes its next receive a disconnect, after the
    middleware has sent the reason (an error message, then the close frame)."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()
        self.reason = ""
        self.code = 1000
        self.error = WSErrorCode.SESSION_ERROR

    def close(
        self, reason: str, code: int = 1000, error: WSErrorCode = WSErrorCode.SESSION_ERROR
    ) -> None:
        """Close with ``reason``: an error message of kind ``error``, then close code ``code``."""
        if not self.closed.is_set():
            self.reason, self.code, self.error = reason, code, error
            self.closed.set()


_connection: contextvars.ContextVar[Connection | None] = contextvars.ContextVar(
    "agentgym_openenv_connection", default=None
)


class ClosableSockets:
    """ASGI middleware: every WebSocket gets a :class:`Connection` the server can close (the
    session's handler is openenv-core's, waiting on a receive that this middleware ends). Once
    it is closed, the middleware alone speaks for it: the handler's own sends are dropped."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        conn = Connection()
        sent_close = left = False

        async def say_close() -> None:
            nonlocal sent_close
            if sent_close:
                return
            sent_close = True
            error = WSErrorResponse(data={"message": conn.reason, "code": conn.error})
            with contextlib.suppress(OSError):  # uvicorn's ClientDisconnected: the client left
                await send({"type": "websocket.send", "text": error.model_dump_json()})
                reason = conn.reason.encode()[:123].decode(errors="ignore")  # a frame's limit
                await send({"type": "websocket.close", "code": conn.code, "reason": reason})

        async def guarded_send(message: dict) -> None:
            nonlocal sent_close, left
            if conn.closed.is_set():  # the handler's error or close after ours: ours is said
                if message["type"] == "websocket.close":
                    await say_close()
                return
            if sent_close:
                return
            sent_close = message["type"] == "websocket.close"
            try:
                await send(message)
            except OSError:  # uvicorn's ClientDisconnected: the client left first
                if not sent_close:
                    left = True
                    raise

        async def closable_receive() -> dict:
            if not conn.closed.is_set():
                get = asyncio.ensure_future(receive())
                stop = asyncio.ensure_future(conn.closed.wait())
                done, _ = await asyncio.wait({get, stop}, return_when=asyncio.FIRST_COMPLETED)
                if stop not in done:
                    stop.cancel()
                    return get.result()
                get.cancel()  # closed: a message that came meanwhile is not served
            await say_close()
            return {"type": "websocket.disconnect", "code": conn.code}

        token = _connection.set(conn)
        try:
            await self.app(scope, closable_receive, guarded_send)
        except Exception:
            if not left:
                raise
            # the handler failed to answer a client that had left (it tries to send an error
            # on a closed socket): nobody to tell, nothing to log
        finally:
            _connection.reset(token)


class SessionServer(HTTPEnvServer):  # type: ignore[misc]
    """openenv-core's server with the session rules above; ``close_all`` at shutdown."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._connections: dict[str, Connection] = {}
        self._running: dict[str, concurrent.futures.Future[Any]] = {}
        self._orphans: set[concurrent.futures.Future[Any]] = set()  # steps of closed sessions
        self._closing = ""  # why every session closes (shutdown); empty: idle sessions only
        self._closing_code = 1000

    async def _create_session(self) -> tuple[str, Environment]:
        conn = _connection.get()
        if conn is None:  # HTTP /mcp: no connection would ever close it
            raise SessionCapacityError(
                len(self._sessions), self._max_concurrent_envs, message=NO_CONNECTION
            )
        try:
            session_id, env = await super()._create_session()
        except SessionCapacityError as e:
            full = f"server full: {e.max_sessions} sessions; try again later"
            conn.close(full, SERVER_FULL, WSErrorCode.CAPACITY_REACHED)
            raise
        self._connections[session_id] = conn
        return session_id, env

    async def _run_in_session_executor(
        self, session_id: str, func: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Any:
        """Run one message in the session's thread; stop waiting for it when the session closes
        (the thread runs on until the step returns, its answer unsent)."""
        self._update_session_activity(session_id)  # a message that runs is not idleness
        executor = self._session_executors.get(session_id, self._executor)
        future = executor.submit(func, *args, **kwargs)
        self._running[session_id] = future
        conn = self._connections.get(session_id)
        answer = asyncio.wrap_future(future)
        if conn is None:
            return await answer
        closed = asyncio.ensure_future(conn.closed.wait())
        try:
            done, _ = await asyncio.wait({answer, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
        if answer in done:
            return answer.result()
        answer.add_done_callback(_retrieve)
        raise SessionClosed(conn.reason)

    async def _destroy_session(self, session_id: str) -> None:
        conn = self._connections.pop(session_id, None)
        if conn is not None:  # first, so the session serves no message after this
            conn.close(self._closing or self._idle_reason(), self._closing_code)
        async with self._session_lock:
            env = self._sessions.pop(session_id, None)
            executor = self._session_executors.pop(session_id, None)
            stack = self._session_stacks.pop(session_id, None)
            self._session_info.pop(session_id, None)
        running = self._running.pop(session_id, None)
        busy = running is not None and not running.done()
        if busy:
            self._orphans.add(running)
            running.add_done_callback(self._orphans.discard)
        await self._close_env(env, executor, stack, beside=busy)

    async def _close_env(
        self,
        env: Environment | None,
        executor: concurrent.futures.ThreadPoolExecutor | None,
        stack: contextlib.AsyncExitStack | None,
        beside: bool,
    ) -> None:
        """Close ``env`` in its session's thread, or ``beside`` a step that still holds that
        thread (closing the env's sandbox ends the step); wait at most :data:`CLOSE_WAIT_S`."""
        if stack is not None:
            with contextlib.suppress(Exception):
                await stack.aclose()
        if env is not None:
            loop = asyncio.get_running_loop()
            closing = loop.run_in_executor(None if beside else executor, env.close)
            done, _ = await asyncio.wait({closing}, timeout=CLOSE_WAIT_S)
            if not done:
                closing.add_done_callback(_retrieve)
                log.warning("a session's env did not close within %g s; going on", CLOSE_WAIT_S)
            elif error := closing.exception():
                log.warning("a session's env failed to close: %s", error)
        if executor is not None and executor is not self._shared_session_executor:
            executor.shutdown(wait=False)

    def _idle_reason(self) -> str:
        idle = self._session_idle_timeout_s
        return f"session closed: idle for more than {idle:g} s; connect again"

    def running_steps(self) -> int:
        """Messages still running in session threads (of sessions open or closed)."""
        running = [*self._running.values(), *list(self._orphans)]
        return sum(not f.done() for f in running)

    async def close_all(self) -> int:
        """Close every session still open (at shutdown); returns how many there were."""
        self._closing = "session closed: the server is shutting down"
        self._closing_code = GOING_AWAY
        ids = list(self._sessions)
        await asyncio.gather(*(self._destroy_session(i) for i in ids))
        return len(ids)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a finished future's outcome as read, so asyncio does not log it as lost."""
    if not future.cancelled():
        future.exception()
