"""``agentgym serve PATH``: an OpenAI-compatible HTTP server for a local transformers checkpoint.

Endpoints ``/v1/models`` and ``/v1/chat/completions`` (``n``, ``logprobs``, ``max_tokens``,
``temperature``, ``top_p``, ``stop``, ``seed``, ``tools``, ``stream``). Concurrent requests share the
dynamic batcher of :class:`~agentgym.llm.engine.LocalEngine`, so 32 clients cost about one batch.
Streaming sends the completion as server-sent events once its batch is done (the batcher generates
whole sequences; it does not stream token by token).

Hostile or careless clients cannot hold the server: every request is validated before it joins a
batch (400 naming the field: roles, null content, ``max_tokens`` beyond the model's context, seeds
outside 64 bits); an unknown model is a 404; a request stops generating when its client disconnects
or its deadline (``request_timeout_s``, 504) passes; one request that fails in a batch fails alone;
each seeded request samples from its own generator, so its text does not depend on its
batch-mates; SIGTERM fails the requests in flight with 503 and exits at once.

With an API key (``--api-key``, ``AGENTGYM_API_KEY``) every request must carry it as OpenAI's
clients send it (``Authorization: Bearer KEY``), or gets 401. Without one the server binds only a
loopback address. Requests naming another host than the server's address are refused (DNS
rebinding: a web page cannot use the model through the browser).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import threading
import time
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Literal

from fastapi import Request  # at module level: FastAPI resolves endpoint annotations here
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentgym.gate import MAX_BODY_BYTES, BodyLimit, Gate
from agentgym.hosts import allowed_hosts, check_exposure
from agentgym.llm.clients import parse_tool_calls
from agentgym.llm.engine import Engine, EngineClosed, Generation
from agentgym.llm.recording import KEY_HEADER, SESSION_HEADER, Recorder, RecordingError, without_eos
from agentgym.llm.sampling import SamplingSpec

INT64 = 2**63
GREEDY_BELOW = 1e-5
"""Temperatures below this sample greedily, as vLLM does: dividing logits by 5e-324 gives NaN."""


class TextPart(BaseModel):
    """One part of a message's content list (only text parts: the models here read text)."""

    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    """One chat message; other fields (``name``, ``tool_call_id``...) pass to the template."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    tool_calls: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _has_content(self) -> ChatMessage:
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            raise ValueError(
                f"a {self.role} message needs a string content "
                "(null only for an assistant message with tool_calls)"
            )
        return self

    def for_template(self) -> dict[str, Any]:
        """The message as the chat template reads it (content parts joined into one string)."""
        message = self.model_dump(exclude_none=True)
        if isinstance(self.content, list):
            message["content"] = "".join(part.text for part in self.content)
        return message


class ChatCompletionRequest(BaseModel):
    """The subset of OpenAI's request body the server honours (unknown fields are ignored)."""

    model: str | None = None
    """The served model's name (404 for any other); omitted means the served model."""
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    n: int = Field(default=1, ge=1, le=64)
    stop: list[str] | None = None
    stream: bool = False
    logprobs: bool = False
    seed: int | None = Field(default=None, ge=-INT64, lt=INT64)
    tools: list[dict[str, Any]] | None = None
    user: str | None = None
    """The session a recording server files this request under (:mod:`agentgym.llm.recording`)."""

    @field_validator("stop", mode="before")
    @classmethod
    def _stop_as_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class RequestError(Exception):
    """A request the server answers with an OpenAI-style error body instead of a completion."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


def create_app(
    engine: Engine,
    model_name: str,
    default_max_tokens: int = 256,
    request_timeout_s: float | None = 600.0,
    max_body_bytes: int = MAX_BODY_BYTES,
    api_key: str | None = None,
    hosts: set[str] | None = None,
    recorder: Recorder | None = None,
) -> Any:
    """The FastAPI application serving ``engine`` as ``model_name``.

    ``request_timeout_s`` bounds one request from arrival to its last token (None: no bound);
    a body over ``max_body_bytes`` is refused with 413 before it is read whole. With ``api_key``
    a request without ``Authorization: Bearer API_KEY`` is a 401. ``hosts``: the names a
    request's ``Host`` header may carry (:func:`agentgym.hosts.allowed_hosts`; None: any). A
    ``recorder`` files every answered request under its session (:mod:`agentgym.llm.recording`).
    """
    from fastapi import FastAPI
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, StreamingResponse
    from starlette.exceptions import HTTPException

    app = FastAPI(title="agentgym serve")
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes, error_body=openai_error)
    app.add_middleware(  # added last: runs first
        Gate, api_key=api_key, hosts=hosts, error_body=openai_error, key_hint=OPENAI_KEY_HINT
    )
    created = int(time.time())
    longest = longest_token(engine.tokenizer)

    def _error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
        return JSONResponse(status_code=status, content=error_body(message, kind))

    @app.exception_handler(HTTPException)
    async def _http_error(_: Request, exc: HTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))  # OpenAI's shape, not {"detail": ...}

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"] if p != "body")
        return _error(400, f"{where}: {first['msg']}" if where else f"body: {first['msg']}")

    @app.exception_handler(RequestError)
    async def _request_error(_: Request, exc: RequestError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.kind)

    @app.exception_handler(RecordingError)
    async def _recording_error(_: Request, exc: RecordingError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.kind)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        card = {"id": model_name, "object": "model", "created": created, "owned_by": "agentgym"}
        return {"object": "list", "data": [card]}

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(body: ChatCompletionRequest, request: Request) -> Any:
        if body.model not in (None, model_name):
            raise RequestError(
                404,
                f"The model {body.model!r} does not exist; this server serves {model_name!r}",
                "model_not_found",
            )
        _check_prompt_size(body, engine.max_context_tokens, longest)  # cheap: on the loop
        if recorder is not None:
            gens = await _recorded(recorder, engine, body, request, _generate)
        else:
            gens = await _generate(body, request, await asyncio.to_thread(_render, engine, body))
        response = _completion(gens, body, model_name, engine)
        if not body.stream:
            return response
        return StreamingResponse(_sse(response), media_type="text/event-stream")

    async def _generate(
        body: ChatCompletionRequest, request: Request, prompt: list[int], keep_eos: bool = False
    ) -> list[Generation]:
        max_tokens = _max_tokens(body, len(prompt), engine.max_context_tokens, default_max_tokens)
        sampling = SamplingSpec(
            max_tokens=max_tokens,
            stop=tuple(body.stop or ()),
            temperature=0.0 if body.temperature < GREEDY_BELOW else body.temperature,
            top_p=body.top_p,
        )
        futures = [
            engine.submit(
                prompt,
                sampling,
                seed=choice_seed(body.seed, i),
                timeout_s=request_timeout_s,
                keep_eos=keep_eos,
            )
            for i in range(body.n)
        ]
        return await _results(futures, request)

    return app


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """OpenAI's error object; text that UTF-8 cannot encode (a lone surrogate) is escaped."""
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


OPENAI_KEY_HINT = " (api_key= in OpenAI's clients)"


def openai_error(message: str, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error object with its ``code`` (the gate's refusals: ``invalid_api_key``...)."""
    body = error_body(message)
    body["error"]["code"] = code
    return body


def choice_seed(seed: int | None, choice: int) -> int | None:
    """Choice ``choice``'s seed: the request's own for choice 0, a hash of (seed, choice) for the
    others, so seed 1 with n=2 does not repeat seed 2's sample (as seed + i did)."""
    if seed is None or choice == 0:
        return seed
    digest = hashlib.blake2b(f"{seed}/{choice}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % INT64


def _check_prompt_size(body: ChatCompletionRequest, context: int, longest_token: int) -> None:
    """A 400 for messages that cannot fit the context whatever they tokenise to: no token holds
    more than ``longest_token`` characters, so the text's length bounds its token count below."""
    chars = sum(len(str(m.content or "")) for m in body.messages)
    if chars > context * longest_token:
        raise RequestError(
            400,
            f"messages: {chars} characters are more than the model's context of "
            f"{context} tokens can hold",
        )


def longest_token(tokenizer: Any) -> int:
    """An upper bound on the characters one token decodes to: its longest vocabulary entry (a
    byte-level or SentencePiece entry has a character per byte or per character it decodes to)."""
    return max((len(t) for t in tokenizer.get_vocab()), default=1)


def _render(engine: Engine, body: ChatCompletionRequest) -> list[int]:
    """Prompt ids through the chat template; a template that rejects the chat is a 400."""
    messages = [m.for_template() for m in body.messages]
    try:
        return engine.render(messages, body.tools)
    except Exception as e:  # jinja errors, raise_exception() in templates, bad tool schemas
        raise RequestError(400, f"messages: the chat template rejected them: {e}") from e


async def _recorded(
    recorder: Recorder,
    engine: Engine,
    body: ChatCompletionRequest,
    request: Request,
    generate: Any,
) -> list[Generation]:
    """A request under recording: its session's prompt ids (continuing an earlier call's where
    the text allows), generated with the EOS kept and filed; the client never sees the kept EOS.
    Nothing is filed for a request that fails or whose client goes away."""
    session = recorder.session_of(body.user, request.headers.get(SESSION_HEADER))
    messages = [m.for_template() for m in body.messages]
    try:
        key = request.headers.get(KEY_HEADER)
        plan = await asyncio.to_thread(
            recorder.plan, session, key, messages, body.tools, engine.tokenizer
        )
    except RecordingError:
        raise
    except Exception as e:  # jinja errors, raise_exception() in templates, bad tool schemas
        raise RequestError(400, f"messages: the chat template rejected them: {e}") from e
    try:
        gens = await generate(body, request, plan.prompt_ids, keep_eos=True)
    except BaseException:
        recorder.release(plan)
        raise
    asked = body.model_dump(include={"temperature", "top_p", "max_tokens", "seed", "stop", "n"})
    await asyncio.to_thread(
        recorder.record, plan, messages, body.tools, gens, engine.tokenizer, asked
    )
    return [without_eos(g, engine.tokenizer.eos_token_id) for g in gens]


def _max_tokens(body: ChatCompletionRequest, prompt: int, context: int, default: int) -> int:
    """The completion budget: what was asked for, if prompt and completion fit the context."""
    room = context - prompt
    if room < 1:
        raise RequestError(
            400, f"messages: the prompt is {prompt} tokens; the model's context is {context}"
        )
    asked = body.max_completion_tokens or body.max_tokens
    if asked is None:
        return min(default, room)
    if asked > room:
        field = "max_completion_tokens" if body.max_completion_tokens else "max_tokens"
        raise RequestError(
            400,
            f"{field}: {asked} is too many; the model's context is {context} tokens and the "
            f"messages take {prompt}, so at most {room} can be generated",
        )
    return asked


async def _results(futures: list[Future[Generation]], request: Request) -> list[Generation]:
    """Wait for the generations; cancel them if the client goes away (or the wait is cancelled)."""
    waiting = asyncio.ensure_future(asyncio.gather(*(asyncio.wrap_future(f) for f in futures)))
    try:
        while not waiting.done():
            await asyncio.wait([waiting], timeout=0.1)
            if not waiting.done() and await request.is_disconnected():
                raise RequestError(499, "client disconnected")
        return list(waiting.result())
    except TimeoutError as e:
        raise RequestError(504, f"timed out: {e}", "timeout") from e
    except EngineClosed as e:
        raise RequestError(503, str(e), "server_shutting_down") from e
    finally:
        for future in futures:
            future.cancel()
        waiting.cancel()
        waiting.add_done_callback(_retrieve)  # a cancelled gather ends in an error nobody reads


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a finished future's outcome as read, so asyncio does not log it as lost."""
    if not future.cancelled():
        future.exception()


def _completion(
    gens: list[Generation], body: ChatCompletionRequest, model: str, engine: Engine
) -> dict[str, Any]:
    choices = []
    for i, g in enumerate(gens):
        message = (
            parse_tool_calls(g.text) if body.tools else {"role": "assistant", "content": g.text}
        )
        choice: dict[str, Any] = {
            "index": i,
            "message": message,
            "finish_reason": "tool_calls" if message.get("tool_calls") else g.finish_reason,
            "logprobs": None,
        }
        if body.logprobs:
            tokens = [str(engine.tokenizer.decode([t])) for t in g.token_ids]
            choice["logprobs"] = {
                "content": [
                    {
                        "token": t,
                        "logprob": lp if math.isfinite(lp) else -9999.0,  # OpenAI's floor
                        "bytes": list(t.encode("utf-8", "surrogatepass")),
                        "top_logprobs": [],
                    }
                    for t, lp in zip(tokens, g.logprobs, strict=True)
                ]
            }
        choices.append(choice)
    completion_tokens = sum(len(g.token_ids) for g in gens)
    prompt_tokens = gens[0].prompt_tokens
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


async def _sse(response: dict[str, Any]) -> AsyncIterator[str]:
    """The finished completion as OpenAI-style ``chat.completion.chunk`` events."""
    base = {k: response[k] for k in ("id", "created", "model")} | {
        "object": "chat.completion.chunk"
    }
    for choice in response["choices"]:
        message = choice["message"]
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        deltas += [{"content": piece} for piece in _pieces(message.get("content") or "")]
        if message.get("tool_calls"):
            deltas.append(
                {"tool_calls": [c | {"index": j} for j, c in enumerate(message["tool_calls"])]}
            )
        for delta in deltas:
            chunk = base | {
                "choices": [{"index": choice["index"], "delta": delta, "finish_reason": None}]
            }
            yield f"data: {json.dumps(chunk)}\n\n"
        end = {"index": choice["index"], "delta": {}, "finish_reason": choice["finish_reason"]}
        yield f"data: {json.dumps(base | {'choices': [end]})}\n\n"
    yield f"data: {json.dumps(base | {'choices': [], 'usage': response['usage']})}\n\n"
    yield "data: [DONE]\n\n"


def _pieces(text: str, size: int = 16) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


class ServerThread:
    """Run the server in a background thread (tests, benchmarks, notebooks); ``url`` ends in /v1."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        sock = self.server.servers[0].sockets[0].getsockname()
        self.url = f"http://{sock[0]}:{sock[1]}/v1"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve(
    path: str | Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    name: str | None = None,
    max_batch_size: int = 32,
    request_timeout_s: float | None = 600.0,
    engine_name: str = "local",
    dtype: str | None = None,
    api_key: str | None = None,
    kv_cache_gb: float | None = None,
    recorder: Recorder | None = None,
) -> None:
    """Load ``path`` on engine ``engine_name`` (``local`` or ``vllm``; in ``dtype``, else the
    engine's default precision; keys and values within ``kv_cache_gb`` GiB, else the engine's
    default budget) and serve it until SIGINT or SIGTERM, to clients sending ``api_key`` when one
    is given (required for a ``host`` other machines can reach).

    ``recorder``: files every session's calls (:mod:`agentgym.llm.recording`; made before the
    model loads, so a recording file another server holds is refused at once).

    On the signal, the requests in flight fail with 503 at their next decode step (uvicorn alone
    waits for them: a long generation held the process for minutes) and the server exits.
    """
    import uvicorn

    from agentgym.llm.engine import load_engine

    check_exposure(host, api_key)
    engine = load_engine(engine_name, path, max_batch_size, dtype, kv_cache_gb=kv_cache_gb)
    model_name = name or Path(path).name
    app = create_app(
        engine,
        model_name,
        request_timeout_s=request_timeout_s,
        api_key=api_key,
        hosts=allowed_hosts(host),
        recorder=recorder,
    )
    config = uvicorn.Config(
        app, host=host, port=port, log_level="info", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    graceful = server.handle_exit

    def handle_exit(sig: int, frame: Any) -> None:
        engine.cancel_all()
        graceful(sig, frame)

    server.handle_exit = handle_exit  # type: ignore[method-assign]
    try:
        server.run()
    finally:
        engine.cancel_all()
        engine.close()
        if recorder is not None:
            recorder.close()
