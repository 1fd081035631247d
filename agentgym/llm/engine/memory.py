"""The engine's memory budget: how much its keys and values may take, and giving memory back.

A local engine's memory beyond its weights is its KV cache: the running sequences' slots and the
prefix blocks kept for later prompts. Both come out of one budget. Its default is proportionate to
the model and to the machine: 1.5 times the weights' bytes (SmolLM2-135M in float32: about 0.8 GB,
so ``agentgym serve smollm2`` stays near 2 GB under any load), at most a quarter of the memory
free when the engine loads, and at least one sequence of the model's full context (so every
request the model can take can run). After a second without work the engine gives memory back:
its slots shrink to the smallest and its prefix blocks to a quarter of the budget.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from pathlib import Path
from typing import Any

WEIGHTS_FACTOR = 1.5
"""Default budget: this many times the weights' bytes..."""
FREE_SHARE = 4
"""... and at most 1/FREE_SHARE of the memory available at load."""
IDLE_PREFIX_SHARE = 4
"""An idle engine keeps at most 1/IDLE_PREFIX_SHARE of its budget in prefix blocks: the turns
of a running episode arrive within milliseconds of each other, not after a second of idleness."""


def available_bytes(meminfo: str | None = None) -> int | None:
    """Memory available for new allocations (``MemAvailable`` of ``/proc/meminfo``, or
    ``meminfo``, its text); None where that cannot be read."""
    if meminfo is None:
        try:
            meminfo = Path("/proc/meminfo").read_text()
        except OSError:
            return None
    for line in meminfo.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def default_budget(model: Any, bytes_per_token: int, context: int) -> int:
    """The default KV budget in bytes for ``model`` (see the module's docstring)."""
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    budget = int(WEIGHTS_FACTOR * weights)
    free = available_bytes()
    if free is not None:
        budget = min(budget, free // FREE_SHARE)
    return max(budget, bytes_per_token * context)


def budget_bytes(kv_cache_gb: float | None, model: Any, bytes_per_token: int, context: int) -> int:
    """``kv_cache_gb`` in bytes, or the default; a budget of zero or less is refused in one line."""
    if kv_cache_gb is None:
        return default_budget(model, bytes_per_token, context)
    if not kv_cache_gb > 0:
        raise ValueError(f"kv_cache_gb must be above 0 (GiB of keys and values), not {kv_cache_gb}")
    return int(kv_cache_gb * (1 << 30))


def bytes_per_token(model: Any) -> int:
    """Bytes of one token's keys and values in every layer of a transformers ``model`` (0 where
    its config does not say)."""
    config = model.config
    layers = getattr(config, "num_hidden_layers", 0) or 0
    heads = getattr(config, "num_attention_heads", 0) or 0
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    dim = getattr(config, "head_dim", None) or (heads and config.hidden_size // heads)
    first = next(iter(model.parameters()), None)
    size = 4 if first is None else first.element_size()
    return 2 * layers * kv_heads * dim * size


_LIBC: Any = None


def trim_heap() -> None:
    """Hand freed heap memory back to the system (glibc's ``malloc_trim``; elsewhere nothing).

    Tensors under glibc's mmap threshold (a prefix block is under 1 MB) live on the heap, and
    freeing them leaves the process's resident size where the load took it.
    """
    global _LIBC
    if _LIBC is None:
        name = ctypes.util.find_library("c")
        _LIBC = ctypes.CDLL(name) if name else False
    trim = getattr(_LIBC, "malloc_trim", None) if _LIBC else None
    if trim is not None:
        trim(0)
