"""The chat client of the TRL adapter's episodes: agentgym's one episode loop (a
:class:`~agentgym.chat_agent.ChatAgent` in :func:`agentgym.rollout.rollout`) sampling from the
trainer's model, token-exact, all episodes of a call in one generation batch per turn.

Each episode plays in a thread of its own with a :class:`TokenClient`: it renders the chat's
first request through the chat template once, then appends each later user turn (the next
observation, or a format correction) as the template's observation turn
(:meth:`ChatFormat.observation`), so the sampled ids are never tokenised again. Its samples go
through one :class:`GenerationBatch`, which generates once every episode still playing waits on
a sample.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from agentgym.episode import Usage
from agentgym.llm.base import ChatRequest, ChatResponse, Choice, Message
from agentgym.llm.engine.request import Generation
from agentgym.llm.sampling import SamplingSpec
from agentgym.train.chat import ChatFormat

Sample = tuple[list[int], SamplingSpec]
"""One request to the model: the context's token ids and how to sample its continuation."""


class OutOfBudget(RuntimeError):
    """The episode's next turn would not fit TRL's ``max_completion_length``."""


class GenerationBatch:
    """Samples of the episodes in flight, generated together: a batch runs (in the thread of
    :meth:`serve`) once every episode still playing waits on one."""

    def __init__(self, generate: Callable[[list[Sample]], list[Generation]], playing: int) -> None:
        self.generate = generate
        self.playing = playing
        self.waiting: list[tuple[Sample, Future[Generation]]] = []
        self.ready = threading.Condition()

    def sample(self, context: list[int], sampling: SamplingSpec) -> Generation:
        """Wait for this context's continuation (from an episode's thread)."""
        future: Future[Generation] = Future()
        with self.ready:
            self.waiting.append(((context, sampling), future))
            self.ready.notify_all()
        return future.result()

    def leave(self) -> None:
        """An episode ended: it waits on no more samples."""
        with self.ready:
            self.playing -= 1
            self.ready.notify_all()

    def serve(self) -> None:
        """Generate batches until every episode has left."""
        while True:
            with self.ready:
                self.ready.wait_for(lambda: len(self.waiting) >= self.playing)
                if not self.waiting:
                    return
                batch, self.waiting = self.waiting, []
            try:
                results = self.generate([sample for sample, _ in batch])
            except BaseException as e:  # every waiting episode fails with it
                for _, future in batch:
                    future.set_exception(e)
                continue
            for (_, future), result in zip(batch, results, strict=True):
                future.set_result(result)


class TokenClient:
    """One episode's :class:`~agentgym.llm.base.ChatClient`: its token rows as TRL trains them
    (``prompt_ids``, ``completion_ids`` with ``env_mask`` 1 on sampled tokens, ``logprobs``)."""

    model = "trl"

    def __init__(self, chat: ChatFormat, batch: GenerationBatch, budget: int) -> None:
        self.chat, self.batch, self.budget = chat, batch, budget
        self.prompt_ids: list[int] = []
        self.completion_ids: list[int] = []
        self.env_mask: list[int] = []
        self.logprobs: list[float] = []
        self.sampled: list[tuple[int, int]] = []
        """``[start, end)`` of each call's sampled tokens in ``completion_ids``."""
        self.sent = 0
        self.out_of_budget = False

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Append the request's new user turn, sample the reply (TRL's generation config, the
        request's token budget and stop), and return it with its ids and logprobs."""
        messages = [m for m in request.messages if self._kept(m)]
        if not self.prompt_ids:
            self.prompt_ids = self.chat.render(messages)
        else:
            self._user_turn(messages[self.sent :])
        room = self.budget - len(self.completion_ids)
        limit = min(request.max_tokens or room, room)
        sampling = SamplingSpec(max_tokens=limit, stop=tuple(request.stop or ()))
        gen = self.batch.sample(self.prompt_ids + self.completion_ids, sampling)
        start = len(self.completion_ids)
        self._extend(list(gen.token_ids), 1, list(gen.logprobs))
        self.sampled.append((start, len(self.completion_ids)))
        self.sent = len(messages) + 1  # the reply is the agent's next message
        choice = Choice(
            message={"role": "assistant", "content": gen.text},
            token_ids=list(gen.token_ids),
            logprobs=list(gen.logprobs),
        )
        usage = Usage(
            prompt_tokens=len(self.prompt_ids) + start, completion_tokens=len(gen.token_ids)
        )
        return ChatResponse(choices=[choice], usage=usage, model=self.model)

    def _kept(self, message: Message) -> bool:
        return self.chat.use_system_prompt or message["role"] != "system"

    def _user_turn(self, new: list[Message]) -> None:
        if [m["role"] for m in new] != ["user"]:
            raise ValueError("a TRL episode's chat grows by one user turn per request")
        ended = bool(self.completion_ids) and self.completion_ids[-1] == self.chat.eos_id
        turn = self.chat.observation(str(new[0].get("content") or ""), ended)
        if len(self.completion_ids) + len(turn) >= self.budget:
            self.out_of_budget = True
            raise OutOfBudget(f"the next turn does not fit max_completion_length={self.budget}")
        self._extend(turn, 0, [0.0] * len(turn))

    def _extend(self, ids: list[int], mask: int, logprobs: list[float]) -> None:
        self.completion_ids += ids
        self.env_mask += [mask] * len(ids)
        self.logprobs += logprobs


def rows(client: TokenClient) -> dict[str, Any]:
    """The client's token rows, as :class:`~agentgym.integrations.trl.TrlEpisode` keeps them."""
    return {
        "prompt_ids": client.prompt_ids,
        "completion_ids": client.completion_ids,
        "env_mask": client.env_mask,
        "logprobs": client.logprobs,
        "sampled": client.sampled,
    }
