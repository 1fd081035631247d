"""LocalEngine: continuous batching over a local Llama-shaped checkpoint.

Requests from many threads (the evaluator's concurrent episodes, the HTTP server's clients) go
into a queue; one engine thread adds whatever has arrived to the scheduler before every step, so a
request joins the running batch at the next step and leaves it the step it stops. A step is
:meth:`Scheduler.schedule` (what runs), :meth:`LlamaRunner.forward` (one forward over it) and
:func:`sample` (the next tokens); the rest of this file is bookkeeping: stops, results, errors.
``generate_batch`` drives the same loop from the calling thread when no engine thread runs (a
trainer's rollouts).

Architectures the runner does not cover run on
:class:`~agentgym.llm.engine.fallback.FallbackEngine` instead (``transformers.generate`` behind a
dynamic batcher); :func:`~agentgym.llm.engine.loader.load_engine` chooses.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Any

from agentgym.llm.engine.base import Engine, load_checkpoint
from agentgym.llm.engine.kv_cache import PrefixBlocks
from agentgym.llm.engine.memory import IDLE_PREFIX_SHARE, budget_bytes, trim_heap
from agentgym.llm.engine.model_runner import LlamaRunner, unsupported
from agentgym.llm.engine.request import Generation, Request, finish
from agentgym.llm.engine.sampler import generator, sample
from agentgym.llm.engine.scheduler import Scheduler, Sequence


class LocalEngine(Engine):
    """Thread-safe continuous batching for one local Llama-shaped causal LM."""

    def __init__(
        self,
        path: str | Path,
        max_batch_size: int = 32,
        device: str = "cpu",
        prefix_cache_mb: int = 4096,
        dtype: str = "float32",
        kv_cache_gb: float | None = None,
    ) -> None:
        """``kv_cache_gb``: the memory budget of keys and values in GiB, the running sequences'
        slots and the prefix blocks together (None: :func:`~agentgym.llm.engine.memory.
        default_budget`, proportionate to the model and the machine); ``prefix_cache_mb`` caps
        the prefix blocks within it (0: no prefix cache)."""
        path, tokenizer, model = load_checkpoint(path, device, dtype)
        if why := unsupported(model):
            raise ValueError(
                f"continuous batching cannot run {path}: {why}; load it with "
                "load_engine('local', ...), which runs it on FallbackEngine"
            )
        self._setup(model, tokenizer, path, max_batch_size, device, prefix_cache_mb, kv_cache_gb)

    @classmethod
    def from_model(
        cls,
        model: Any,
        tokenizer: Any,
        max_batch_size: int = 32,
        device: str = "cpu",
        thread: bool = False,
        prefix_cache_mb: int = 0,
        kv_cache_gb: float | None = None,
    ) -> LocalEngine:
        """An engine over a model already in memory (a trainer's policy: rollouts use its weights).

        The model is used as is (not copied, not put in eval mode), so weight updates apply at
        once; cached prefixes do not follow them: call :meth:`sync_weights` after every update.
        ``thread=False`` starts no engine thread until the first :meth:`submit`:
        :meth:`generate_batch` runs in the calling thread. A model the runner does not cover is
        refused (``load_engine`` runs it on the fallback).
        """
        if why := unsupported(model):
            raise ValueError(f"continuous batching cannot run this model: {why}")
        engine = cls.__new__(cls)
        engine._setup(model, tokenizer, None, max_batch_size, device, prefix_cache_mb, kv_cache_gb)
        if thread:
            engine._start()
        return engine

    def _setup(
        self,
        model: Any,
        tokenizer: Any,
        path: str | None,
        max_batch_size: int,
        device: str,
        prefix_cache_mb: int,
        kv_cache_gb: float | None,
    ) -> None:
        self._attach(model, tokenizer, path, device, max_batch_size)
        self.runner = LlamaRunner(model, device)
        self.cache = self.runner.new_cache()
        context = self.max_context_tokens
        self.memory_bytes = budget_bytes(kv_cache_gb, model, self.cache.nbytes_per_token(), context)
        """The budget of the slots and prefix blocks together (:mod:`~agentgym.llm.engine.memory`)."""
        self.cache.max_bytes = self.memory_bytes
        prefix_bytes = min(prefix_cache_mb << 20, self.memory_bytes)
        self.prefix_cache = PrefixBlocks(prefix_bytes) if prefix_cache_mb > 0 else None
        self.scheduler = Scheduler(
            self.cache, self.prefix_cache, max_batch_size, 512, self.memory_bytes, context
        )
        self.release_after_s = 1.0
        """Idle seconds after which the engine thread gives memory back (:meth:`release`)."""
        self._ends = {tokenizer.eos_token_id, tokenizer.pad_token_id} - {None}
        self._queue: queue.Queue[Request | None] = queue.Queue()
        self._sequences: dict[int, Sequence] = {}
        self._thread: threading.Thread | None = None
        self._closing = False

    # ------------------------------------------------------------------ what differs
    def _enqueue(self, requests: list[Request]) -> None:
        if self._thread is None:
            self._start()
        for request in requests:
            self._queue.put(request)

    def _run_batch(self, requests: list[Request]) -> list[Generation]:
        """Through the engine thread if one runs, else stepped here in the calling thread."""
        if self._thread is not None:
            return super()._run_batch(requests)
        with self._lock:
            for request in requests:
                self._add(request)
            while not all(r.future.done() for r in requests):
                self._step()
        return [r.future.result() for r in requests]

    def _running_requests(self) -> list[Request]:
        return [s.request for s in self._sequences.copy().values()]  # atomic under the GIL

    # ------------------------------------------------------------------ the loop
    def _start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="agentgym-engine", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        closing, released = False, True
        while True:
            busy = self.scheduler.busy()
            if not busy and closing:
                return
            try:
                if busy:
                    item = self._queue.get_nowait()
                elif released:
                    item = self._queue.get()
                else:  # idle: wait a little, then give memory back before waiting on
                    try:
                        item = self._queue.get(timeout=self.release_after_s)
                    except queue.Empty:
                        self.release()
                        released = True
                        continue
                while True:
                    if item is None:
                        closing = True
                    else:
                        self._add(item)
                    item = self._queue.get_nowait()
            except queue.Empty:
                pass
            if self.scheduler.busy():
                released = False
                with self._lock:
                    self._step()

    def clear_prefix_cache(self) -> None:
        """Forget every cached prefix and parked slot (after the model's weights change)."""
        with self._lock:
            self.scheduler.drop_parked()
            super().clear_prefix_cache()

    def release(self) -> None:
        """Give memory back once no sequence runs: the parked slots go, the slot tensor shrinks
        to its smallest, and the prefix blocks to a quarter of the budget (the most recent
        prefixes stay cached)."""
        with self._lock:
            if self.scheduler.busy():
                return
            self.cache.reset()
            if self.prefix_cache is not None:
                self.prefix_cache.evict(self.memory_bytes // IDLE_PREFIX_SHARE)
            trim_heap()

    def _add(self, request: Request) -> None:
        if request.future.done():  # cancelled while queued
            return
        vocab = self.runner.vocab_size
        bad = next((t for t in request.prompt_ids if not 0 <= t < vocab), None)
        if bad is not None:  # it would fail the whole step it joins: fail it alone, now
            request.deliver(IndexError(f"token id {bad} is outside the vocabulary [0, {vocab})"))
            return
        seq = Sequence(request, generator(request.seed, request.sampling, self.device))
        self._sequences[id(request)] = seq
        self.scheduler.add(seq)

    def _step(self) -> None:
        """One forward over what the scheduler picks; sample; finish what stopped."""
        import torch

        with torch.inference_mode():  # the caches are inference tensors
            self._step_inner()

    def _step_inner(self) -> None:
        for seq in [*self.scheduler.waiting, *self.scheduler.running]:
            if seq.request.abandoned():  # cancelled by its caller, or past its deadline
                self.stats.abandoned += 1
                limit = seq.request.timeout_s
                why = "was abandoned" if limit is None else f"passed its deadline of {limit:g} s"
                self._end(seq, TimeoutError(f"generation {why}"))
        plan = self.scheduler.schedule()
        if not plan:
            return
        chunks = [chunk for _, chunk in plan]
        try:
            logits = self.runner.forward(chunks, self.cache, self.scheduler.shared_prefix(plan))
        except Exception as e:  # a failed step fails its requests, never the engine thread
            for seq, _ in plan:
                self._end(seq, e)
            return
        self._count(plan)
        ready = []
        for row, (seq, chunk) in enumerate(plan):
            self.scheduler.computed(seq, len(chunk.ids))
            if seq.pending == 0:
                ready.append((row, seq))
        if not ready:
            return
        rows = [row for row, _ in ready]
        params = [seq.request.sampling for _, seq in ready]
        tokens, logprobs = sample(logits[rows], params, [seq.generator for _, seq in ready])
        for (_, seq), token, logprob in zip(ready, tokens, logprobs, strict=True):
            seq.tokens.append(token)
            seq.logprobs.append(logprob)
            if self._stopped(seq, token):
                self._end(seq, None)

    def _stopped(self, seq: Sequence, token: int) -> bool:
        request = seq.request
        if token in self._ends or len(seq.tokens) >= request.max_tokens:
            return True
        stops = [s for s in request.stop if s]
        if not stops:
            return False
        text = self.tokenizer.decode(seq.tokens, skip_special_tokens=True)
        return any(s in text for s in stops)

    def _end(self, seq: Sequence, error: BaseException | None) -> None:
        """Take ``seq`` out of the batch (parked for its next turn if it stopped by itself) and
        resolve its future."""
        self.scheduler.finish(seq, park=error is None)
        self._sequences.pop(id(seq.request), None)
        if error is not None:
            seq.request.deliver(error)
            return
        result = finish(self.tokenizer, seq.request, seq.tokens, seq.logprobs)
        s = self.stats
        s.rows += 1
        s.prompt_tokens += result.prompt_tokens
        s.cached_tokens += seq.cached
        s.completion_tokens += len(result.token_ids)
        seq.request.deliver(result)

    def _count(self, plan: list[tuple[Sequence, Any]]) -> None:
        decode = sum(1 for _, c in plan if len(c.ids) == 1)
        s = self.stats
        s.batches += 1
        s.steps += bool(decode)
        s.row_steps += decode
        s.prefill_tokens += sum(len(c.ids) for _, c in plan if len(c.ids) > 1)
        self.batch_sizes.append(len(plan))
