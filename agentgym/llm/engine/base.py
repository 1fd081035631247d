"""The public interface every engine shares, written once.

``submit``, ``generate``, ``generate_batch`` and ``render`` turn a caller's arguments into
:class:`~agentgym.llm.engine.request.Request` objects the same way for every engine (the
continuous-batching ``LocalEngine``, the ``generate`` fallback and vLLM), so seeds, stops and
``keep_eos`` mean the same whichever runs. New weights reach every engine one way,
:meth:`Engine.sync_weights`. A subclass implements only what differs: how queued requests reach
its worker (:meth:`Engine._enqueue`) and, where it runs a batch in the caller's thread,
:meth:`Engine._run_batch`.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from abc import ABC, abstractmethod
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from agentgym.llm.engine.request import (
    EngineClosed,
    EngineStats,
    Generation,
    Request,
    context_length,
    make_request,
    prompt_seeds,
    render_chat,
)
from agentgym.llm.sampling import SamplingSpec

DEFAULT_SAMPLING = SamplingSpec()
"""256 tokens, no stop, greedy."""


class Engine(ABC):
    """Thread-safe generation behind one interface; subclasses say how requests are run."""

    tokenizer: Any
    model: Any
    prefix_cache: Any = None
    shares_weights: bool = False
    """True for an engine over a caller's module itself (``from_model``): new weights apply at
    once and the logprobs it reports are that module's own. False for one holding its own copy
    (vLLM, a checkpoint it loaded): a trainer recomputes the sampled tokens' logprobs."""
    _thread: threading.Thread | None = None
    _queue: queue.Queue[Any]

    @property
    def max_context_tokens(self) -> int:
        """The most tokens (prompt and completion together) the model can attend over."""
        return context_length(self.model, self.tokenizer)

    def render(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> list[int]:
        """Prompt token ids of a chat through the checkpoint's own chat template."""
        return render_chat(self.tokenizer, messages, tools)

    def submit(
        self,
        prompt_ids: list[int],
        sampling: SamplingSpec = DEFAULT_SAMPLING,
        seed: int | None = None,
        timeout_s: float | None = None,
        keep_eos: bool = False,
    ) -> Future[Generation]:
        """Queue one generation from any thread, sampled as ``sampling`` says.

        Cancel the future to stop the generation (at its next step, or before it starts); past
        ``timeout_s`` it stops the same way and the future fails with :class:`TimeoutError`.
        A seeded request samples from its own generator: the same text alone or in any batch.
        """
        request = make_request(prompt_ids, sampling, seed)
        request.keep_eos, request.timeout_s, request.watched = keep_eos, timeout_s, True
        request.deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self._enqueue([request])
        return request.future

    def generate(
        self, prompt_ids: list[int], sampling: SamplingSpec = DEFAULT_SAMPLING, **kwargs: Any
    ) -> Generation:
        """Blocking :meth:`submit`."""
        return self.submit(prompt_ids, sampling, **kwargs).result()

    def generate_batch(
        self,
        prompts: list[list[int]],
        sampling: SamplingSpec = DEFAULT_SAMPLING,
        seed: int | None = None,
        keep_eos: bool = False,
        seeds: list[int] | None = None,
    ) -> list[Generation]:
        """Generate for every prompt, each sampled as ``sampling`` says; results in order.

        Prompt ``i`` samples with ``seeds[i]`` (else ``seed + i``): its text depends on its seed
        alone, not on the batch. ``keep_eos=True`` keeps the end-of-sequence token that stopped a
        generation in ``token_ids`` and ``logprobs`` (``text`` never shows it): a trainer needs
        it, since stopping is an action.
        """
        requests = []
        for prompt, s in zip(prompts, prompt_seeds(len(prompts), seed, seeds), strict=True):
            request = make_request(prompt, sampling, s)
            request.keep_eos = keep_eos
            requests.append(request)
        return self._run_batch(requests)

    def clear_prefix_cache(self) -> None:
        """Forget every cached prefix (after the model's weights change)."""
        if self.prefix_cache is not None:
            self.prefix_cache.clear()

    def sync_weights(self, model: Any) -> None:
        """Generate with ``model``'s current weights from the next request on (a trainer calls
        it after an update), and forget the prefixes computed with the old ones.

        Here (an engine over a transformers module): nothing to copy where the module is
        ``model`` itself, else ``model``'s state copied into it between two steps.
        """
        if model is not self.model:
            with self._lock:  # held by every forward
                self.model.load_state_dict(model.state_dict())
        self.clear_prefix_cache()

    def cancel_all(self, reason: str = "the server is shutting down") -> None:
        """Fail every queued and running request with :class:`EngineClosed` (graceful shutdown).

        Running generations stop at their next step, so :meth:`close` returns promptly; queued
        ones stay queued, already failed, and the worker skips them.
        """
        error = EngineClosed(reason)
        for request in [*self._running_requests(), *queued(self._queue)]:
            request.deliver(error)

    def close(self) -> None:
        """Stop the worker thread after the requests already queued, and free the caches."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        self._closed()

    # ------------------------------------------------------------------ what differs
    def _attach(
        self, model: Any, tokenizer: Any, path: str | None, device: str, max_batch_size: int
    ) -> None:
        """The state every local engine keeps (``path`` None: a model already in memory)."""
        self.path = path or str(getattr(model, "name_or_path", "") or "in-memory")
        self.tokenizer = tokenizer
        self.model = model
        self.device = device
        self.shares_weights = path is None
        self.max_batch_size = max_batch_size
        self._lock = threading.Lock()
        """Held while a batch runs, and while weights change."""
        self.stats = EngineStats()
        self.batch_sizes: list[int] = []
        """Rows in every forward (or ``generate`` call) so far, for benchmarks and tests."""

    @abstractmethod
    def _enqueue(self, requests: list[Request]) -> None:
        """Hand ``requests`` to the worker thread (starting it if need be)."""

    @abstractmethod
    def _running_requests(self) -> list[Request]:
        """The requests the worker is generating now (a snapshot, safe from any thread)."""

    def _run_batch(self, requests: list[Request]) -> list[Generation]:
        """Run ``requests`` to their end and return their results (default: through the queue)."""
        self._enqueue(requests)
        return [r.future.result() for r in requests]

    def _closed(self) -> None:
        """Free what the engine holds once its thread has stopped."""
        self.clear_prefix_cache()


def queued(items: queue.Queue[Any]) -> list[Request]:
    """The requests waiting in a worker's queue (items: a request, a list of them, or other)."""
    with items.mutex:
        snapshot = list(items.queue)
    flat = [x for item in snapshot for x in (item if isinstance(item, list) else [item])]
    return [x for x in flat if isinstance(x, Request)]


def load_checkpoint(path: Any, device: str, dtype: str = "float32") -> tuple[str, Any, Any]:
    """(resolved path, tokenizer, model in eval mode on ``device``, weights and adapters in
    ``dtype``) of a local checkpoint."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from agentgym.llm.engine.precision import check_dtype, warn_if_emulated_bf16
    from agentgym.llm.models import resolve_model_path, tokenizer_folder

    torch_dtype = getattr(torch, check_dtype(dtype))
    warn_if_emulated_bf16(dtype, device)
    hf_logging.disable_progress_bar()
    path = str(resolve_model_path(str(path)))
    tokenizer: Any = AutoTokenizer.from_pretrained(tokenizer_folder(path))
    if not tokenizer.chat_template:  # else every request fails deep inside transformers
        raise ValueError(
            f"the checkpoint at {path} has no chat template: add a chat_template.jinja "
            "(a GGUF file carries it as tokenizer.chat_template)"
        )
    loader: Any = AutoModelForCausalLM  # transformers' stubs reject a plain path here
    base = adapter_base(path)
    model: Any = loader.from_pretrained(base or path, use_safetensors=True)  # never a pickle
    if base is not None:  # LoRA adapters, injected (not merged: the trainer's numbers)
        model.load_adapter(path)
    return path, tokenizer, model.to(device=device, dtype=torch_dtype).eval()


EMBEDDINGS = ("embed_tokens", "lm_head", "wte", "word_embeddings")


def save_weights(model: Any, directory: Path) -> None:
    """``save_pretrained``; for peft adapters, say whether the embeddings go with them, since
    peft's ``"auto"`` asks the Hub for the base model's config (offline here: a warning per
    save, and a wait where the network hangs instead of failing)."""
    peft = sys.modules.get("peft")  # a peft model means peft is imported
    config = (
        model.peft_config.get("default") if peft and isinstance(model, peft.PeftModel) else None
    )
    if config is None:
        model.save_pretrained(directory)
        return
    targets = getattr(config, "target_modules", None) or ()
    if isinstance(targets, str):  # a regex over module names
        embeddings = any(name in targets for name in EMBEDDINGS)
    else:
        embeddings = any(name in EMBEDDINGS for name in targets)
    model.save_pretrained(directory, save_embedding_layers=embeddings)


def adapter_base(path: str | Path) -> str | None:
    """The base checkpoint folder a LoRA adapter folder names (its ``base_model_name_or_path``:
    a folder, or a known model such as ``smollm2``), resolved; None for a full checkpoint."""
    from agentgym.llm.models import resolve_model_path

    config = Path(path) / "adapter_config.json"
    if not config.is_file():
        return None
    base = json.loads(config.read_text(encoding="utf-8"))["base_model_name_or_path"]
    return str(resolve_model_path(str(base), announce=False))
