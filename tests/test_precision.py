"""Tests of the reduced precisions (mosesrnn.runtime.precision): how far bf16 moves a real model's scores,
the GRU step's float32 arithmetic under autocast, and what ``--dtype auto`` picks."""
import itertools
import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from mosesrnn.encdec.layers import gru_update
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.runtime.precision import auto_dtype, precision

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def shipped():
    """The shipped model (examples/model, trained self-normalised) and the first 300 lines of the example table."""
    with read_entries(str(EXAMPLES / "phrase-table.gz")) as entries:
        return load_encoder_decoder(str(EXAMPLES / "model" / "tatoeba-small.pt")), list(itertools.islice(entries, 300))


@pytest.mark.parametrize("normaliser", ["exact", "skip"])
def test_bf16_moves_the_shipped_models_scores_by_under_005_nats(shipped, normaliser, caplog):
    """Mean |log p(bf16) - log p(fp32)| on real pairs: 0.31 (exact) and 0.62 (skip) while the encoder's GRU gates
    ran in bf16; 0.02 and 0.03 since they run in float32 (docs/performance.md, "Precision")."""
    trained, entries = shipped
    caplog.set_level(logging.ERROR, logger="mosesrnn")  # bf16 on a CPU without bf16 instructions warns
    fp32, bf16 = (np.array(RNNFeature(trained, dtype=dtype, normalizer=normaliser).values(entries))
                  for dtype in ("fp32", "bf16"))
    assert np.abs(bf16 - fp32).mean() < 0.05
    assert np.abs(fp32).mean() > 5  # real scores, not a near-uniform model's


def test_the_gru_step_runs_in_float32_under_bf16_autocast():
    """A saturated update gate (z = sigmoid(7) = 0.99909): in bf16, 1 - z has a step of 2^-8 near 1 and would be
    0 or 0.0039; the step upcasts its bf16 inputs and computes in float32."""
    generator = torch.Generator().manual_seed(0)
    x_proj, hU, h = (torch.randn(4, size, generator=generator) for size in (3 * 5, 3 * 5, 5))
    x_proj[:, 5:10] = 7.0  # the update gate's pre-activation
    x_proj, hU, h = x_proj.bfloat16(), hU.bfloat16(), h.bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        step = gru_update(x_proj, hU, h)
    assert step.dtype == torch.float32
    torch.testing.assert_close(step, gru_update(x_proj.float(), hU.float(), h.float()), rtol=0, atol=0)
    assert gru_update(x_proj.double(), hU.double(), h.double()).dtype == torch.float64  # wider stays wider


@pytest.mark.parametrize("device, flags, dtype", [
    ("cuda", set(), "bf16"),
    ("cuda:1", set(), "bf16"),
    ("cpu", {"avx2", "avx512f", "avx512_bf16"}, "bf16"),
    ("cpu", {"avx2", "amx_bf16", "amx_tile"}, "bf16"),
    ("cpu", {"avx2", "avx512f", "avx512_vnni"}, "fp32"),  # AVX-512 without its bf16 instructions
    ("cpu", {"avx", "avx2", "fma"}, "fp32"),
    ("cpu", set(), "fp32"),  # flags unreadable
])
def test_auto_dtype(device, flags, dtype):
    assert auto_dtype(device, flags)[0] == dtype


def test_int8_is_refused_on_a_gpu():
    with pytest.raises(ValueError, match="int8 runs on the CPU only"):
        precision("int8", "cuda")
