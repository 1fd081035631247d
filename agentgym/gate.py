"""The gate in front of agentgym's servers (``agentgym serve``, ``agentgym env serve``).

One ASGI middleware, so no route, method, path variant or WebSocket has a way around it. Before
a request reaches the app it is refused when:

- its ``Host`` header is not the server's address (DNS rebinding; :mod:`agentgym.hosts`): 400;
- it comes from a web page of another origin (its ``Origin`` header names another host or port
  than the request's ``Host``): 403. Browsers always send ``Origin`` on a WebSocket and on a
  cross-origin POST; programs send none, or their own server's;
- the server has a key and the request does not carry it: 401. The key travels as
  ``Authorization: Bearer KEY`` (OpenAI's clients, httpx, curl) or as HTTP Basic's password
  (``http://user:KEY@HOST:PORT``: the only way openenv-core's WebSocket client sends one).

A refused WebSocket gets the HTTP answer instead of ``101 Switching Protocols``, so a browser
never opens it. :class:`BodyLimit` then refuses a body larger than ``max_bytes`` (413) as it
streams in, and optionally one that is not JSON (415: a browser's form or ``text/plain`` POST
needs no preflight, so it is the cross-site request a JSON API never has to take).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from agentgym.hosts import refused_host

MAX_BODY_BYTES = 8 * 2**20
"""Largest request body (413 beyond): far more text than any served model's context holds."""

ErrorBody = Callable[[str, "str | None"], dict[str, Any]]
"""Builds a server's error body from a message and an error code (None: none)."""


def detail_body(message: str, code: str | None = None) -> dict[str, Any]:
    """FastAPI's error shape, ``{"detail": message}`` (and ``code`` where there is one)."""
    return {"detail": message} | ({"code": code} if code else {})


HTTP_SCHEME = {"ws": "http", "wss": "https"}
"""A WebSocket's scheme as the page that opens it has it in its ``Origin``."""


def _site(scheme: str, netloc: str) -> tuple[str, str | None, int] | None:
    """(scheme, host, port) of an origin, default ports filled in; None if it does not parse."""
    scheme = HTTP_SCHEME.get(scheme, scheme)
    try:
        parts = urlsplit(f"//{netloc}")
        return scheme, parts.hostname, parts.port or {"http": 80, "https": 443}.get(scheme, 0)
    except ValueError:  # a port that is no number
        return None


def refused_origin(origin: str | None, host: str, scheme: str) -> str | None:
    """Why a request with this ``Origin`` header is refused, or None: no ``Origin`` (not a
    browser), or the request's own scheme, host and port (a page this server served)."""
    if origin is None:
        return None
    parts = urlsplit(origin)
    theirs, ours = _site(parts.scheme, parts.netloc), _site(scheme, host)
    if theirs is not None and theirs[1] and theirs == ours:
        return None
    return f"Origin {origin!r} is another site than this server ({host}): a web page may not use it"


def _key_of(authorization: bytes | None) -> bytes | None:
    """The key an ``Authorization`` header carries: a Bearer token or HTTP Basic's password."""
    scheme, _, token = (authorization or b"").partition(b" ")
    if scheme.lower() == b"bearer":
        return token
    if scheme.lower() == b"basic":
        try:
            return base64.b64decode(token.strip(), validate=True).partition(b":")[2]
        except (binascii.Error, ValueError):
            return None
    return None


class Gate:
    """ASGI middleware: Host (400), Origin (403), then the key (401, compared in constant
    time), on HTTP requests and WebSocket handshakes alike, before anything is read."""

    def __init__(
        self,
        app: Any,
        api_key: str | None,
        hosts: set[str] | None,
        error_body: ErrorBody = detail_body,
        key_hint: str = "",
    ) -> None:
        self.app, self.hosts, self.error_body, self.key_hint = app, hosts, error_body, key_hint
        self.expected = api_key.encode() if api_key else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        if refusal := self.refusal(scope):
            return await send_error(scope, send, *refusal, error_body=self.error_body)
        await self.app(scope, receive, send)

    def refusal(self, scope: dict[str, Any]) -> tuple[int, str, str | None, bytes | None] | None:
        """(status, message, code, WWW-Authenticate challenge) of a refused request, or None."""
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if refused := refused_host(host, self.hosts):
            return 400, refused, "bad_host", None
        origin = headers.get(b"origin")
        scheme = scope.get("scheme", "http")
        if refused := refused_origin(origin and origin.decode("latin-1"), host, scheme):
            return 403, refused, "bad_origin", None
        if self.expected is None:
            return None
        given = headers.get(b"authorization")
        key = _key_of(given)
        if key is not None and hmac.compare_digest(key, self.expected):
            return None
        how = f"send it as `Authorization: Bearer KEY`{self.key_hint}"
        message = (
            f"Incorrect API key provided: {how}."
            if given
            else f"You didn't provide an API key: {how}."
        )
        return 401, message, "invalid_api_key", b"Bearer"


async def send_error(
    scope: dict[str, Any],
    send: Any,
    status: int,
    message: str,
    code: str | None = None,
    challenge: bytes | None = None,
    error_body: ErrorBody = detail_body,
) -> None:
    """Answer with an error body from ASGI middleware, before the app sees the request; a
    WebSocket handshake gets the same HTTP answer (or a plain 403 where the server cannot send
    one), never ``101``."""
    body = json.dumps(error_body(message, code)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if challenge:
        headers.append((b"www-authenticate", challenge))
    if scope["type"] == "websocket":
        if "websocket.http.response" not in (scope.get("extensions") or {}):
            await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
            return
        prefix = "websocket.http.response"
    else:
        prefix = "http.response"
    await send({"type": f"{prefix}.start", "status": status, "headers": headers})
    await send({"type": f"{prefix}.body", "body": body})


def is_json(content_type: bytes) -> bool:
    """``application/json`` or a ``+json`` type, whatever its parameters (``charset=utf-8``)."""
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (
        media.startswith(b"application/") and media.endswith(b"+json")
    )


class BodyLimit:
    """ASGI middleware: 413 for an HTTP body over ``max_bytes``, by its Content-Length or as it
    streams in, before the app reads and parses it on the event loop; with ``json_only``, 415
    for a body that is not declared JSON."""

    def __init__(
        self,
        app: Any,
        max_bytes: int = MAX_BODY_BYTES,
        error_body: ErrorBody = detail_body,
        json_only: bool = False,
    ) -> None:
        self.app, self.max_bytes, self.error_body, self.json_only = (
            app,
            max_bytes,
            error_body,
            json_only,
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.max_bytes:
            return await self._refuse(scope, send)
        has_body = int(declared) > 0 or b"transfer-encoding" in headers
        content_type = headers.get(b"content-type", b"")
        if self.json_only and has_body and not is_json(content_type):
            given = content_type.decode("latin-1") or "none"
            message = f"the request body must be JSON (Content-Type: application/json), not {given}"
            return await send_error(scope, send, 415, message, error_body=self.error_body)
        seen, refused = 0, False

        async def limited() -> dict[str, Any]:
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:  # answered here; the app sees its client gone
                refused = True
                await self._refuse(scope, send)
                return {"type": "http.disconnect"}
            return message

        async def quiet_once_refused(message: dict[str, Any]) -> None:
            if not refused:
                await send(message)

        await self.app(scope, limited, quiet_once_refused)

    async def _refuse(self, scope: dict[str, Any], send: Any) -> None:
        message = f"the request body is larger than {self.max_bytes} bytes"
        await send_error(scope, send, 413, message, error_body=self.error_body)
