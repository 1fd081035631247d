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
- the sessions' rules (:mod:`agentgym.integrations.openenv.sessions`): a session is a
  connection, closed with its reason (idle, shutting down, 1013 when the server is full), and
  closing never waits on a running step;
- the gate of ``agentgym serve`` (:mod:`agentgym.gate`): a key off loopback (Bearer, or the URL's
  password for openenv-core's client), the ``Host`` and ``Origin`` checks on HTTP and WebSocket
  alike, JSON bodies of at most 8 MiB (WebSocket messages too);
- a client's mistake over HTTP (an unknown task, a stateless ``/step``) is a 400 with one line.
"""

from __future__ import annotations

import contextlib
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

import uvicorn
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import (
    Action,
    ConcurrencyConfig,
    EnvironmentMetadata,
    Observation,
    State,
)
from pydantic import Field

from agentgym.env import NoExpert
from agentgym.gate import MAX_BODY_BYTES, BodyLimit, Gate
from agentgym.hosts import allowed_hosts, check_exposure
from agentgym.integrations.openenv.sessions import ClosableSockets, SessionServer
from agentgym.task import Task, tasks_from_client

RESET_KEYS = ("task", "seed", "episode_id")
KEY_HINT = (
    ", or as the password of the URL (http://agentgym:KEY@HOST:PORT) in openenv-core's client"
)


class ClientError(ValueError):
    """A client's mistake (an unknown task, a bad task object or reset key, a step before any
    reset): HTTP answers 400 with its one line; a WebSocket session gets it as an error message."""


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
            raise ClientError(
                f"reset got {', '.join(unknown)}; it takes task=TASK_ID (or a task as a JSON "
                "object), seed=N and episode_id"
            )
        task = kwargs.get("task")
        if task is not None and not isinstance(task, (str, dict)):
            raise ClientError(f"task must be a task id or a task object, got {type(task).__name__}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ClientError(f"seed must be an integer >= 0, got {seed!r}")
        try:
            if isinstance(task, dict):  # a client's task is data: checked here, as data
                task = _client_task(self.settings.env_id, task)
            with tasks_from_client():
                obs, info = self._env().reset(seed=seed, options={"task": task})
        except KeyError as e:  # an unknown task id: say which, as plain text
            raise ClientError(str(e.args[0]) if e.args else str(e)) from None
        self.running = True
        self._state = State(
            episode_id=episode_id or str(uuid.uuid4()), step_count=0, task_id=info["task_id"]
        )
        return self._observation(obs, None, False, False, info)

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:
        if not self.running:
            raise ClientError(
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
    data (an env config that names a host path refuses), and a bad one is a :class:`ClientError`."""
    from pydantic import ValidationError

    from agentgym.registry import spec

    with tasks_from_client():
        try:
            parsed = Task.model_validate(task)
            spec(env_id).load().validate_task(parsed)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "task"
            raise ClientError(f"bad task object: {where}: {first['msg']}") from None
        except ValueError as e:
            raise ClientError(f"bad task object: {e}") from None
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


class AgentgymEnvServer(SessionServer):
    """openenv-core's server for one agentgym env, with agentgym's session rules."""

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


def create_app(
    settings: ServeSettings,
    max_sessions: int = 64,
    idle_timeout_s: float | None = 600.0,
    api_key: str | None = None,
    hosts: set[str] | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> Any:
    """The ASGI app: openenv-core's routes for ``settings.env_id``, plus ``GET /agentgym``,
    behind the gate (:mod:`agentgym.gate`): ``hosts`` the ``Host`` names answered (None: any),
    ``api_key`` the key every request and WebSocket must carry (None: none), JSON bodies of at
    most ``max_body_bytes``. Its ``env_server`` attribute is the session server."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    app = FastAPI(title=f"agentgym {settings.env_id} (OpenEnv)", version=_version())
    server = AgentgymEnvServer(settings, max_sessions, idle_timeout_s)
    server.register_routes(app)
    traits = env_traits(settings.env_id, settings.expert)

    @app.get("/agentgym", tags=["Environment Info"], summary="The env's prompt and action style")
    def agentgym_traits() -> dict[str, Any]:
        return traits

    @app.exception_handler(ClientError)
    async def _client_error(_: Request, exc: ClientError) -> JSONResponse:
        return JSONResponse(status_code=400, content={"detail": str(exc)})

    async def close_sessions() -> None:
        await server.close_all()
        print("agentgym env serve: stopped, every session closed", file=sys.stderr, flush=True)

    app.router.on_shutdown.append(close_sessions)
    body_checked = BodyLimit(ClosableSockets(app), max_body_bytes, json_only=True)
    gate = Gate(body_checked, api_key, hosts, key_hint=KEY_HINT)
    gate.env_server = server  # type: ignore[attr-defined]
    return gate


class _Server(uvicorn.Server):  # type: ignore[misc]
    """uvicorn's server; at shutdown every session is closed before uvicorn waits for the
    connections (a handler waiting on a step would hold it); ``on_ready`` gets the URL."""

    def __init__(self, config: Any, on_ready: Callable[[str], None] | None = None) -> None:
        super().__init__(config)
        self.on_ready = on_ready

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.on_ready is not None and self.servers:
            self.on_ready(bound_url(self))

    async def shutdown(self, sockets: Any = None) -> None:
        await self.config.app.env_server.close_all()
        await super().shutdown(sockets)


def bound_url(server: Any) -> str:
    """``http://HOST:PORT`` of a started uvicorn server."""
    bound = server.servers[0].sockets[0].getsockname()
    host = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    return f"http://{host}:{bound[1]}"


def _config(app: Any, host: str, port: int) -> Any:
    """uvicorn's settings: WebSocket messages at most the body limit, as HTTP bodies."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=5,
        ws_max_size=MAX_BODY_BYTES,
    )


def serve(
    settings: ServeSettings,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_sessions: int = 64,
    idle_timeout_s: float | None = 600.0,
    on_ready: Callable[[str], None] | None = None,
    api_key: str | None = None,
) -> None:
    """Serve until SIGINT or SIGTERM (then every session is closed and the process exits 0),
    to clients sending ``api_key`` when one is given (required for a ``host`` other machines
    can reach: :func:`agentgym.hosts.check_exposure`)."""
    check_exposure(host, api_key)
    app = create_app(settings, max_sessions, idle_timeout_s, api_key, allowed_hosts(host))
    server = _Server(_config(app, host, port), on_ready)
    # uvicorn handles SIGINT/SIGTERM (graceful shutdown), then raises the signal again for the
    # handler that was there before it: a no-op one here, so the process exits 0, not -15.
    before = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run()
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
        api_key: str | None = None,
    ) -> None:
        check_exposure(host, api_key)
        self.app = create_app(settings, max_sessions, idle_timeout_s, api_key, allowed_hosts(host))
        self.server = _Server(_config(self.app, host, port))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the env server for {settings.env_id} did not start")
            time.sleep(0.01)
        self.url = bound_url(self.server)

    @property
    def env_server(self) -> AgentgymEnvServer:
        return self.app.env_server  # type: ignore[no-any-return]

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
