"""Shared fixtures of the scoring tests: a tiny model trained on nothing, saved as a real model file."""
from __future__ import annotations

import math
import os

import torch

from mosesrnn.encdec.config import ModelConfig
from mosesrnn.encdec.model import EncoderDecoder
from mosesrnn.encdec.model_file import save_trained_model
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.text.codec import Codec, CodecPair
from mosesrnn.text.tokenizers import MosesWords
from mosesrnn.text.vocab import build_vocabularies

TABLE = os.path.join(os.path.dirname(__file__), "data", "tatoeba.en-fr.3k.gz")
TINY = dict(embed_dim=8, hidden_dim=16, maxout_units=8, output_rank=6)


def save_tiny_model(path: str, direction: str = "source-to-target", seed: int = 0, vocab_size: int = 300,
                    **sizes) -> str:
    """Write a model file with shortlists from the 3k-line table and random weights (std 0.3)."""
    vocabularies, _ = build_vocabularies(read_entries(TABLE), vocab_size)
    source, target = len(vocabularies.source), len(vocabularies.target)
    if direction == "target-to-source":
        source, target = target, source
    torch.manual_seed(seed)
    model = EncoderDecoder(ModelConfig(source, target, **{**TINY, **sizes}))
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.3)
    text = CodecPair(Codec(MosesWords(), vocabularies.source), Codec(MosesWords(), vocabularies.target))
    save_trained_model(path, model, text, direction)
    return path


def assert_equal_up_to_rnn_rounding(scored: str, reference: str, rnn_column: int = -2) -> None:
    """Equal lines, except that the rnn column's log p may differ by float32 rounding (1e-4 nats).

    Shards start their chunks at other lines, so the length batches hold other pairs, and the CPU's
    matmul kernels (AVX2, AVX-512) round differently with the batch composition: what is promised
    for shards is equality within this tolerance; a resumed run with the same settings is
    byte-identical (see test_resume_after_sigkill_is_byte_identical).
    """
    scored_lines, reference_lines = scored.splitlines(), reference.splitlines()
    assert len(scored_lines) == len(reference_lines)
    for got, want in zip(scored_lines, reference_lines):
        got_scores, want_scores = got.split("|||")[2].split(), want.split("|||")[2].split()
        assert got.split("|||")[:2] == want.split("|||")[:2] and got.split("|||")[3:] == want.split("|||")[3:]
        assert got_scores[:rnn_column] + got_scores[rnn_column + 1:] == \
            want_scores[:rnn_column] + want_scores[rnn_column + 1:]
        got_log_p, want_log_p = (math.log(float(x)) if float(x) > 0 else -math.inf
                                 for x in (got_scores[rnn_column], want_scores[rnn_column]))
        assert got_log_p == want_log_p or abs(got_log_p - want_log_p) <= 1e-4
