"""The chat-client contract every backend implements, in OpenAI's message format."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from agentgym.episode import Usage

Message = dict[str, Any]
"""An OpenAI chat message: ``{"role": ..., "content": ..., ["tool_calls": ...]}``."""


class ChatRequest(BaseModel):
    """One chat completion request; the cache key is its JSON plus the episode seed."""

    messages: list[Message]
    model: str = ""
    temperature: float = 0.0
    top_p: float | None = None
    """None: the backend's own (1.0 everywhere); left out of the cache key then, so a cache
    written before requests carried it still answers."""
    max_tokens: int | None = 512
    stop: list[str] | None = None
    tools: list[dict[str, Any]] | None = None
    n: int = 1
    seed: int | None = None
    """Sampling seed, where the backend honours one (local models do)."""
    logprobs: bool = False


class Choice(BaseModel):
    """One completion of a request."""

    message: Message
    finish_reason: str = "stop"
    token_ids: list[int] | None = None
    """Completion token ids, where the backend exposes them (local models, for training)."""
    logprobs: list[float] | None = None


class ChatResponse(BaseModel):
    """What a backend returned, with what it cost."""

    choices: list[Choice]
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    latency_s: float = 0.0
    cached: bool = False

    @property
    def text(self) -> str:
        """The first choice's text content ("" for a pure tool call)."""
        return str(self.choices[0].message.get("content") or "")


@runtime_checkable
class ChatClient(Protocol):
    """A chat backend. ``complete`` is thread-safe: episodes call it from worker threads."""

    model: str

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Run one request (with the client's retries, rate limits and cache)."""
        ...
