"""Tests of mosesrnn.rnn_feature: grouping, order, batching, values as Moses reads them."""
import math
import random

import numpy as np
import pytest
import torch
from scoring_helpers import TABLE, save_tiny_model

from mosesrnn.encdec.architectures import ARCHITECTURES
from mosesrnn.encdec.batching import pad
from mosesrnn.encdec.config import ModelConfig
from mosesrnn.encdec.model import EncoderDecoder
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.encdec.pair_ids import group_by_source
from mosesrnn.features.registry import describe
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries, table_value
from mosesrnn.text.id_arrays import length_batches


@pytest.fixture(scope="module")
def entries():
    return list(read_entries(TABLE))[:600]


def reference_log_probs(trained, entries, forward=True):
    """log p by the model's plain log_prob, one pair at a time (no grouping, no bucketing)."""
    values = []
    with torch.inference_mode():
        for entry in entries:
            given, predicted = (entry.source, entry.target) if forward else (entry.target, entry.source)
            src, src_lengths = pad([trained.input_codec.ids(given)])
            trg, trg_lengths = pad([trained.output_codec.ids(predicted)], append_eos=True)
            values.append(trained.model.log_prob(src, src_lengths, trg, trg_lengths).item())
    return values


@pytest.mark.parametrize("sources, distinct, index", [
    ([], [], []),
    (["a"], ["a"], [0]),
    (["a", "a", "b"], ["a", "b"], [0, 0, 1]),
    (["b", "a", "b", "c", "a"], ["b", "a", "c"], [0, 1, 0, 2, 1]),  # not contiguous
])
def test_group_by_source(sources, distinct, index):
    assert group_by_source(sources) == (distinct, index)


@pytest.mark.parametrize("lengths, batch_tokens, batches", [
    ([], 10, []),
    ([3, 1, 2], 100, [[1, 2, 0]]),
    ([3, 1, 2], 1, [[1], [2], [0]]),  # a batch holds at least one row
    ([2, 2, 2, 5], 6, [[0, 1, 2], [3]]),
    ([4, 1, 1, 4], 4, [[1, 2], [0], [3]]),  # ties keep input order
])
def test_length_batches(lengths, batch_tokens, batches):
    assert [batch.tolist() for batch in length_batches(lengths, batch_tokens)] == batches


def test_length_batches_cut_as_one_position_at_a_time_would():
    """Runs of equal length are cut by arithmetic: the batches of the rule applied position by position."""
    def one_at_a_time(lengths, batch_tokens):
        batches, current = [], []
        for position in sorted(range(len(lengths)), key=lengths.__getitem__):
            if current and (len(current) + 1) * lengths[position] > batch_tokens:
                batches.append(current)
                current = []
            current.append(position)
        return batches + [current] if current else batches

    generator = np.random.default_rng(0)
    for _ in range(500):
        lengths = generator.integers(1, 12, size=generator.integers(0, 60)).tolist()
        batch_tokens = int(generator.choice([1, 3, 8, 40, 4096]))
        got = [batch.tolist() for batch in length_batches(np.array(lengths, dtype=np.int64), batch_tokens)]
        assert got == one_at_a_time(lengths, batch_tokens)


def test_values_equal_model_log_prob(model_path, entries):
    trained = load_encoder_decoder(model_path)
    feature = RNNFeature(trained, batch_tokens=512)
    assert feature.values(entries) == pytest.approx(reference_log_probs(trained, entries), abs=1e-5)


def test_each_distinct_source_encoded_once(model_path, entries, monkeypatch):
    trained = load_encoder_decoder(model_path)
    encoded = []
    original = trained.model.source_context
    monkeypatch.setattr(trained.model, "source_context",
                        lambda src, lengths: encoded.append(len(src)) or original(src, lengths))
    RNNFeature(trained, batch_tokens=64).values(entries)
    assert sum(encoded) == len({entry.source for entry in entries})
    assert len(encoded) > 1  # several length batches


def test_order_restored_for_shuffled_lines(model_path, entries):
    feature = RNNFeature(load_encoder_decoder(model_path), batch_tokens=256)
    shuffled = list(entries)
    random.Random(1).shuffle(shuffled)  # the targets of one source are no longer adjacent
    by_line = dict(zip((e.line_no for e in entries), feature.values(entries)))
    assert feature.values(shuffled) == pytest.approx([by_line[e.line_no] for e in shuffled], abs=1e-5)


def test_fp32_independent_of_batch_size(model_path, entries):
    trained = load_encoder_decoder(model_path)
    one = RNNFeature(trained, batch_tokens=1).values(entries[:200])
    many = RNNFeature(trained, batch_tokens=512).values(entries[:200])
    assert one == pytest.approx(many, abs=1e-5)


def test_moses_reads_log_p_from_the_column(model_path, entries):
    feature = RNNFeature(load_encoder_decoder(model_path))
    log_p = feature.values(entries)
    seen_by_moses = [max(math.log(float(x)) if float(x) > 0 else -math.inf, -100.0)
                     for x in (table_value(value, feature.spec.table_digits) for value in log_p)]
    assert any(value < -10 for value in log_p)
    for moses, value in zip(seen_by_moses, log_p):
        assert moses == pytest.approx(max(value, -100.0), rel=1e-8)


def test_length_normalize_divides_by_predicted_tokens(model_path, entries):
    trained = load_encoder_decoder(model_path)
    plain = RNNFeature(trained).values(entries[:50])
    normalised = RNNFeature(trained, length_normalize=True).values(entries[:50])
    tokens = [len(entry.target.split()) + 1 for entry in entries[:50]]
    assert normalised == pytest.approx([p / n for p, n in zip(plain, tokens)], abs=1e-6)


def test_target_to_source_model_scores_the_source(tmp_path, entries):
    trained = load_encoder_decoder(save_tiny_model(str(tmp_path / "t2s.pt"), "target-to-source"))
    feature = RNNFeature(trained, direction="target-to-source")
    assert feature.values(entries[:100]) == pytest.approx(
        reference_log_probs(trained, entries[:100], forward=False), abs=1e-5)


def test_direction_mismatch_is_refused(model_path):
    with pytest.raises(ValueError, match="trained source-to-target .* not target-to-source"):
        RNNFeature(load_encoder_decoder(model_path), direction="target-to-source")


def test_bf16_close_to_fp32(model_path, entries):
    trained = load_encoder_decoder(model_path)
    fp32 = torch.tensor(RNNFeature(trained).values(entries[:200]))
    bf16 = torch.tensor(RNNFeature(trained, dtype="bf16").values(entries[:200]))
    assert (bf16 - fp32).abs().max() < 0.05 * fp32.abs().max()
    assert "dtype=bf16" in describe(RNNFeature(trained, dtype="bf16"))


def test_score_log_prob_equals_decode_log_prob_in_float64():
    """The scoring path (real steps only, blockwise normaliser) against the model's plain path."""
    torch.manual_seed(0)
    model = EncoderDecoder(ModelConfig(19, 21, embed_dim=8, hidden_dim=7, maxout_units=5, output_rank=4))
    model = model.double()
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.5)
    src, src_lengths = pad([[5], [3, 4, 18], [6, 1, 7, 8, 9], [4, 4]])
    trg, trg_lengths = pad([[7], [9, 3, 20], [], [11, 12, 13, 14, 15]], append_eos=True)  # unsorted
    with torch.inference_mode():
        ctx = model.source_context(src, src_lengths)
        expected = model.decoder.token_log_probs(ctx, trg, trg_lengths).sum(1)
        for row_block in (1, 3, 512):
            actual = model.decoder.sequence_log_prob(ctx, trg, trg_lengths, row_block=row_block)
            assert actual.dtype == torch.float64
            assert torch.allclose(actual, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("encoder", list(ARCHITECTURES))
def test_an_empty_source_scores_a_number_in_a_batch_and_alone(encoder, tmp_path):
    """Every architecture scores a target given an empty source (Moses' empty line): a finite log p, the same
    alone (a batch of empty sources) as beside longer ones."""
    feature = RNNFeature(load_encoder_decoder(save_tiny_model(str(tmp_path / "m.pt"), encoder=encoder)))
    pairs = [_Pair("", "la maison"), _Pair("", ""), _Pair("the house", "la maison")]
    together = feature.values(pairs)
    assert all(math.isfinite(value) for value in together), together
    assert feature.values(pairs[:1]) == pytest.approx(together[:1], abs=1e-4)


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_table_is_never_written_with_nan(model_path, tmp_path, monkeypatch, workers):
    """A column value that is NaN (a feature's fault) stops `score` in one line, with no table written (its .part
    keeps the chunks written before, for a resumed run, as after any stop), whether this process formats the
    chunk or a worker does (its refusal comes back as the same line)."""
    from click.testing import CliRunner

    from mosesrnn.cli import main
    started = RNNFeature.start

    def with_nan(self, encoded):
        values = started(self, encoded)
        return lambda: [math.nan, *values()[1:]]

    monkeypatch.setattr(RNNFeature, "start", with_nan)
    out = tmp_path / "scored.gz"
    result = CliRunner().invoke(main, ["score", TABLE, "-m", model_path, "-o", str(out), "-q", "--workers", workers])
    assert result.exit_code == 1 and "computed NaN for a phrase pair" in result.output, result.output
    assert not out.exists()


class _Pair:
    def __init__(self, source, target):
        self.source, self.target = source, target


def test_rnn_and_rnn_rev_in_one_pass(model_path, tmp_path):
    """score -m FORWARD --reverse-model BACKWARD: both directions' log p, as Moses reads them, in one run."""
    import gzip
    import json

    from click.testing import CliRunner

    from mosesrnn.cli import main
    reverse_path = save_tiny_model(str(tmp_path / "t2s.pt"), "target-to-source", seed=1)
    table = tmp_path / "in.gz"
    with gzip.open(TABLE, "rt", encoding="utf-8") as stream:
        lines = [next(stream) for _ in range(300)]
    table.write_bytes(gzip.compress("".join(lines).encode()))
    out = tmp_path / "out.gz"
    result = CliRunner().invoke(main, ["score", str(table), "-m", model_path, "--reverse-model", reverse_path,
                                       "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    sidecar = json.loads((tmp_path / "out.gz.json").read_text())
    assert sidecar["appended_columns"] == ["rnn", "rnn-rev", "unk"]  # the default with both models
    assert "rnn-rev(model=" in sidecar["signature"] and "direction=target-to-source" in sidecar["signature"]
    entries = list(read_entries(str(table)))
    written = [line.split(" ||| ")[2].split()[-3:-1] for line in gzip.open(out, "rt", encoding="utf-8")]
    assert len(written) == len(entries) == 300
    forward = reference_log_probs(load_encoder_decoder(model_path), entries)
    backward = reference_log_probs(load_encoder_decoder(reverse_path), entries, forward=False)
    for (rnn, rnn_rev), p_forward, p_backward in zip(written, forward, backward):
        assert max(math.log(float(rnn)), -100) == pytest.approx(max(p_forward, -100), abs=1e-4)
        assert max(math.log(float(rnn_rev)), -100) == pytest.approx(max(p_backward, -100), abs=1e-4)
    assert forward != pytest.approx(backward, abs=1e-3)  # two models, two directions, two columns


def test_rnn_rev_needs_the_other_direction(model_path):
    from mosesrnn.features.options import FeatureOptions
    from mosesrnn.features.selection import select_features
    options = FeatureOptions(features="rnn,rnn-rev", model=model_path, reverse_model=model_path)
    with pytest.raises(ValueError, match="trained source-to-target .* rnn-rev needs a model trained "
                                         "target-to-source .*--direction target-to-source"):
        select_features(options)
    with pytest.raises(ValueError, match="rnn-rev feature needs a model file \\(--reverse-model MODEL\\)"):
        select_features(FeatureOptions(features="rnn-rev", model=model_path))
