"""The fallback engine: ``transformers.generate`` behind a dynamic batcher, for architectures
the continuous-batching runner does not cover.

:func:`~agentgym.llm.engine.loader.load_engine` runs a model here when
:func:`~agentgym.llm.engine.model_runner.unsupported` names a reason (another architecture, a
peft or policy wrapper around the model, sliding-window attention); ``benchmarks/engines.py``
measures it as the "before" of continuous batching.

Requests from many threads (the evaluator's concurrent episodes, or the HTTP server's concurrent
clients) queue up; one generation thread takes what has arrived (waiting for the previous batch's
callers to come back, see :meth:`FallbackEngine._collect`), up to ``max_batch_size``, and runs one
batched ``generate`` with the KV cache. Batching pays where decoding dominates; a prefill (long
first prompts) costs the same batched or not (figures: docs/results.md, "SmolLM2 generation
speed", from ``benchmarks/llm.py``).

Each row stops at its own stop strings, end-of-sequence token or token limit, and the batch ends
when every row has stopped (an agent's one-line action with ``stop=["\\n"]`` costs as many decode
steps as its longest line, not ``max_tokens``). Engines loaded from a checkpoint keep a
:class:`~agentgym.llm.engine.fallback_cache.PrefixCache`: a prompt that starts with an earlier prompt and its
completion (the next turn of an episode) prefills only its new tokens, and rows still going after
16, 32, 64... steps continue from it in a smaller batch.

Sampling draws each row's tokens from the row's own generator (Gumbel-max over the tempered,
top-p-filtered distribution), so a seeded request gives the same text alone or in any batch. A
queued request whose future is cancelled, or whose ``timeout_s`` passes, stops at its next decode
step; a batch that raises is rerun one request at a time, so only the culprit fails.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.llm.engine.base import Engine, load_checkpoint
from agentgym.llm.engine.fallback_cache import KV, Hit, Layout, PrefixCache, batch_cache, row_kv
from agentgym.llm.engine.memory import budget_bytes, bytes_per_token
from agentgym.llm.engine.request import Generation, finish
from agentgym.llm.engine.request import Request as _Request
from agentgym.llm.sampling import SamplingSpec


class FallbackEngine(Engine):
    """Thread-safe batched generation for one local causal LM checkpoint, through ``generate``."""

    def __init__(
        self,
        path: str | Path,
        max_batch_size: int = 32,
        max_wait_s: float = 0.005,
        device: str = "cpu",
        prefix_cache_mb: int = 4096,
        dtype: str = "float32",
        kv_cache_gb: float | None = None,
    ) -> None:
        """``kv_cache_gb``: the memory budget (as ``LocalEngine``'s) that bounds the prefix
        cache with ``prefix_cache_mb``; each batch's own cache lives only while it runs."""
        path, tokenizer, model = load_checkpoint(path, device, dtype)
        self._setup(model, tokenizer, path, max_batch_size, max_wait_s, device, thread=True)
        self._enable_prefix_cache(prefix_cache_mb, kv_cache_gb)

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
    ) -> FallbackEngine:
        """An engine over a model already in memory (a trainer's policy: rollouts use its weights).

        The model is used as is (not copied, not put in eval mode). ``thread=False`` starts no
        batching thread: call :meth:`generate_batch` from one thread, synchronously. The prefix
        cache is off by default: cached keys and values go stale when the weights change (call
        :meth:`clear_prefix_cache` after every update if you turn it on).
        """
        engine = cls.__new__(cls)
        engine._setup(model, tokenizer, None, max_batch_size, 0.005, device, thread=thread)
        engine._enable_prefix_cache(prefix_cache_mb, kv_cache_gb)
        return engine

    def _setup(
        self,
        model: Any,
        tokenizer: Any,
        path: str | None,
        max_batch_size: int,
        max_wait_s: float,
        device: str,
        thread: bool,
    ) -> None:
        import torch

        self._attach(model, tokenizer, path, device, max_batch_size)
        self.tokenizer.padding_side = "left"
        self.max_wait_s = max_wait_s
        self.prefix_cache: PrefixCache | None = None
        self.prefill_alone_tokens = 32
        """With a prefix cache, longer uncached prompt tails are prefilled one prompt at a time."""
        self.chunk_tokens = 16
        """With a prefix cache, the first round's steps (later rounds double; see ``_decode``)."""
        self._torch = torch
        self.patience = 0.25
        self.max_patience_s = 1.0
        """Gap in arrivals that closes a batch still short of the previous batch's callers:
        ``patience`` times that batch's duration, at most ``max_patience_s``."""
        self._last_rows, self._last_run_s = 1, 0.0
        self._queue: queue.Queue[_Request | None] = queue.Queue()
        self._running: list[_Request] = []
        self._thread: threading.Thread | None = None
        if thread:
            self._thread = threading.Thread(target=self._loop, name="agentgym-engine", daemon=True)
            self._thread.start()

    def _enable_prefix_cache(self, megabytes: int, kv_cache_gb: float | None) -> None:
        per_token = bytes_per_token(self.model)
        budget = budget_bytes(kv_cache_gb, self.model, per_token, self.max_context_tokens)
        if megabytes > 0 and _cache_api() is not None:
            self.prefix_cache = PrefixCache(min(megabytes << 20, budget))

    # ------------------------------------------------------------------ what differs
    def _enqueue(self, requests: list[_Request]) -> None:
        for request in requests:
            self._queue.put(request)

    def _run_batch(self, requests: list[_Request]) -> list[Generation]:
        """In this thread, ``max_batch_size`` at a time: a row's seed fixes its draws whatever
        the batch, so the grouping changes no text."""
        out: list[Generation] = []
        for start in range(0, len(requests), self.max_batch_size):
            group = requests[start : start + self.max_batch_size]
            out += self._run(group[0].sampling, group)
        return out

    def _running_requests(self) -> list[_Request]:
        return list(self._running)

    # ------------------------------------------------------------------ batching loop
    def _loop(self) -> None:
        while batch := self._collect():
            batch = self._live(batch)
            if not batch:
                continue
            started = time.monotonic()
            groups: dict[tuple[float, float], list[_Request]] = defaultdict(list)
            for request in batch:  # rows differing only in token limits and stops run together
                groups[request.sampling.batch_key].append(request)
            for group in groups.values():
                self._run_guarded(group[0].sampling, group)
            self._last_rows, self._last_run_s = len(batch), time.monotonic() - started

    def _collect(self) -> list[_Request]:
        """The next batch: requests until a gap in arrivals, or ``max_batch_size`` of them.

        Callers usually come back: an episode's next turn, a client's next request. Closing the
        batch on a short gap before the previous batch's callers are back would split them into
        two batches that then alternate for ever, each paying every decode step. So until as
        many requests as the previous batch answered have arrived, the batch closes only on a gap
        of ``patience`` times that batch's duration (at most ``max_patience_s``: callers whose
        episodes ended never come back); past that, on a gap of ``max_wait_s``.
        """
        first = self._queue.get()
        if first is None:  # closed
            return []
        batch = [first]
        expected = min(self._last_rows, self.max_batch_size)
        patient = min(self.max_patience_s, max(self.max_wait_s, self.patience * self._last_run_s))
        while len(batch) < self.max_batch_size:
            try:
                request = self._queue.get(
                    timeout=self.max_wait_s if len(batch) >= expected else patient
                )
            except queue.Empty:
                break
            if request is None:
                self._queue.put(None)  # run this batch, then stop
                break
            batch.append(request)
        return batch

    def _live(self, batch: list[_Request]) -> list[_Request]:
        """The requests someone still waits for; the others are dropped (expired ones time out)."""
        live = [r for r in batch if not r.abandoned()]
        for request in batch:
            if request.abandoned():
                self.stats.abandoned += 1
                request.deliver(
                    TimeoutError(f"queued past its deadline of {request.timeout_s:g} s")
                )
        return live

    def _run_guarded(self, sampling: SamplingSpec, group: list[_Request]) -> None:
        """Run a group; if it fails, run its requests one at a time so only the culprit fails."""
        self._running = group
        try:
            results: list[Generation | BaseException] = list(self._run(sampling, group))
        except Exception as e:  # a failed batch fails its requests, never the engine thread
            if len(group) > 1:
                for request in group:
                    self._run_guarded(sampling, [request])
                return
            results = [e]
        finally:
            self._running = []
        for request, result in zip(group, results, strict=True):
            if request.abandoned():
                self.stats.abandoned += 1
            request.deliver(result)

    def _match(self, prompt: list[int]) -> Hit | None:
        return None if self.prefix_cache is None else self.prefix_cache.match(prompt)

    # ------------------------------------------------------------------ one batch
    def _run(self, sampling: SamplingSpec, group: list[_Request]) -> list[Generation]:
        with self._lock:
            return self._run_locked(sampling, group)

    def _run_locked(self, sampling: SamplingSpec, group: list[_Request]) -> list[Generation]:
        self.batch_sizes.append(len(group))
        hits = [self._match(r.prompt_ids) for r in group]
        rows = [_Row(r, self._generator(r.seed, sampling)) for r in group]
        try:
            if self.prefix_cache is not None:
                self.prefix_cache.pinned.update(h.key for h in hits if h is not None)
                for request in group:
                    self._prefill_alone(request.prompt_ids)
            self._decode(sampling, rows)
        finally:
            self._unpin()
        gens = [finish(self.tokenizer, row.request, row.tokens, row.logprobs) for row in rows]
        self._count(gens, sum(_length(h) for h in hits))
        return gens

    def _decode(self, sampling: SamplingSpec, rows: list[_Row]) -> None:
        """Generate every row to its end, in rounds of doubling length when there is a cache.

        ``generate`` computes a stopped row until the whole batch stops: one agent that never
        writes its stop string would make 31 finished rows pay for its 48 tokens. So each round
        ends after ``chunk_tokens`` (then twice that...) steps, and only the rows still going
        continue, from the prefix cache, in a smaller batch.
        """
        live, chunk = rows, self.chunk_tokens
        while live:
            whole = self.prefix_cache is None or len(live) == 1
            self._generate(sampling, live, None if whole else chunk)
            live, chunk = [row for row in live if not row.done], chunk * 2

    def _generate(self, sampling: SamplingSpec, rows: list[_Row], limit: int | None) -> None:
        """One ``generate`` call over ``rows`` (at most ``limit`` steps), prefixes from the cache."""
        torch = self._torch
        prompts = [row.prompt_ids for row in rows]
        hits = [self._match(p) for p in prompts]
        batch = Layout(rows, [_length(h) for h in hits], self.tokenizer.pad_token_id)
        extra: dict[str, Any] = {}
        cache = None
        if self.prefix_cache is not None:
            cache = self._batch_cache(hits, batch.cached)
            extra[_cache_api()[0]] = cache  # type: ignore[index]
        ends = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        stops = _StopCriteria(self.tokenizer, batch.width, rows, ends)
        if stops.needed:
            from transformers import StoppingCriteriaList

            extra["stopping_criteria"] = StoppingCriteriaList([stops])
        sampler = _Sampler(sampling, [row.generator for row in rows])
        steps = max(row.left for row in rows)
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=torch.tensor(batch.ids, device=self.device),
                attention_mask=torch.tensor(batch.mask, device=self.device),
                max_new_tokens=steps if limit is None else min(steps, limit),
                do_sample=False,  # the sampler draws each row's token from the row's generator
                logits_processor=sampler.processors(),
                temperature=None,
                top_p=None,
                top_k=None,
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=self.tokenizer.eos_token_id,
                return_dict_in_generate=True,
                **extra,
            )
            logprobs = sampler.logprobs(out.sequences)
        new = out.sequences[:, batch.width :].tolist()
        for i, row in enumerate(rows):
            new[i] = row.take(new[i], logprobs[i], stops.stopped_at[i], ends)
        taken = out.sequences.shape[1] - batch.width
        self.stats.batches += 1
        self.stats.steps += taken
        self.stats.row_steps += len(rows) * taken
        self.stats.prefill_tokens += len(rows) * (batch.width - batch.cached)
        if cache is not None:
            self._remember(prompts, new, hits, batch, cache)

    def _generator(self, seed: int | None, sampling: SamplingSpec) -> Any:
        """A row's own random stream (seeded, or drawn from torch's global generator)."""
        if sampling.temperature <= 0:
            return None
        torch = self._torch
        if seed is None:
            seed = int(torch.randint(0, 2**62, ()).item())
        return torch.Generator(device=self.device).manual_seed(seed % 2**64)

    def _unpin(self) -> None:
        if self.prefix_cache is not None:
            self.prefix_cache.pinned.clear()
            self.prefix_cache.evict()

    def _prefill_alone(self, prompt: list[int]) -> None:
        """Cache all but the last token of a prompt with a long uncached tail, in a batch of one.

        Batched together, prompts of different lengths pad to the longest and attend through a
        padding mask; alone, each computes only its own tokens. The batch that follows then
        prefills one token per row and decodes together.
        """
        assert self.prefix_cache is not None
        hit = self._match(prompt)
        start, end = _length(hit), len(prompt) - 1
        if end - start <= self.prefill_alone_tokens:
            return
        torch = self._torch
        name, cache_class = _cache_api()  # type: ignore[misc]
        past = None if hit is None else self.prefix_cache.kv(hit)
        cache = cache_class(
            None if past is None else [(k[None, :, :start], v[None, :, :start]) for k, v in past],
            config=self.model.config,
        )
        with torch.inference_mode():
            self.model(
                input_ids=torch.tensor([prompt[start:end]], device=self.device),
                position_ids=torch.arange(start, end, device=self.device)[None],
                use_cache=True,
                logits_to_keep=1,
                **{name: cache},
            )
        if hit is not None and self.prefix_cache.continued(hit):
            self.prefix_cache.drop(hit.key)
        kv = [(layer.keys[0], layer.values[0]) for layer in cache.layers]
        self.prefix_cache.put(prompt[:end], end, kv, pin=True)  # kept until the batch has run
        self.stats.prefill_tokens += end - start

    def _batch_cache(self, hits: list[Hit | None], width: int) -> Any:
        """A transformers cache holding each row's cached prefix, right-aligned to ``width``."""
        assert self.prefix_cache is not None
        cache_class = _cache_api()[1]  # type: ignore[index]
        rows = [([], 0) if h is None else (self.prefix_cache.kv(h), h.length) for h in hits]
        template = next((kv for kv, n in rows if n), None)
        if template is None:
            return cache_class(config=self.model.config)
        return cache_class(batch_cache(rows, width, template), config=self.model.config)

    def _remember(
        self,
        prompts: list[list[int]],
        new: list[list[int]],
        hits: list[Hit | None],
        batch: Layout,
        cache: Any,
    ) -> None:
        """Cache every row's prompt and new tokens (pinned); drop the entries they continue."""
        assert self.prefix_cache is not None
        torch = self._torch
        kv: KV = [(layer.keys, layer.values) for layer in cache.layers]
        fed = kv[0][0].shape[2] - batch.width  # the last token generated was never fed back
        for hit in hits:
            if hit is not None and self.prefix_cache.continued(hit):
                self.prefix_cache.drop(hit.key)
        mask = torch.tensor(batch.mask)
        for i, (prompt, tokens) in enumerate(zip(prompts, new, strict=True)):
            m = min(len(tokens), fed)
            positions = torch.cat(
                [mask[i].nonzero().flatten(), torch.arange(batch.width, batch.width + m)]
            ).to(kv[0][0].device)
            kept = row_kv(kv, i, positions)
            self.prefix_cache.put(prompt + tokens[:m], len(prompt), kept, pin=True)

    def _count(self, gens: list[Generation], reused: int) -> None:
        s = self.stats
        s.rows += len(gens)
        s.prompt_tokens += sum(g.prompt_tokens for g in gens)
        s.cached_tokens += reused
        s.completion_tokens += sum(len(g.token_ids) for g in gens)


@dataclass
class _Row:
    """One request while it generates, possibly over several ``generate`` calls."""

    request: _Request
    generator: Any = None
    """The row's own ``torch.Generator`` when sampling (None: greedy)."""
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    done: bool = False

    @property
    def prompt_ids(self) -> list[int]:
        """What the next call continues from: the prompt and every token so far."""
        return self.request.prompt_ids + self.tokens

    @property
    def left(self) -> int:
        return self.request.max_tokens - len(self.tokens)

    def take(
        self, tokens: list[int], logprobs: list[float], stopped_at: int | None, ends: set[int]
    ) -> list[int]:
        """Append one call's tokens, up to the row's stop or its first EOS/pad; those appended."""
        end = len(tokens) if stopped_at is None else stopped_at
        for i, tok in enumerate(tokens[:end]):
            if tok in ends:
                end = i + 1
                break
        self.tokens += tokens[:end]
        self.logprobs += logprobs[:end]
        self.done = (
            stopped_at is not None
            or self.left <= 0
            or bool(set(tokens[:end]) & ends)
            or self.request.abandoned()
        )
        return tokens[:end]


class _Sampler:
    """Logits processors that sample every row from its own generator and record logprobs.

    ``generate`` runs greedy; the last processor adds Gumbel noise drawn from each row's
    generator to the tempered, top-p-filtered log-probabilities, so the arg max is a sample from
    them (the Gumbel-max trick) that depends on the row alone, not on its batch-mates or on
    torch's global seed. The logprob of each chosen token under those filtered probabilities (what
    ``compute_transition_scores(normalize_logits=True)`` gave) is recorded one step later, when
    the token shows up in ``input_ids``; only one step's distribution is kept in memory.
    """

    def __init__(self, sampling: SamplingSpec, generators: list[Any]) -> None:
        self.sampling = sampling
        self.generators = generators
        self.last: Any = None
        self.taken: list[Any] = []

    def processors(self) -> Any:
        from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper

        chain: list[Any] = []
        if self.sampling.temperature > 0:
            chain.append(TemperatureLogitsWarper(self.sampling.temperature))
            if self.sampling.top_p < 1.0:
                chain.append(TopPLogitsWarper(self.sampling.top_p))
        return LogitsProcessorList([*chain, self])

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        self._record(input_ids[:, -1])
        self.last = torch.log_softmax(scores.float(), dim=-1)
        if self.sampling.temperature <= 0:
            return scores
        noise = torch.stack(
            [
                torch.empty(scores.shape[-1], device=scores.device).exponential_(generator=g)
                for g in self.generators
            ]
        )
        return self.last - noise.clamp_min(1e-30).log()

    def _record(self, chosen: Any) -> None:
        if self.last is not None:
            self.taken.append(self.last.gather(1, chosen[:, None])[:, 0])
            self.last = None

    def logprobs(self, sequences: Any) -> list[list[float]]:
        """Per row, the logprob of every generated token."""
        import torch

        self._record(sequences[:, -1])
        if not self.taken:
            return [[] for _ in range(sequences.shape[0])]
        return torch.stack(self.taken, dim=1).tolist()


class _StopCriteria:
    """A transformers stopping criterion: each row stops at its own stop strings or token limit.

    ``generate`` pads a stopped row from then on and ends when every row has stopped. Text is
    decoded as :func:`~agentgym.llm.engine.request.finish` decodes it (the row's earlier tokens
    included), so a row stops exactly when ``finish`` would find one of its stop strings.
    ``stopped_at`` holds how many of this call's tokens each stopped row keeps.
    """

    def __init__(self, tokenizer: Any, start: int, rows: list[_Row], ends: set[int]) -> None:
        self.tokenizer = tokenizer
        self.start = start
        self.ends = ends
        self.before = [row.tokens for row in rows]
        self.stops = [tuple(s for s in row.request.stop if s) for row in rows]
        self.limits = [row.left for row in rows]
        self.requests = [row.request for row in rows]
        self.stopped_at: list[int | None] = [None] * len(rows)
        self.needed = (
            any(self.stops) or len(set(self.limits)) > 1 or any(r.watched for r in self.requests)
        )

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        n = input_ids.shape[1] - self.start
        for i, last in enumerate(input_ids[:, -1].tolist()):
            if self.stopped_at[i] is not None:
                continue
            ended = last in self.ends or n >= self.limits[i] or self.requests[i].abandoned()
            if ended or (self.stops[i] and self._hit(i, input_ids[i, self.start :])):
                self.stopped_at[i] = n
        done = [n is not None for n in self.stopped_at]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    def _hit(self, i: int, new: Any) -> bool:
        text = self.tokenizer.decode(self.before[i] + new.tolist(), skip_special_tokens=True)
        return any(s in text for s in self.stops[i])


def _length(hit: Hit | None) -> int:
    return 0 if hit is None else hit.length


_CACHE_API: tuple[str, Any] | None | bool = False


def _cache_api() -> tuple[str, Any] | None:
    """(generate's keyword for a cache, DynamicCache) where DynamicCache exposes its layers' tensors.

    Older transformers keep keys and values elsewhere; there the prefix cache stays off.
    """
    global _CACHE_API
    if _CACHE_API is False:
        import inspect

        from transformers import DynamicCache
        from transformers.generation.utils import GenerationMixin

        if not hasattr(DynamicCache(), "layers"):
            _CACHE_API = None
        else:
            params = inspect.signature(GenerationMixin.prepare_inputs_for_generation).parameters
            _CACHE_API = ("cache" if "cache" in params else "past_key_values", DynamicCache)
    return _CACHE_API  # type: ignore[return-value]
