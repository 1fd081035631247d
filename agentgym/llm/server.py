"""``agentgym serve PATH``: an OpenAI-compatible HTTP server for a local transformers checkpoint.

Endpoints ``/v1/models`` and ``/v1/chat/completions`` (``n``, ``logprobs``, ``max_tokens``,
``temperature``, ``top_p``, ``stop``, ``seed``, ``tools``, ``stream``). Concurrent requests share the
dynamic batcher of :class:`~agentgym.llm.engine.LocalEngine`, so 32 clients cost about one batch.
Streaming sends the completion as server-sent events once its batch is done (the batcher generates
whole sequences; it does not stream token by token).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from agentgym.llm.clients import parse_tool_calls
from agentgym.llm.engine import Generation, LocalEngine


class ChatCompletionRequest(BaseModel):
    """The subset of OpenAI's request body the server honours (unknown fields are ignored)."""

    model: str = ""
    messages: list[dict[str, Any]] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    n: int = Field(default=1, ge=1, le=64)
    stop: list[str] | None = None
    stream: bool = False
    logprobs: bool = False
    seed: int | None = None
    tools: list[dict[str, Any]] | None = None

    @field_validator("stop", mode="before")
    @classmethod
    def _stop_as_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


def create_app(engine: LocalEngine, model_name: str, default_max_tokens: int = 256) -> Any:
    """The FastAPI application serving ``engine`` as ``model_name``."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, StreamingResponse

    app = FastAPI(title="agentgym serve")
    created = int(time.time())

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"] if p != "body")
        message = f"{where}: {first['msg']}"
        return JSONResponse(
            status_code=400,
            content={"error": {"message": message, "type": "invalid_request_error", "code": None}},
        )

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        card = {"id": model_name, "object": "model", "created": created, "owned_by": "agentgym"}
        return {"object": "list", "data": [card]}

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(body: ChatCompletionRequest) -> Any:
        prompt = engine.render(body.messages, body.tools)
        max_tokens = body.max_completion_tokens or body.max_tokens or default_max_tokens
        futures = [
            engine.submit(
                prompt,
                max_new_tokens=max_tokens,
                stop=body.stop,
                temperature=body.temperature,
                top_p=body.top_p,
                seed=None if body.seed is None else body.seed + i,
            )
            for i in range(body.n)
        ]
        gens = list(await asyncio.gather(*(asyncio.wrap_future(f) for f in futures)))
        response = _completion(gens, body, model_name, engine)
        if not body.stream:
            return response
        return StreamingResponse(_sse(response), media_type="text/event-stream")

    return app


def _completion(
    gens: list[Generation], body: ChatCompletionRequest, model: str, engine: LocalEngine
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
                    {"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
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
) -> None:
    """Load ``path`` and serve it until interrupted."""
    import uvicorn

    engine = LocalEngine(path, max_batch_size=max_batch_size)
    uvicorn.run(create_app(engine, name or Path(path).name), host=host, port=port, log_level="info")
