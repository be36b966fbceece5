"""What this machine's processor offers (its feature flags: AVX2, AVX-512, BF16, AMX...), and how many of its
threads torch uses."""
from __future__ import annotations

import contextlib
import functools
from typing import Iterator

from ..io.atomic import read_system_text

__all__ = ["cpu_flags", "has_native_bf16", "cpu_threads"]


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


@contextlib.contextmanager
def cpu_threads(count: int | None) -> Iterator[None]:
    """torch's CPU threads set to ``count`` for the block (None: left as they are), and given back after it.

    The one place mosesrnn sets them, once, at the edge of a run: a command's body (its ``--threads``), an API
    job (:func:`mosesrnn.score_table`, :func:`mosesrnn.score_nbest`: :attr:`FeatureOptions.threads`), a training
    run (its config's ``threads``); the caller's own count is left as it was."""
    if count is None:
        yield
        return
    import torch  # here: choosing options does not load torch
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
