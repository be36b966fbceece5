"""What this machine's processor offers: its feature flags (AVX2, AVX-512, BF16, AMX...)."""
from __future__ import annotations

import functools

from ..io.atomic import read_system_text

__all__ = ["cpu_flags", "has_native_bf16"]


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (``/proc/cpuinfo``; empty where it cannot be read)."""
    try:
        text = read_system_text("/proc/cpuinfo")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def has_native_bf16(flags: frozenset[str] | set[str] | None = None) -> bool:
    """Whether the CPU multiplies bfloat16 natively (AMX or AVX512-BF16); without, bf16 is emulated and slow."""
    flags = cpu_flags() if flags is None else flags
    return bool({"amx_bf16", "avx512_bf16"} & set(flags))
