"""Any OpenEnv server as an agentgym env: the env id ``openenv:http://HOST:PORT``.

The registry resolves the ``openenv`` scheme here (:func:`remote_spec`): the server's ``/schema``
says how to send a text action, and an agentgym server's ``GET /agentgym`` gives the env's traits
(system prompt, action style, token budget: what chat agents and the trainer read off an env
class) and its demonstration turns, so a chat agent prompts an ``openenv:`` env as the local one. Each env instance is one
session (one WebSocket) through openenv-core's own ``GenericEnvClient``.

Observations: from an agentgym server, its text and info as they are; from any other OpenEnv
server, the observation's one text field (else its fields as JSON), ``done`` as terminated, and
the rest of its fields in ``info``.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, ClassVar

import gymnasium

from agentgym.env import NoExpert, ResetNeeded
from agentgym.spaces import UnicodeText
from agentgym.task import Task
from agentgym.traits import EnvTraits

SCHEME = "openenv"
OPENENV_FIELDS = ("done", "reward", "metadata")  # every OpenEnv observation has these


class OpenEnvEnv(gymnasium.Env[str, str]):
    """A session on an OpenEnv server. :func:`remote_spec` makes one subclass per server, with
    its URL and its traits as class attributes (what the trainer reads off an env class)."""

    metadata = {"render_modes": ["ansi"]}
    observation_space = UnicodeText(max_length=1 << 20)
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
    ) -> None:
        from agentgym.extras import require

        require(f"the env {self.env_id}", "openenv")
        self.render_mode = render_mode
        self.timeouts = (connect_timeout_s, message_timeout_s)
        self.client: Any = None
        self.task_id = ""
        self.last_observation = ""
        self.expert: str | None = None
        self.started = False

    # ------------------------------------------------------------------ session
    def _connect(self) -> Any:
        from openenv.core.generic_client import GenericEnvClient

        connect, message = self.timeouts
        client = GenericEnvClient(
            base_url=self.url, connect_timeout_s=connect, message_timeout_s=message
        ).sync()
        client.connect()
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
        from websockets.exceptions import ConnectionClosed

        for attempt in (0, 1):  # a session the server closed (idle) is reopened once
            if self.client is None:
                self.client = self._connect()
            try:
                result = self.client.reset(**data)
                break
            except (ConnectionError, OSError, ConnectionClosed) as e:
                self._drop()
                if attempt:
                    raise ConnectionError(f"{self.env_id}: {e}") from e
        obs, info, _, _ = self._read(result)
        if isinstance(task, Task):
            info.setdefault("task_id", task.id)
        elif isinstance(task, dict):
            info.setdefault("task_id", str(task.get("id", "")))
        else:
            info.setdefault("task_id", task or "")
        self.task_id, self.started = info["task_id"], True
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self.started or self.client is None:
            raise ResetNeeded("call reset() before step()")
        result = self.client.step(self._action(action))
        obs, info, terminated, truncated = self._read(result)
        reward = float(result.reward or 0.0)
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
        """(text, info, terminated, truncated) of a result from either kind of server."""
        obs: dict[str, Any] = dict(result.observation or {})
        if self.agentgym_server:
            info = dict(obs.get("info") or {})
            self.expert = info.pop("expert_action", None)
            text = str(obs.get("text", ""))
            terminated = bool(obs.get("terminated", result.done))
            truncated = bool(obs.get("truncated", False))
        else:
            fields = {k: v for k, v in obs.items() if k not in OPENENV_FIELDS}
            texts = [k for k, v in fields.items() if isinstance(v, str)]
            text = fields.pop(texts[0]) if len(texts) == 1 else json.dumps(fields, sort_keys=True)
            info = {**(obs.get("metadata") or {}), **fields}
            terminated, truncated = bool(result.done), False
        self.last_observation = text
        return text, info, terminated, truncated

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
    try:
        schema = httpx.get(f"{url}/schema", timeout=10).raise_for_status().json()
        answer = httpx.get(f"{url}/agentgym", timeout=10)
    except httpx.HTTPError as e:
        raise ValueError(f"{env_id}: no OpenEnv server answers at {url} ({e})") from None
    served = answer.json() if answer.status_code == 200 else {}
    action = schema.get("action") or {}
    required = [k for k in action.get("required", []) if k != "metadata"]
    text_field = (
        required[0]
        if len(required) == 1
        and action.get("properties", {}).get(required[0], {}).get("type") == "string"
        else None
    )
    attrs: dict[str, Any] = {
        "url": url,
        "env_id": env_id,
        "agentgym_server": bool(served),
        "action_field": text_field,
        "__doc__": served.get("description") or f"The OpenEnv server at {url}.",
        "demonstration_turns": tuple(dict(m) for m in served.get("demonstration") or ()),
    }
    env_traits = EnvTraits.model_validate(served)  # another OpenEnv server: the defaults
    if not served and text_field is None:
        env_traits = env_traits.model_copy(
            update={
                "system_prompt": "Answer with one JSON object, the action, as this schema "
                "describes:\n" + json.dumps(action, sort_keys=True)
            }
        )
    attrs.update(env_traits.model_dump())
    cls = type("OpenEnvEnv", (OpenEnvEnv,), attrs)
    description = f"{served['env_id']} served at {url}" if served else f"OpenEnv server at {url}"
    return EnvSpec(env_id, f"{__name__}:OpenEnvEnv", {}, description, target=cls)
