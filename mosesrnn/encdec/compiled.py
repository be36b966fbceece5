"""The recurrent steps compiled with ``torch.compile``, for the scorer, behind an option (off by default).

The recurrence is a Python loop over time steps, each a few small kernels: one matmul (U h) and the GRU's
element-wise gates (two sigmoids, a tanh, five adds and multiplies). Compiled, a step is the matmul and one fused
kernel; on a GPU, ``mode="reduce-overhead"`` also replays each step as a CUDA graph (one launch instead of a dozen).
What is compiled is the step alone (:meth:`~mosesrnn.encdec.decoder.C14Decoder.next_state`,
:meth:`~mosesrnn.encdec.encoders.GRUEncoder.next_state`): the loop, the packing and the output layer stay eager,
so one compiled graph serves every batch (shapes are dynamic: the rows still going change at every step).

Modes (:data:`COMPILE_MODES`): ``none`` (eager, the default: the values written today, byte for byte), ``default``
(``torch.compile(dynamic=True)``; inductor compiles for CPUs too) and ``reduce-overhead`` (CUDA graphs; each
step's row count is rounded up to a bucket, :func:`row_bucket`, so that a handful of graphs are recorded, and the
rows past the real ones, finished rows of the sorted batch, are computed and dropped). ``True`` (``score
--compile``) picks ``reduce-overhead`` on a GPU and ``default`` on a CPU. It stays off by default: on a CPU it
did not pay (docs/performance.md, "The recurrent step compiled"), and on a GPU it waits for a measurement.
Compiled values equal the eager ones within float rounding (1e-5 nats, ``tests/test_compiled.py``).

The choice is a context (:func:`compiled_steps`), not a change to the model: the same model object can be scored
eagerly and compiled side by side.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
from typing import Callable, Iterator

import torch

from ..errors import MosesRNNError

__all__ = ["COMPILE_MODES", "compile_mode", "compiled_steps", "recurrent_step", "row_bucket", "active_rows"]

COMPILE_MODES = ("none", "default", "reduce-overhead")
_MODE: contextvars.ContextVar[str | None] = contextvars.ContextVar("mosesrnn_compile_mode", default=None)


def compile_mode(mode: str | bool | None, device: str) -> str | None:
    """The mode that runs on ``device`` for an option value (False, True or one of :data:`COMPILE_MODES`): None
    (eager), ``default`` or ``reduce-overhead``. True: ``reduce-overhead`` on a GPU, ``default`` on a CPU, which
    ``reduce-overhead`` also becomes there (CUDA graphs exist on GPUs only)."""
    if mode is True:
        mode = "reduce-overhead" if torch.device(device).type == "cuda" else "default"
    if mode in (None, False, "none"):
        return None
    if mode not in COMPILE_MODES:
        raise MosesRNNError(f"compile must be one of {', '.join(COMPILE_MODES)}, not {mode!r}")
    if mode == "reduce-overhead" and torch.device(device).type != "cuda":
        return "default"  # no CUDA graphs on a CPU: the fused step alone
    return mode


@contextlib.contextmanager
def compiled_steps(mode: str | None) -> Iterator[None]:
    """Run the recurrent steps of the models called inside the block compiled in ``mode`` (None: eagerly)."""
    token = _MODE.set(mode)
    try:
        yield
    finally:
        _MODE.reset(token)


def row_bucket(rows: int, limit: int) -> int:
    """``rows`` rounded up to the next of 8, 16, 32, 64, ... (at most ``limit``): the row counts a
    CUDA-graph step is recorded for."""
    return min(limit, max(8, 1 << (rows - 1).bit_length()))


def active_rows(rows: int, limit: int) -> int:
    """How many rows a step computes when ``rows`` are still going out of ``limit``: ``rows``, or their bucket
    where the steps replay CUDA graphs (:func:`row_bucket`)."""
    return row_bucket(rows, limit) if _MODE.get() == "reduce-overhead" else rows


@functools.lru_cache(maxsize=None)
def _compiled(cls: type, name: str, mode: str) -> Callable:
    # each mode, dtype and model size is a graph of the same step: room for them before dynamo falls back to eager
    config = torch._dynamo.config
    for limit in ("recompile_limit", "cache_size_limit"):
        if isinstance(getattr(config, limit, None), int):
            setattr(config, limit, max(getattr(config, limit), 64))
    return torch.compile(getattr(cls, name), dynamic=True, mode=None if mode == "default" else mode)


def recurrent_step(module: torch.nn.Module, name: str) -> Callable:
    """``module.<name>`` (a recurrent step), compiled in the mode of :func:`compiled_steps`, or as it is."""
    mode = _MODE.get()
    if mode is None:
        return getattr(module, name)
    compiled = _compiled(type(module), name, mode)
    if mode != "reduce-overhead":
        return functools.partial(compiled, module)

    def replayed(*args):
        # a CUDA graph's outputs live in its pool and the next replay overwrites them: each step's state is
        # copied out, and the graph's own output dropped, so that the next step replays the same graph
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(module, *args).clone()

    return replayed
