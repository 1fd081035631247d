"""Precisions a local engine computes in, and whether this CPU computes bfloat16 itself."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

Dtype = Literal["float32", "bfloat16"]
DTYPES: tuple[str, ...] = get_args(Dtype)
"""Precisions a local engine computes in. bfloat16 plays a Household turn about 1.7x faster on a
CPU with avx512_bf16 (benchmarks/precision.py), and many times slower on one without
(:func:`native_bf16`); its greedy choices can differ from float32's, the trainer's."""


def check_dtype(dtype: str) -> str:
    """``dtype`` if it is a precision, else a one-line error naming the allowed ones."""
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; use one of: {', '.join(DTYPES)}")
    return dtype


NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")
"""/proc/cpuinfo flags of a CPU that computes bfloat16 itself: x86's AVX512-BF16 and AMX, Arm's
BF16 extension."""


def native_bf16(cpuinfo: str | None = None) -> bool | None:
    """Whether this CPU computes bfloat16 natively, from ``/proc/cpuinfo`` (or ``cpuinfo``, its
    text); None where that cannot be read (not Linux). Without it torch emulates bfloat16
    matmuls: on an AVX2-only EPYC, one 512x576 by 576x1536 matmul ran 34x slower than in
    float32, and a Household rollout about 7x slower per turn, where avx512_bf16 made it 1.7x
    faster (docs/results.md)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
    flags = {
        word
        for line in cpuinfo.splitlines()
        if line.split(":")[0].strip() in ("flags", "Features")
        for word in line.split(":", 1)[-1].split()
    }
    return any(flag in flags for flag in NATIVE_BF16_FLAGS)


def warn_if_emulated_bf16(dtype: str, device: str) -> None:
    """A warning (not an error: memory may still be worth it) when bfloat16 is asked of a CPU
    that would emulate it, so a user sees why a run crawls and what to pass instead."""
    if dtype in ("bfloat16", "bf16") and not device.startswith("cuda") and native_bf16() is False:
        import warnings

        warnings.warn(
            f"{dtype} on this CPU is emulated (no {' / '.join(NATIVE_BF16_FLAGS)} in "
            "/proc/cpuinfo): matmuls run many times slower than float32 "
            "(34x measured on an AVX2 EPYC); use float32 here",
            RuntimeWarning,
            stacklevel=3,
        )
