"""The one episode loop (:func:`agentgym.rollout.rollout` with a
:class:`~agentgym.chat_agent.ChatAgent`), played from async code whose model calls are coroutines:
an Inspect AI solver, a verifiers environment.

:func:`play` runs the loop in a worker thread of its own and awaits its :class:`Episode`;
:class:`LoopClient` is the ChatAgent's client there, each ``complete`` running the harness's
coroutine on the harness's event loop (in the caller's context, so the harness's per-sample state
follows). So the harness's model answers every request, and the messages, the parsing, the format
corrections and the step records are the loop's own, as in ``agentgym eval``.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from agentgym.episode import Episode
from agentgym.llm.base import ChatRequest, ChatResponse
from agentgym.rollout import rollout

AsyncComplete = Callable[[ChatRequest], Awaitable[ChatResponse]]
"""A harness's model call: one chat request in, its response out."""


class LoopClient:
    """A :class:`~agentgym.llm.base.ChatClient` whose requests run ``acomplete`` on ``loop``;
    call it from a thread other than the loop's (the worker thread of :func:`play`)."""

    def __init__(
        self,
        acomplete: AsyncComplete,
        model: str = "",
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.acomplete = acomplete
        self.model = model
        self.loop = loop or asyncio.get_running_loop()

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Run one request on the loop and wait for its response."""
        return asyncio.run_coroutine_threadsafe(self.acomplete(request), self.loop).result()


async def play(env: Any, agent: Any, task: Any, **options: Any) -> Episode:
    """:func:`~agentgym.rollout.rollout` (``options`` are its keywords) in a worker thread, in
    a copy of the caller's context; the caller's event loop stays free for the agent's calls."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Episode] = loop.create_future()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            episode = context.run(rollout, env, agent, task, **options)
        except BaseException as e:  # rollout records failures; anything else goes to the caller
            loop.call_soon_threadsafe(_settle, done, None, e)
        else:
            loop.call_soon_threadsafe(_settle, done, episode, None)

    threading.Thread(target=work, name="agentgym-play", daemon=True).start()
    return await done


def _settle(
    done: asyncio.Future[Episode], episode: Episode | None, error: BaseException | None
) -> None:
    if done.cancelled():
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(episode)  # type: ignore[arg-type]


__all__ = ["AsyncComplete", "LoopClient", "play"]
