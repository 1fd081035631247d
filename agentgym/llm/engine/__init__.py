"""Local generation engines: one interface, whichever path runs underneath.

Public interface (every engine: :class:`~agentgym.llm.engine.base.Engine`)::

    engine = load_engine("local", path, max_batch_size=32)           # or "vllm"; chooses the class
    engine = load_engine("local", model, tokenizer=tokenizer)        # a trainer's policy
    engine = LocalEngine(path, max_batch_size=32, device="cpu", prefix_cache_mb=4096)

    engine.render(messages, tools) -> list[int]            # prompt ids via the chat template
    engine.submit(prompt_ids, sampling=SamplingSpec(), seed=None, timeout_s=None,
                  keep_eos=False) -> Future[Generation]    # any thread
    engine.generate(prompt_ids, sampling, **same) -> Generation   # blocking submit
    engine.generate_batch(prompts, sampling=SamplingSpec(), seed=None, keep_eos=False,
                          seeds=None) -> list[Generation]
    engine.sync_weights(model)                             # after the weights change
    engine.clear_prefix_cache()
    engine.cancel_all(reason); engine.close()
    engine.max_context_tokens, engine.tokenizer, engine.stats (EngineStats), engine.shares_weights

    Generation(text, token_ids, logprobs, finish_reason in {"stop", "length"}, prompt_tokens)

``sampling`` is a :class:`~agentgym.llm.sampling.SamplingSpec` (``max_tokens``, ``stop``,
``temperature``, ``top_p``; re-exported here); settings it leaves None mean 256 tokens and no stop.
Rows whose temperature and top-p agree (:attr:`SamplingSpec.batch_key`) are sampled together.

Seeds: a request's seed alone fixes its draws (``seeds[i]`` for prompt ``i`` of
``generate_batch``; ``seed + i`` when only ``seed`` is given), so a seeded request gives the same
text alone or in any batch. ``keep_eos=True`` keeps the end-of-sequence token that stopped a
generation in ``token_ids`` and ``logprobs`` (a trainer needs it: stopping is an action).

Layout (nano-vllm's): ``base`` (this interface, written once for every engine), ``request``
(Generation, the queued request), ``scheduler`` (what runs next),
``model_runner`` (one forward over a batch), ``sampler``, ``kv_cache`` (per-sequence keys and
values, prefix blocks shared across requests), ``llm_engine`` (:class:`LocalEngine`, the loop
tying them together), ``fallback`` and ``fallback_cache`` (:class:`FallbackEngine`:
``transformers.generate`` for architectures the runner does not cover, with its own prefix
cache), ``vllm`` (:class:`VLLMEngine`, the ``vllm`` extra), ``precision`` (dtypes) and
``loader`` (:func:`load_engine`, the one place an engine is chosen).

Importing this package loads neither torch nor vLLM: the engine classes load on first access.
"""

from typing import Any

from agentgym.llm.engine.base import Engine
from agentgym.llm.engine.loader import (
    ENGINES,
    EngineName,
    check_engine,
    load_engine,
    require_engine,
)
from agentgym.llm.engine.precision import DTYPES, Dtype, check_dtype, native_bf16
from agentgym.llm.engine.request import EngineClosed, EngineStats, Generation
from agentgym.llm.sampling import SamplingSpec

_CLASSES = {
    "LocalEngine": "agentgym.llm.engine.llm_engine",
    "FallbackEngine": "agentgym.llm.engine.fallback",
    "VLLMEngine": "agentgym.llm.engine.vllm",
}


def __getattr__(name: str) -> Any:
    """The engine classes, imported when first named (they import torch)."""
    if name in _CLASSES:
        from importlib import import_module

        return getattr(import_module(_CLASSES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DTYPES",
    "ENGINES",
    "Dtype",
    "Engine",
    "EngineClosed",
    "EngineName",
    "EngineStats",
    "FallbackEngine",
    "Generation",
    "LocalEngine",
    "SamplingSpec",
    "VLLMEngine",
    "check_dtype",
    "check_engine",
    "load_engine",
    "native_bf16",
    "require_engine",
]
