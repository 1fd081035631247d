"""Any OpenEnv server as an agentgym env: the env id ``openenv:http://HOST:PORT``.

The registry resolves the ``openenv`` scheme here (:func:`remote_spec`): the server's ``/schema``
says how to send a text action, and an agentgym server's ``GET /agentgym`` gives the env's traits
(system prompt, action style, token budget: what chat agents and the trainer read off an env
class) and its demonstration turns, so a chat agent prompts an ``openenv:`` env as the local one. Each env instance is one
session (one WebSocket) through openenv-core's own ``GenericEnvClient``.

Observations: from an agentgym server, its text and info as they are; from any other OpenEnv
server, the observation's one text field (else its fields as JSON), ``done`` as terminated, and
the rest of its fields in ``info``.

A server that asks for a key (``agentgym env serve --api-key``) gets ``$AGENTGYM_API_KEY``: as
``Authorization: Bearer KEY`` over HTTP, and as the URL's password on the WebSocket (HTTP Basic:
the one way openenv-core's client sends a credential). The key never enters the env id.

The server is not trusted: a message over :data:`MAX_MESSAGE_BYTES` closes the session, an
observation over 1 Mi characters, a field of the wrong type or a reward outside
:mod:`agentgym.rewards`' range is an error naming the server, and an episode the server never ends
is truncated after ``max_steps`` steps (an env option). A full server is waited for, with backoff,
for up to ``full_wait_s`` seconds.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit, urlunsplit

import gymnasium

from agentgym.env import NoExpert, ResetNeeded
from agentgym.hosts import API_KEY_ENV
from agentgym.integrations.openenv.answers import (
    ActionSchema,
    ServerTraits,
    closed_reason,
    full_reason,
    json_object,
    read_as,
)
from agentgym.redact import mask_value, remember_secret
from agentgym.rewards import check_reward
from agentgym.spaces import UnicodeText
from agentgym.task import Task
from agentgym.traits import EnvTraits

SCHEME = "openenv"
OPENENV_FIELDS = ("done", "reward", "metadata")  # every OpenEnv observation has these
MAX_OBSERVATION_CHARS = 1 << 20
MAX_MESSAGE_BYTES = 2 << 20
"""The largest message read from a server: an observation of 1 Mi characters and its info. A
larger one closes the session (close code 1009) before it is held in memory."""


class OpenEnvEnv(gymnasium.Env[str, str]):
    """A session on an OpenEnv server. :func:`remote_spec` makes one subclass per server, with
    its URL and its traits as class attributes (what the trainer reads off an env class)."""

    metadata = {"render_modes": ["ansi"]}
    observation_space = UnicodeText(max_length=MAX_OBSERVATION_CHARS)
    action_space = UnicodeText(max_length=1 << 14)

    url: ClassVar[str] = ""
    env_id: ClassVar[str] = ""
    agentgym_server: ClassVar[bool] = False
    """The server is ``agentgym env serve`` (observations carry text and info)."""
    action_field: ClassVar[str | None] = "message"
    """The action's one required text field; None: the action is sent as a JSON object."""
    system_prompt: ClassVar[str]
    free_text_actions: ClassVar[bool]
    one_line_actions: ClassVar[bool]
    action_max_tokens: ClassVar[int]
    default_suite: ClassVar[str | None]
    demo_suite: ClassVar[str | None]
    """The served env's traits (:class:`~agentgym.traits.EnvTraits`), set by :func:`remote_spec`."""
    demonstration_turns: ClassVar[tuple[dict[str, Any], ...]] = ()
    """The served env's ``demonstration()`` messages, as ``GET /agentgym`` sends them."""

    def __init__(
        self,
        render_mode: str | None = None,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 600.0,
        max_steps: int = 200,
        full_wait_s: float = 60.0,
    ) -> None:
        """``max_steps``: the step that reaches it is truncated (a server that never ends an
        episode); ``full_wait_s``: how long a reset waits for a full server to free a session."""
        from agentgym.extras import require

        require(f"the env {self.env_id}", "openenv")
        if max_steps < 1:
            raise ValueError(f"{self.env_id}: max_steps={max_steps}: give a step count >= 1")
        if not (math.isfinite(full_wait_s) and full_wait_s >= 0):
            raise ValueError(f"{self.env_id}: full_wait_s={full_wait_s}: give seconds >= 0")
        self.render_mode = render_mode
        self.timeouts = (connect_timeout_s, message_timeout_s)
        self.max_steps, self.full_wait_s = max_steps, full_wait_s
        self.client: Any = None
        self.task_id = ""
        self.last_observation = ""
        self.expert: str | None = None
        self.started = False
        self.steps = 0

    # ------------------------------------------------------------------ session
    def _connect(self) -> Any:
        from openenv.core.generic_client import GenericEnvClient

        connect, message = self.timeouts
        key = api_key()
        client = GenericEnvClient(
            base_url=with_key(self.url, key),
            connect_timeout_s=connect,
            message_timeout_s=message,
            max_message_size_mb=MAX_MESSAGE_BYTES / (1 << 20),
        ).sync()
        try:
            client.connect()
        except ConnectionError as e:  # its text names the URL, the key in it
            raise ConnectionError(mask_value(str(e), quote(key or "", safe=""))) from None
        return client

    def _drop(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(Exception):  # already gone (the server closed it idle)
                client.close()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        task = (options or {}).get("task")
        data: dict[str, Any] = {}
        if seed is not None:
            data["seed"] = seed
        if isinstance(task, Task):
            data["task"] = task.model_dump(mode="json")  # the whole task: any split, any file
        elif task is not None:
            data["task"] = task
        self.started, self.steps = False, 0
        obs, info, _, _ = self._read(self._reset_session(data))
        if isinstance(task, Task):
            info.setdefault("task_id", task.id)
        elif isinstance(task, dict):
            info.setdefault("task_id", str(task.get("id", "")))
        else:
            info.setdefault("task_id", task or "")
        self.task_id, self.started = info["task_id"], True
        return obs, info

    def _reset_session(self, data: dict[str, Any]) -> Any:
        """The server's answer to a reset. A session the server closed (idle) is reopened once;
        while the server is full, new sessions are tried with backoff for ``full_wait_s``."""
        from websockets.exceptions import ConnectionClosed

        deadline, delay, reopened = time.monotonic() + self.full_wait_s, 0.05, False
        while True:
            fresh = self.client is None
            if fresh:
                self.client = self._connect()
            try:
                return self.client.reset(**data)
            except (ConnectionError, OSError, ConnectionClosed, RuntimeError) as e:
                full = full_reason(e, fresh)
                if full is None and isinstance(e, RuntimeError):
                    raise  # the server's error answer: the session is fine
                self._drop()
                if full is None and (fresh or reopened):
                    raise ConnectionError(closed_reason(self.env_id, e, MAX_MESSAGE_BYTES)) from e
                reopened = reopened or full is None
                if full is not None and time.monotonic() + delay > deadline:
                    raise ConnectionError(
                        f"{self.env_id} is full ({full}) and no session freed up in "
                        f"{self.full_wait_s:g} s (env option full_wait_s)"
                    ) from None
                if full is not None:
                    time.sleep(delay)
                    delay = min(2 * delay, 2.0)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self.started or self.client is None:
            raise ResetNeeded("call reset() before step()")
        from websockets.exceptions import ConnectionClosed

        payload = self._action(action)
        try:
            result = self.client.step(payload)
        except ConnectionClosed as e:
            self.close()
            raise ConnectionError(closed_reason(self.env_id, e, MAX_MESSAGE_BYTES)) from None
        obs, info, terminated, truncated = self._read(result)
        sent = result.reward or 0.0  # OpenEnv allows a bool reward
        reward = check_reward(
            float(sent) if isinstance(sent, bool) else sent, f"{self.env_id}'s reward"
        )
        self.steps += 1
        if not terminated and self.steps >= self.max_steps:
            truncated = True  # the server did not end it: the episode is a limit, stored
        if terminated or truncated:
            self.started = False
        return obs, reward, terminated, truncated, info

    def _action(self, text: str) -> dict[str, Any]:
        if not isinstance(text, str):
            raise TypeError(f"actions are text (str), got {type(text).__name__}")
        if self.action_field is not None:
            return {self.action_field: text}
        try:
            action = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(
                f"{self.env_id} takes actions as JSON objects (its /schema): {e}"
            ) from None
        if not isinstance(action, dict):
            raise ValueError(f"{self.env_id} takes actions as JSON objects (its /schema)")
        return action

    def _read(self, result: Any) -> tuple[str, dict[str, Any], bool, bool]:
        """(text, info, terminated, truncated) of a result from either kind of server; a field
        of the wrong type or an observation past the limit is a ``ValueError`` naming it."""
        obs = self._field("observation", result.observation or {}, dict)
        done = self._field("done", result.done or False, bool)
        if self.agentgym_server:
            info = dict(self._field("info", obs.get("info") or {}, dict))
            self.expert = self._field("expert_action", info.pop("expert_action", None), str, None)
            text = self._field("text", obs.get("text", ""), str)
            terminated = self._field("terminated", obs.get("terminated", done), bool)
            truncated = self._field("truncated", obs.get("truncated", False), bool)
        else:
            fields = {k: v for k, v in obs.items() if k not in OPENENV_FIELDS}
            texts = [k for k, v in fields.items() if isinstance(v, str)]
            text = fields.pop(texts[0]) if len(texts) == 1 else json.dumps(fields, sort_keys=True)
            info = {**self._field("metadata", obs.get("metadata") or {}, dict), **fields}
            terminated, truncated = done, False
        if len(text) > MAX_OBSERVATION_CHARS:
            raise ValueError(
                f"{self.env_id} sent an observation of {len(text)} characters: refused, "
                f"observations are at most {MAX_OBSERVATION_CHARS} (1 Mi)"
            )
        self.last_observation = text
        return text, info, terminated, truncated

    def _field(self, name: str, value: Any, kind: type, *also: Any) -> Any:
        """``value`` if it is a ``kind`` (or one of ``also``), else a ``ValueError``."""
        if isinstance(value, kind) or value in also:
            return value
        raise ValueError(
            f"{self.env_id} sent {name!r} as {type(value).__name__} {str(value)[:40]!r}: "
            f"refused, OpenEnv sends a {kind.__name__}"
        )

    def demonstration(self, turns: int = 2) -> list[dict[str, Any]]:
        """The served env's demonstration (its first ``turns`` exchanges), as a local env of its
        type gives it: chat agents open with the same turns on either."""
        return [dict(m) for m in self.demonstration_turns[: 2 * turns]]

    def expert_action(self) -> str:
        """The server's expert, where it serves one (``agentgym env serve --expert``)."""
        if self.expert is None:
            raise NoExpert(
                f"{self.env_id} sends no expert action (serve it with `agentgym env serve "
                "--expert` to play the expert through it)"
            )
        return self.expert

    def render(self) -> str | None:
        return self.last_observation if self.render_mode == "ansi" else None

    def close(self) -> None:
        self._drop()
        self.started = False


def api_key() -> str | None:
    """The key sent to OpenEnv servers: ``$AGENTGYM_API_KEY`` (None: none), masked in whatever
    this process stores or shows."""
    key = os.environ.get(API_KEY_ENV) or None
    remember_secret(key)
    return key


def with_key(url: str, key: str | None) -> str:
    """``url`` carrying ``key`` as its password, which openenv-core's WebSocket client sends as
    ``Authorization: Basic``; unchanged without a key."""
    if not key:
        return url
    parts = urlsplit(url)
    netloc = f"agentgym:{quote(key, safe='')}@{parts.netloc.rpartition('@')[2]}"
    return urlunsplit(parts._replace(netloc=netloc))


def remote_spec(env_id: str) -> Any:
    """The :class:`~agentgym.registry.EnvSpec` of ``openenv:URL``: asks the server at URL for its
    action schema (and, from an agentgym server, its traits); a ``ValueError`` says what failed."""
    from agentgym.extras import require
    from agentgym.registry import EnvSpec

    require(f"the env id {env_id}", "openenv", "httpx")
    import httpx

    url = env_id.split(":", 1)[1].rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{env_id!r}: write openenv:http://HOST:PORT (the OpenEnv server's URL)")
    key = api_key()
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        schema_answer = httpx.get(f"{url}/schema", headers=headers, timeout=10)
        answer = httpx.get(f"{url}/agentgym", headers=headers, timeout=10)
    except httpx.HTTPError as e:
        raise ValueError(f"{env_id}: no OpenEnv server answers at {url} ({e})") from None
    schema = json_object(
        url, "/schema", schema_answer.status_code, schema_answer.text, schema_answer.json
    )
    action_schema = schema.get("action") or {}
    action = read_as(ActionSchema, action_schema, url, "/schema action")
    traits: ServerTraits | None = None
    if answer.status_code == 200:  # a foreign OpenEnv server has no /agentgym
        raw = json_object(url, "/agentgym", answer.status_code, answer.text, answer.json)
        traits = read_as(ServerTraits, raw, url, "/agentgym")
    text_field = action.text_field()
    attrs: dict[str, Any] = {
        "url": url,
        "env_id": env_id,
        "agentgym_server": traits is not None,
        "action_field": text_field,
        "__doc__": (traits and traits.description) or f"The OpenEnv server at {url}.",
        "demonstration_turns": tuple(dict(m) for m in traits.demonstration) if traits else (),
    }
    env_traits = EnvTraits.model_validate(
        traits.model_dump(include=set(EnvTraits.model_fields)) if traits else {}
    )  # another OpenEnv server: the defaults
    if traits is None and text_field is None:
        env_traits = env_traits.model_copy(
            update={
                "system_prompt": "Answer with one JSON object, the action, as this schema "
                "describes:\n" + json.dumps(action_schema, sort_keys=True)
            }
        )
    attrs.update(env_traits.model_dump())
    cls = type("OpenEnvEnv", (OpenEnvEnv,), attrs)
    description = f"{traits.env_id} served at {url}" if traits else f"OpenEnv server at {url}"
    return EnvSpec(env_id, f"{__name__}:OpenEnvEnv", {}, description, target=cls)
