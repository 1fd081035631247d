"""What an OpenEnv server says, read as untrusted data: its ``/schema`` and ``GET /agentgym``
answers, and why it closed a session.

An answer that is not the documented JSON object (a list, HTML, a field of the wrong type) is one
``ValueError`` line naming the server's URL and what was wrong, never a traceback. A server that
is full (close code 1013, openenv-core's ``CAPACITY_REACHED`` error, or a new session closed before
its first answer) is told apart from one that refused the client for good, so the client waits for
a free session only in the first case.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentgym.traits import DEFAULT_MAX_TOKENS, EnvTraits

FULL_CODE = 1013
"""WebSocket close code "try again later": the server has no free session."""
NOT_FULL_CODES = {1002, 1003, 1007, 1008, 1009, 1010}
"""Close codes that say the client was refused (protocol, policy, size): waiting will not help."""


class ServerTraits(EnvTraits):
    """``GET /agentgym`` of ``agentgym env serve``: what a chat agent needs before the first reset
    (the env's traits, read strictly, and its demonstration turns)."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    env_id: str
    description: str = ""
    action_max_tokens: int = Field(DEFAULT_MAX_TOKENS, ge=1, le=1 << 16)
    demonstration: list[dict[str, str]] = []


class ActionSchema(BaseModel):
    """The part of ``/schema``'s ``action`` (a JSON schema) the client reads."""

    model_config = ConfigDict(extra="ignore", strict=True)

    required: list[str] = []
    properties: dict[str, Any] = {}

    def text_field(self) -> str | None:
        """The action's one required text field (``metadata`` aside), else None."""
        required = [k for k in self.required if k != "metadata"]
        if len(required) != 1:
            return None
        field = self.properties.get(required[0])
        return required[0] if isinstance(field, dict) and field.get("type") == "string" else None


def json_object(url: str, path: str, status: int, text: str, parse: Any) -> dict[str, Any]:
    """The JSON object the server at ``url`` answered on ``path`` (HTTP ``status``, body
    ``text``, ``parse()`` its JSON), else a ``ValueError`` saying what came instead."""
    where = f"openenv:{url}: {path}"
    if status != 200:
        raise ValueError(f"{where} answered HTTP {status}: is this an OpenEnv server?")
    try:
        data = parse()
    except ValueError:
        start = " ".join(text[:40].split())
        raise ValueError(
            f"{where} is not JSON (it starts {start!r}): is this an OpenEnv server?"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{where} is a JSON {type(data).__name__}, not the object OpenEnv sends")
    return data


def read_as(model: type[BaseModel], data: Any, url: str, path: str) -> Any:
    """``data`` as ``model``, else a ``ValueError`` naming the server, the field and the fault."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        where = f"{path} field {field!r}" if field else path
        raise ValueError(f"openenv:{url}: {where}: {first['msg']}") from None


def full_reason(error: BaseException, fresh: bool) -> str | None:
    """Why a reset failed if the server is full (a reason to wait and retry), else None.

    ``fresh``: the session was opened for this reset, so a close before any answer is the
    server turning it away, not an idle session it reaped.
    """
    from websockets.exceptions import ConnectionClosed

    if isinstance(error, RuntimeError) and "CAPACITY_REACHED" in str(error):
        return str(error).removeprefix("Server error: ")
    if not isinstance(error, ConnectionClosed):
        return None
    close = error.rcvd
    code = None if close is None else close.code
    if code == FULL_CODE:
        return close.reason or f"close code {FULL_CODE}"  # type: ignore[union-attr]
    server_closed = close is not None and (error.sent is None or error.rcvd_then_sent)
    if fresh and (close is None or server_closed) and code not in NOT_FULL_CODES:
        return f"it closed a new session before answering (close code {code})"
    return None


def closed_reason(env_id: str, error: BaseException, limit_bytes: int) -> str:
    """One line on why the server's session ended in the middle of an episode."""
    sent, rcvd = getattr(error, "sent", None), getattr(error, "rcvd", None)
    if sent is not None and sent.code == 1009:
        return (
            f"{env_id} sent a message over {limit_bytes >> 20} MiB, the most one observation "
            "and its info may take: refused, and the session is closed"
        )
    if rcvd is not None:
        return f"{env_id} closed the session (close code {rcvd.code}: {rcvd.reason or 'no reason'})"
    return f"{env_id}: the connection was lost ({error})"
