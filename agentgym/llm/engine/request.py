"""What a caller hands the engine and gets back: a request (its sampling a
:class:`~agentgym.llm.sampling.SamplingSpec`), its result.

Shared by every engine path (continuous batching, the ``generate`` fallback) and mirrored by the
vLLM engine, so callers never see which one runs.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from agentgym.llm.sampling import SamplingSpec
from agentgym.traits import DEFAULT_MAX_TOKENS


class Generation(BaseModel):
    """One completion: text, its token ids and logprobs, and why it stopped."""

    text: str
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str
    """``"stop"`` (end-of-sequence token or a stop string) or ``"length"`` (token limit)."""
    prompt_tokens: int


class EngineClosed(RuntimeError):
    """The engine was shut down (``cancel_all``) before this request finished."""


@dataclass
class Request:
    """One queued generation and the future its caller waits on."""

    prompt_ids: list[int]
    sampling: SamplingSpec
    """Resolved: ``max_tokens`` and ``stop`` set (:func:`make_request`)."""
    seed: int | None
    deadline: float | None = None
    """``time.monotonic()`` past which the request fails with :class:`TimeoutError`."""
    timeout_s: float | None = None
    watched: bool = False
    """Queued by a caller who may cancel it: generation checks it at every step."""
    keep_eos: bool = False
    """Keep the end-of-sequence token that stopped it in ``token_ids`` (a trainer's action)."""
    future: Future[Generation] = field(default_factory=Future)

    @property
    def max_tokens(self) -> int:
        """The request's own token limit."""
        return self.sampling.max_tokens or DEFAULT_MAX_TOKENS

    @property
    def stop(self) -> tuple[str, ...]:
        return self.sampling.stop or ()

    def abandoned(self) -> bool:
        """Nobody waits for this request any more: cancelled, failed, or past its deadline."""
        return self.future.done() or self.expired()

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def deliver(self, result: Generation | BaseException) -> None:
        """Resolve the future unless the caller already gave up; a late result becomes a timeout."""
        if self.future.done():
            return
        if self.expired() and not isinstance(result, BaseException):
            result = TimeoutError(f"generation passed its deadline of {self.timeout_s:g} s")
        if isinstance(result, BaseException):
            self.future.set_exception(result)
        else:
            self.future.set_result(result)


@dataclass
class EngineStats:
    """Counters over everything run so far (benchmarks and tests read them)."""

    batches: int = 0
    """Forward passes (continuous batching) or ``generate`` calls (the fallback)."""
    rows: int = 0
    steps: int = 0
    """Decode steps: one forward pass of the running batch each."""
    row_steps: int = 0
    """Rows times steps: the decode work, stopped rows included (the fallback pays for those)."""
    prompt_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens whose keys and values an earlier request left in the prefix cache."""
    prefill_tokens: int = 0
    """Prompt positions computed, padding included."""
    completion_tokens: int = 0
    abandoned: int = 0
    """Requests dropped or stopped early because their caller cancelled or their deadline passed."""


def make_request(prompt_ids: list[int], sampling: SamplingSpec, seed: int | None) -> Request:
    """A request from a caller's arguments (every engine builds them here); settings the spec
    leaves None get their env-free defaults (256 tokens, no stop)."""
    if not prompt_ids:
        raise ValueError("the prompt is empty: give at least one token id")
    return Request(list(prompt_ids), sampling.for_env(), seed)


def finish(
    tokenizer: Any, request: Request, tokens: list[int], logprobs: list[float]
) -> Generation:
    """Cut one sequence at EOS, its stop strings or its own token limit."""
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    reason = "length"
    keep = min(len(tokens), request.max_tokens)
    for i, tok in enumerate(tokens[:keep]):
        if tok in (eos, pad):
            keep, reason = i + (request.keep_eos and tok == eos), "stop"
            break
    tokens = tokens[:keep]
    text = tokenizer.decode(tokens, skip_special_tokens=True)
    cut = min((text.find(s) for s in request.stop if s and s in text), default=-1)
    if cut >= 0:
        text, reason = text[:cut], "stop"
        while len(tokens) > 1 and text in tokenizer.decode(tokens[:-1], skip_special_tokens=True):
            tokens = tokens[:-1]
    return Generation(
        text=text,
        token_ids=tokens,
        logprobs=logprobs[: len(tokens)],
        finish_reason=reason,
        prompt_tokens=len(request.prompt_ids),
    )


def render_chat(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> list[int]:
    """Prompt token ids of a chat through the checkpoint's own chat template (every engine)."""
    ids = tokenizer.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=True
    )
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def context_length(model: Any, tokenizer: Any) -> int:
    """The most tokens (prompt and completion together) a transformers model attends over."""
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(model.config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return int(tokenizer.model_max_length)


def prompt_seeds(count: int, seed: int | None, seeds: list[int] | None) -> list[int | None]:
    """Each prompt's seed in a ``generate_batch`` of ``count``: ``seeds[i]``, else ``seed + i``
    (every engine: a job-keyed seed makes a prompt's text independent of its batch)."""
    if seeds is not None:
        if len(seeds) != count:
            raise ValueError(f"seeds has {len(seeds)} entries for {count} prompts")
        return list(seeds)
    return [None if seed is None else seed + i for i in range(count)]
