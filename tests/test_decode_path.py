"""The scorer's decode path: its bookkeeping on the host (one read of the device per chunk, never one per batch)
and its recurrent steps compiled (torch.compile), equal to the eager path."""
from __future__ import annotations

import collections
import itertools

import numpy as np
import pytest
import torch
from conftest import DATA
from scoring_helpers import save_tiny_model
from torch.overrides import TorchFunctionMode

from mosesrnn.encdec.compiled import compile_mode, compiled_steps, row_bucket
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.encdec.packing import packing
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.text.id_arrays import length_batches

MODEL = DATA.parent.parent / "examples/model/tatoeba-small.pt"


@pytest.fixture(scope="module")
def trained():
    return load_encoder_decoder(str(MODEL))


@pytest.fixture(scope="module")
def entries():
    with read_entries(str(DATA / "tatoeba.en-fr.3k.gz")) as stream:
        return list(itertools.islice(stream, 1500))


class HostReads(TorchFunctionMode):
    """Counts the tensor calls that bring a value back to the host: on a GPU each one waits for the device."""

    READS = {"tolist", "item", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__"}

    def __init__(self):
        super().__init__()
        self.count: collections.Counter = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in self.READS or (name == "to" and any(str(a) == "cpu" for a in args[1:])):
            self.count[name] += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("options", [{}, {"normalizer": "skip"}, {"length_normalize": True}],
                         ids=["exact", "skip", "length-normalised"])
def test_a_chunk_reads_the_device_back_once_whatever_its_batches(trained, entries, options):
    feature = RNNFeature(trained, batch_tokens=256, **options)  # small batches: dozens per chunk
    encoded = feature.encoder(entries[:1000])
    batches = length_batches(encoded.outputs.lengths + 1, 256)
    assert len(batches) > 10
    with HostReads() as reads:
        feature.score(encoded)
    assert sum(reads.count.values()) == 1, reads.count  # the values, once, at the chunk's end


@pytest.mark.parametrize("encoder", ["attention", "rctm1"])
def test_the_other_architectures_decode_without_reading_the_device_back(tmp_path, entries, encoder):
    """The attention model's decode, as C14's, waits once a chunk; RCTM I's decode adds no wait to its
    convolutional encoder's, which reads each encoder batch's lengths back (one a batch, as RCTM II's icgm)."""
    trained = load_encoder_decoder(save_tiny_model(str(tmp_path / "tiny.pt"), encoder=encoder))
    feature = RNNFeature(trained, batch_tokens=256)
    encoded = feature.encoder(entries[:500])
    with HostReads() as reads:
        values = feature.score(encoded)
    encoder_reads = 0 if encoder == "attention" else len(length_batches(encoded.inputs.lengths, 256))
    assert sum(reads.count.values()) == 1 + encoder_reads, reads.count
    assert np.allclose(values, RNNFeature(trained, batch_tokens=100_000).score(encoded), atol=1e-4)


def test_the_host_packing_is_the_devices_order():
    lengths = np.array([3, 5, 1, 5, 2, 3, 0, 4])
    pack = packing(lengths, "cpu")
    tensor = torch.from_numpy(lengths)
    assert torch.equal(pack.order, torch.argsort(tensor, descending=True, stable=True))
    active = (torch.arange(5)[:, None] < tensor[pack.order][None]).sum(1)
    assert pack.active == active.tolist()
    assert pack.rows.tolist() == [r for n in pack.active for r in range(n)]
    assert pack.steps.tolist() == [t for t, n in enumerate(pack.active) for _ in range(n)]
    assert packing(np.zeros(3, dtype=np.int64), "cpu").active == []


def test_the_scores_do_not_depend_on_where_the_lengths_come_from(trained, entries):
    feature = RNNFeature(trained)
    encoded = feature.encoder(entries[:300])
    outputs = encoded.outputs
    padded, lengths = outputs.padded(np.arange(len(outputs)), True)
    with torch.inference_mode():
        context = trained.model.source_context(*map(torch.from_numpy, encoded.inputs.padded(encoded.line_input)))
        trg, trg_lengths = torch.from_numpy(padded), torch.from_numpy(lengths)
        host = trained.model.score_log_prob(context, trg, trg_lengths, lengths=lengths)
        read_back = trained.model.score_log_prob(context, trg, trg_lengths)
    assert torch.equal(host, read_back)


def test_row_buckets():
    assert [row_bucket(n, 1000) for n in (1, 8, 9, 100, 600, 1000)] == [8, 8, 16, 128, 1000, 1000]
    assert row_bucket(5, 3) == 3


def test_compile_modes_by_device():
    assert compile_mode(False, "cpu") is None and compile_mode("none", "cuda") is None
    assert compile_mode(True, "cpu") == "default" and compile_mode(True, "cuda") == "reduce-overhead"
    assert compile_mode("reduce-overhead", "cpu") == "default"  # no CUDA graphs on a CPU
    with pytest.raises(ValueError, match="compile must be one of"):
        compile_mode("max-autotune", "cpu")


def test_the_compiled_steps_equal_the_eager_ones(trained, entries):
    """Compiled (inductor, for this CPU) against eager. In float64 the same equations give the same values (within
    1e-5 nats; in fact about 1e-12). In float32 both round: the compiled path is as close to float64's values as
    the eager one, and within 1e-5 of |log p| of it (a whole phrase's log p reaches -300 here, where one float32
    ulp is 3e-5 nats)."""
    pairs = entries[:600]
    double = load_encoder_decoder(str(MODEL))
    double.model.double()
    exact = np.array(RNNFeature(double).values(pairs))
    compiled_exact = np.array(RNNFeature(double, compile=True).values(pairs))
    assert np.abs(compiled_exact - exact).max() < 1e-8

    eager = np.array(RNNFeature(trained).values(pairs))
    compiled = RNNFeature(trained, compile=True)
    assert compiled.compile == "default"
    fast = np.array(compiled.values(pairs))
    assert (np.abs(fast - eager) / np.abs(eager)).max() < 1e-5
    assert np.abs(fast - exact).mean() <= 1.5 * np.abs(eager - exact).mean() + 1e-7
    with compiled_steps(None):  # the mode is the scorer's own context: outside it the model runs eagerly
        assert np.array_equal(np.array(RNNFeature(trained).values(pairs)), eager)
