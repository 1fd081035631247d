"""Any registered agentgym env as an OpenEnv server (``agentgym env serve ENV_ID``).

Built on openenv-core's own server (``HTTPEnvServer``: ``/ws``, ``/reset``, ``/step``, ``/state``,
``/schema``, ``/health``), so its clients (``GenericEnvClient``, TRL, SkyRL ...) work unchanged. A
session is one WebSocket connection with one env instance of its own, built on the session's
first reset (in a sandbox with ``isolate``); up to ``max_sessions`` run at once, each in its own
thread. What this module adds to openenv-core's server:

- the wire format of every agentgym env: the action ``{"message": TEXT}``, the observation
  ``{"text", "info", "terminated", "truncated"}`` plus OpenEnv's ``reward`` and ``done``; reset
  takes ``task`` (a task id, or a whole task as a JSON object) or ``seed``;
- ``GET /agentgym``: what agentgym's own client needs to build chat prompts (the system prompt,
  the action style), so ``openenv:URL`` env ids train and evaluate like local envs;
- an idle session is closed, its socket too (openenv-core's reaper closes only the env), and
  shutdown (SIGTERM) closes every session that is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import (
    Action,
    ConcurrencyConfig,
    EnvironmentMetadata,
    Observation,
    State,
    WSErrorCode,
    WSErrorResponse,
)
from pydantic import Field

from agentgym.env import NoExpert
from agentgym.task import Task, tasks_from_client

RESET_KEYS = ("task", "seed", "episode_id")


class TextAction(Action):
    """An agentgym action: one text, in the syntax the env's system prompt describes."""

    message: str = Field(..., description="The action text (GET /agentgym has the system prompt)")


class TextObservation(Observation):
    """An agentgym observation; ``reward`` and ``done`` are OpenEnv's own fields."""

    text: str = Field("", description="What the agent sees")
    info: dict[str, Any] = Field(
        default_factory=dict,
        description="The env's info: task_id, instruction, available_actions or tools; at the "
        "end success and score; valid=false for a malformed action",
    )
    terminated: bool = Field(False, description="The episode ended in the env")
    truncated: bool = Field(False, description="The episode was cut by a limit")


@dataclass(frozen=True)
class ServeSettings:
    """What every session of one server shares."""

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Checked constructor keywords (``-E KEY=VALUE``, ``--suite``)."""
    isolate: str | None = None
    expert: bool = False
    """Put the env's expert action in every observation's info (``expert_action``): for
    demonstrations and checks; it gives the answer away, so it is off unless asked for."""


class AgentgymEnvironment(Environment):  # type: ignore[misc]
    """One session's env behind OpenEnv's Environment interface."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every session builds an env of its own

    def __init__(self, settings: ServeSettings) -> None:
        super().__init__()
        self.settings = settings
        self.env: Any = None
        self.running = False
        self._state = State(episode_id=None, step_count=0)

    def _env(self) -> Any:
        """Built on first use: OpenEnv's stateless HTTP routes build an Environment per call."""
        if self.env is None:
            from agentgym.registry import spec

            self.env = spec(self.settings.env_id).make(
                self.settings.isolate, **self.settings.env_kwargs
            )
        return self.env

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> TextObservation:
        unknown = sorted(set(kwargs) - set(RESET_KEYS))
        if unknown:
            raise ValueError(
                f"reset got {', '.join(unknown)}; it takes task=TASK_ID (or a task as a JSON "
                "object), seed=N and episode_id"
            )
        task = kwargs.get("task")
        if task is not None and not isinstance(task, (str, dict)):
            raise ValueError(f"task must be a task id or a task object, got {type(task).__name__}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
        try:
            if isinstance(task, dict):  # a client's task is data: checked here, as data
                task = _client_task(self.settings.env_id, task)
            with tasks_from_client():
                obs, info = self._env().reset(seed=seed, options={"task": task})
        except KeyError as e:  # an unknown task id: say which, as a ValueError's plain text
            raise ValueError(str(e.args[0]) if e.args else str(e)) from None
        self.running = True
        self._state = State(
            episode_id=episode_id or str(uuid.uuid4()), step_count=0, task_id=info["task_id"]
        )
        return self._observation(obs, None, False, False, info)

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:
        if not self.running:
            raise ValueError(
                "no episode started yet: send reset (task=TASK_ID or seed=N) first; "
                "episodes live in WebSocket sessions (/ws), the HTTP /step is stateless"
            )
        obs, reward, terminated, truncated, info = self.env.step(action.message)
        self._state.step_count += 1
        return self._observation(obs, float(reward), terminated, truncated, info)

    def _observation(
        self, text: str, reward: float | None, terminated: bool, truncated: bool, info: dict
    ) -> TextObservation:
        info = _json_safe(info)
        if self.settings.expert and not (terminated or truncated):
            with contextlib.suppress(NoExpert):
                info["expert_action"] = self.env.unwrapped.expert_action()
        done = bool(terminated or truncated)
        return TextObservation(
            text=text,
            info=info,
            terminated=bool(terminated),
            truncated=bool(truncated),
            reward=reward,
            done=done,
        )

    @property
    def state(self) -> State:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        from agentgym.registry import spec

        s = spec(self.settings.env_id)
        return EnvironmentMetadata(name=s.id, description=s.description or s.id, version=_version())

    def close(self) -> None:
        env, self.env, self.running = self.env, None, False
        if env is not None:
            env.close()


def _client_task(env_id: str, task: dict[str, Any]) -> Task:
    """A task object from a client, validated by the served env as a client's: its fields are
    data (an env config that names a host path refuses), and a bad one is a plain ValueError."""
    from pydantic import ValidationError

    from agentgym.registry import spec

    with tasks_from_client():
        try:
            parsed = Task.model_validate(task)
            spec(env_id).load().validate_task(parsed)
        except ValidationError as e:
            raise ValueError(f"bad task object: {e}") from None
    return parsed


def _json_safe(info: dict[str, Any]) -> dict[str, Any]:
    """Info as JSON can carry it (a value JSON refuses becomes its repr)."""
    return json.loads(json.dumps(info, default=repr))


def _version() -> str:
    from importlib.metadata import version

    return version("agentgym")


def env_traits(env_id: str, expert: bool = False) -> dict[str, Any]:
    """What ``GET /agentgym`` says about the env: what a chat agent needs before the first reset
    (the env's traits, its demonstration turns and its sampling spec, stop included)."""
    from agentgym.llm.sampling import SamplingSpec
    from agentgym.registry import spec
    from agentgym.traits import demonstration, traits

    s = spec(env_id)
    cls = s.load()
    declared = traits(cls)
    return {
        "env_id": s.id,
        "description": s.description,
        **declared.model_dump(mode="json"),
        "demonstration": demonstration(cls()) if declared.demo_suite is not None else [],
        "sampling": SamplingSpec().for_env(cls).model_dump(mode="json"),
        "expert": expert,
        "agentgym_version": _version(),
    }


# ---------------------------------------------------------------------- idle sessions close sockets
class _Connection:
    """One WebSocket connection; ``close`` makes its next receive a disconnect."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()
        self.reason = ""

    def close(self, reason: str) -> None:
        if not self.closed.is_set():
            self.reason = reason
            self.closed.set()


_connection: contextvars.ContextVar[_Connection | None] = contextvars.ContextVar(
    "agentgym_openenv_connection", default=None
)


class _ClosableSockets:
    """ASGI middleware: every WebSocket gets a :class:`_Connection` the server can close (the
    session's handler is openenv-core's, waiting on a receive that this middleware ends)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        conn = _Connection()
        sent_close = False

        async def guarded_send(message: dict) -> None:
            nonlocal sent_close
            if sent_close:  # the handler's own close after ours: nothing more to say
                return
            sent_close = message["type"] == "websocket.close"
            try:
                await send(message)
            except OSError:  # uvicorn's ClientDisconnected: the client left first
                if not sent_close:
                    raise

        async def closable_receive() -> dict:
            nonlocal sent_close
            if not conn.closed.is_set():
                get = asyncio.ensure_future(receive())
                stop = asyncio.ensure_future(conn.closed.wait())
                done, _ = await asyncio.wait({get, stop}, return_when=asyncio.FIRST_COMPLETED)
                if stop not in done:
                    stop.cancel()
                    return get.result()
                get.cancel()  # closed: a message that came meanwhile is not served
            if not sent_close:
                error = WSErrorResponse(
                    data={"message": conn.reason, "code": WSErrorCode.SESSION_ERROR}
                )
                await send({"type": "websocket.send", "text": error.model_dump_json()})
                await send({"type": "websocket.close", "code": 1000, "reason": conn.reason[:120]})
                sent_close = True
            return {"type": "websocket.disconnect", "code": 1000}

        token = _connection.set(conn)
        try:
            await self.app(scope, closable_receive, guarded_send)
        finally:
            _connection.reset(token)


class AgentgymEnvServer(HTTPEnvServer):  # type: ignore[misc]
    """openenv-core's server, plus: a reaped session's socket closes; shutdown closes all."""

    def __init__(self, settings: ServeSettings, max_sessions: int, idle_timeout_s: float | None):
        super().__init__(
            functools.partial(AgentgymEnvironment, settings),
            TextAction,
            TextObservation,
            concurrency_config=ConcurrencyConfig(
                max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s
            ),
        )
        self.settings = settings
        self._connections: dict[str, _Connection] = {}
        self._closing = ""  # why every session closes (shutdown); empty: idle sessions only

    async def _create_session(self) -> tuple[str, Environment]:
        session_id, env = await super()._create_session()
        conn = _connection.get()
        if conn is not None:
            self._connections[session_id] = conn
        return session_id, env

    async def _destroy_session(self, session_id: str) -> None:
        conn = self._connections.pop(session_id, None)
        if conn is not None:  # first, so the session serves no message after this
            # (the reaper's call; the handler's own, on its way out, finds nothing left to close)
            conn.close(self._closing or self._idle_reason())
        await super()._destroy_session(session_id)

    def _idle_reason(self) -> str:
        idle = self._session_idle_timeout_s
        return f"session closed: idle for more than {idle:g} s; connect again"

    async def close_all(self) -> int:
        """Close every session still open (at shutdown); returns how many there were."""
        self._closing = "session closed: the server is shutting down"
        ids = list(self._sessions)
        for session_id in ids:
            await self._destroy_session(session_id)
        return len(ids)


def create_app(
    settings: ServeSettings, max_sessions: int = 64, idle_timeout_s: float | None = 600.0
) -> Any:
    """The ASGI app: openenv-core's routes for ``settings.env_id``, plus ``GET /agentgym``."""
    from fastapi import FastAPI

    app = FastAPI(title=f"agentgym {settings.env_id} (OpenEnv)", version=_version())
    server = AgentgymEnvServer(settings, max_sessions, idle_timeout_s)
    server.register_routes(app)
    traits = env_traits(settings.env_id, settings.expert)

    @app.get("/agentgym", tags=["Environment Info"], summary="The env's prompt and action style")
    def agentgym_traits() -> dict[str, Any]:
        return traits

    async def close_sessions() -> None:
        await server.close_all()
        print("agentgym env serve: stopped, every session closed", file=sys.stderr, flush=True)

    app.router.on_shutdown.append(close_sessions)
    app.state.env_server = server
    return _ClosableSockets(app)


def serve(
    settings: ServeSettings,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_sessions: int = 64,
    idle_timeout_s: float | None = 600.0,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until SIGINT or SIGTERM (then every session is closed and the process exits 0)."""
    import uvicorn

    app = create_app(settings, max_sessions, idle_timeout_s)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5
    )

    class Server(uvicorn.Server):  # type: ignore[misc]
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if on_ready is not None and self.servers:
                bound = self.servers[0].sockets[0].getsockname()
                on_ready(f"http://{bound[0]}:{bound[1]}")

    # uvicorn handles SIGINT/SIGTERM (graceful shutdown), then raises the signal again for the
    # handler that was there before it: a no-op one here, so the process exits 0, not -15.
    before = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        Server(config).run()
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


class EnvServerThread:
    """The server in a background thread of this process (tests, benchmarks, notebooks)."""

    def __init__(
        self,
        settings: ServeSettings,
        max_sessions: int = 64,
        idle_timeout_s: float | None = 600.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        import uvicorn

        self.app = create_app(settings, max_sessions, idle_timeout_s)
        self.server = uvicorn.Server(
            uvicorn.Config(self.app, host=host, port=port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the env server for {settings.env_id} did not start")
            time.sleep(0.01)
        bound = self.server.servers[0].sockets[0].getsockname()
        self.url = f"http://{bound[0]}:{bound[1]}"

    @property
    def env_server(self) -> AgentgymEnvServer:
        return self.app.app.state.env_server  # type: ignore[no-any-return]

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


def check_settings(
    env_id: str,
    suite: str | None = None,
    isolate: str | None = None,
    options: dict[str, Any] | None = None,
    expert: bool = False,
) -> ServeSettings:
    """The settings of ``agentgym env serve``, every argument checked before anything starts (a
    ``KeyError`` or ``ValueError`` names what was wrong)."""
    from agentgym.env_options import check_env_options
    from agentgym.registry import check_isolate, check_nesting, spec
    from agentgym.task import TaskSuite

    env_id = spec(env_id).id  # an unknown id: the close matches
    check_isolate(isolate)
    check_nesting([env_id], isolate)
    kwargs = dict(options or {})
    if suite is not None:
        TaskSuite.load(suite)  # a missing suite fails here, not in the first session
        kwargs["suite"] = suite
    return ServeSettings(env_id, check_env_options(env_id, kwargs), isolate, expert)
