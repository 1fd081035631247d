"""A scripted chat client (like Inspect's ``mockllm``): tests the agent machinery, offline.

It never stands in for a real backend in tests that name one; those talk to ``agentgym serve``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from agentgym.episode import Usage
from agentgym.llm.base import ChatRequest, ChatResponse, Choice, Message


class ScriptedClient:
    """Replies from a list of messages (or strings), or from a function of the request."""

    def __init__(
        self, replies: Iterable[Message | str] | Callable[[ChatRequest], Message | str]
    ) -> None:
        self.model = "scripted"
        self._fn = replies if callable(replies) else None
        self._replies = [] if callable(replies) else list(replies)
        self.requests: list[ChatRequest] = []

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        if self._fn is not None:
            reply = self._fn(request)
        elif self._replies:
            reply = self._replies.pop(0)
        else:
            raise RuntimeError("ScriptedClient ran out of replies")
        message = {"role": "assistant", "content": reply} if isinstance(reply, str) else reply
        usage = Usage(
            prompt_tokens=sum(len(str(m.get("content"))) for m in request.messages),
            completion_tokens=1,
        )
        return ChatResponse(choices=[Choice(message=message)], usage=usage, model=self.model)
