"""Local generation engines: one interface, whichever path runs underneath.

Public interface (mirrored by ``agentgym.llm.vllm_engine.VLLMEngine``)::

    engine = LocalEngine(path, max_batch_size=32, device="cpu", prefix_cache_mb=4096)
    engine = LocalEngine.from_model(model, tokenizer, max_batch_size=32, prefix_cache_mb=0)

    engine.render(messages, tools) -> list[int]            # prompt ids via the chat template
    engine.submit(prompt_ids, max_new_tokens=256, stop=None, temperature=0.0, top_p=1.0,
                  seed=None, timeout_s=None, keep_eos=False) -> Future[Generation]  # any thread
    engine.generate(prompt_ids, **same) -> Generation      # blocking submit
    engine.generate_batch(prompts, max_new_tokens=256, temperature=0.0, top_p=1.0,
                          seed=None, keep_eos=False, stop=None, seeds=None) -> list[Generation]
    engine.clear_prefix_cache()                            # after the weights change
    engine.cancel_all(reason); engine.close()
    engine.context_tokens, engine.tokenizer, engine.model, engine.stats (EngineStats)

    Generation(text, token_ids, logprobs, finish_reason in {"stop", "length"}, prompt_tokens)

Seeds: a request's seed alone fixes its draws (``seeds[i]`` for prompt ``i`` of
``generate_batch``; ``seed + i`` when only ``seed`` is given), so a seeded request gives the same
text alone or in any batch. ``keep_eos=True`` keeps the end-of-sequence token that stopped a
generation in ``token_ids`` and ``logprobs`` (a trainer needs it: stopping is an action).

Layout (nano-vllm's): ``base`` (this interface, written once for every engine), ``request`` (Generation, SamplingParams, the queued request),
``scheduler`` (what runs next), ``model_runner`` (one forward over a batch), ``sampler``,
``kv_cache`` (per-sequence keys and values, prefix blocks shared across requests),
``llm_engine`` (the loop tying them together) and ``generate`` (the ``transformers.generate``
path, the fallback for architectures the runner does not cover).
"""

from agentgym.llm.engine.generate import GenerateEngine
from agentgym.llm.engine.llm_engine import LocalEngine
from agentgym.llm.engine.request import EngineClosed, EngineStats, Generation, SamplingParams

__all__ = [
    "EngineClosed",
    "EngineStats",
    "GenerateEngine",
    "Generation",
    "LocalEngine",
    "SamplingParams",
]
