"""How a trained model runs when it scores or searches: fp32, bf16 autocast, or int8 matmuls.

The one place where a model is made ready for inference at a reduced precision; the scorer
(:class:`~mosesrnn.encdec.scoring.PairScorer`), search (:class:`~mosesrnn.encdec.generate.Searcher`) and
``mosesrnn.load`` all go through :func:`precision`.

- ``fp32``: the model as trained.
- ``bf16``: bfloat16 autocast for the matmuls; the GRU gates and states (encoder's and decoder's,
  :func:`mosesrnn.encdec.layers.gru_update`) and the softmax normaliser (over the logits, upcast) are
  computed in float32.
  Fast on GPUs and on CPUs with AVX512-BF16 or AMX; 7-14x *slower* than fp32 on CPUs without them (emulated).
- ``int8``: dynamic quantisation of every linear layer (input, recurrent and output projections):
  int8 weights, one scale per output row, the activations quantised per batch at run time, int32
  accumulation (PyTorch's x86/fbgemm kernels, on AVX2 and faster with VNNI). CPU only.
- ``auto``: chosen from the device and the CPU's flags (:func:`auto_dtype`), and said in the log.

Measured (``benchmarks/precision_accuracy.py``; docs/performance.md, "Precision"), on the shipped model
(``examples/model/tatoeba-small.pt``) and the 6,229 lines of ``examples/phrase-table.gz``: bf16 moves log p by
0.023 nats on average (max 1.30, on a pair whose log p is -224) and the raw score of ``score --normalizer skip``
by 0.034 (max 1.09). Before the encoder's GRU gates ran in float32 it moved them by 0.31 and 0.62: 79% of that
trained encoder's update gates z are above 0.999, and bf16, whose step is 2^-8 just below 1, rounds their
1 - z to 0 or to 0.0039. int8 moves log p by 0.63 nats on average on that model (0.30 on README's Table 1
model), so ``auto`` never picks it; without the normaliser (``keep_float``: the output matrix stays float)
it still moves the score by 0.17-0.37 nats on the self-normalised models of docs/performance.md, above
the 0.05 asked, whichever subset of the layers is quantised (0.10 at best, the encoder's alone).
"""
from __future__ import annotations

import contextlib
import copy
import logging
import warnings
from dataclasses import dataclass
from typing import ContextManager

import torch
from torch import nn

from ..errors import MosesRNNError
from . import DTYPES
from .cpu import cpu_flags, has_native_bf16

__all__ = ["DTYPES", "Precision", "precision", "auto_dtype"]

log = logging.getLogger("mosesrnn")



def auto_dtype(device: str, flags: set[str] | None = None) -> tuple[str, str]:
    """The dtype ``auto`` means on ``device``, and why.

    A GPU, or a CPU with AMX or AVX512-BF16: bf16 (native bf16 matmuls). On the shipped model it moves log p
    by 0.023 nats on average and the skip path's score by 0.034, within the 0.05 nats a score column may
    move (measured with emulated bf16 on an AVX2 CPU; before the GRU gates were kept in float32, an AMX CPU
    and an H100 gave the same 0.31 as that emulation). Any other CPU: fp32, since emulated bf16 is many
    times slower. int8 is never chosen: it is 1.15-1.47x faster than fp32 on AVX2, but moves log p by
    0.3-0.6 nats on average on trained models (docs/performance.md).
    """
    if device.startswith("cuda"):
        return "bf16", "a GPU"
    flags = cpu_flags() if flags is None else flags
    native = sorted(set(flags) & {"amx_bf16", "avx512_bf16"})
    if native:
        return "bf16", f"the CPU has {', '.join(native)}"
    return "fp32", "no native bf16 matmuls on this CPU; int8 is faster here but not accurate enough"


@dataclass(frozen=True)
class Precision:
    """A resolved dtype: how to prepare a model, and the context its calls run in."""

    name: str  # fp32 | bf16 | int8
    device: str

    def prepare(self, model: nn.Module, keep_float: tuple[str, ...] = ()) -> nn.Module:
        """The model ready to run (for int8 a quantised copy: the trained model is left as it is).

        ``keep_float``: names of linear layers int8 leaves in float (``decoder.G_l``, which a scorer that
        skips the normaliser reads by rows instead of multiplying by)."""
        model = model.to(self.device).eval()
        if self.name != "int8":
            return model
        spec = {nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig, **dict.fromkeys(keep_float)}
        with warnings.catch_warnings():  # torch.ao's eager quantisation is deprecated, but its kernels are the ones
            warnings.simplefilter("ignore")
            return torch.ao.quantization.quantize_dynamic(copy.deepcopy(model), spec, dtype=torch.qint8)

    def autocast(self) -> ContextManager:
        """bf16 autocast, or nothing."""
        if self.name == "bf16":
            return torch.autocast(torch.device(self.device).type, dtype=torch.bfloat16)
        return contextlib.nullcontext()


def precision(dtype: str, device: str) -> Precision:
    """The :class:`Precision` of ``dtype`` (one of :data:`DTYPES`) on ``device``; ``auto`` is resolved and logged."""
    if dtype not in DTYPES:
        raise MosesRNNError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if dtype == "auto":
        dtype, why = auto_dtype(device)
        log.info("dtype auto: %s (%s)", dtype, why)
    if dtype == "int8" and device != "cpu":
        raise MosesRNNError("int8 runs on the CPU only (--device cpu); on a GPU use bf16")
    if dtype == "bf16" and device == "cpu" and not has_native_bf16():
        log.warning("warning: --dtype bf16 on a CPU without native bf16 matmuls (no AMX or AVX512-BF16): PyTorch "
                    "emulates them, many times slower than fp32 (33x measured, docs/performance.md); --dtype auto "
                    "picks fp32 here")
    return Precision(dtype, device)
