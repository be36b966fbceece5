"""Shared fixtures of the scoring tests: a tiny model trained on nothing, saved as a real model file."""
from __future__ import annotations

import math
import os

import torch

from mosesrnn.encdec.config import ModelConfig
from mosesrnn.encdec.model import EncoderDecoder
from mosesrnn.encdec.model_file import save_encoder_decoder
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
    save_encoder_decoder(path, model, text, direction)
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


def save_tiny_joint_model(path: str, seed: int = 0, order: int = 3, source_window: int = 1, words: int = 40,
                          std: float | None = None, feature: str = "bilm", vocabulary=None) -> str:
    """A joint model with random weights (torch's initialisation, or normal with ``std``, so that every input
    moves the scores) over the ``words`` most frequent words a side of the Tatoeba training slice (or over
    ``vocabulary``, a :class:`~mosesrnn.bilm.data.JointVocabulary`), recorded as
    self-normalised (for the commands that check it) and of the orientation of ``feature`` (``bilm``,
    ``bilm-t2s``...); returns ``path``."""
    import collections

    from mosesrnn.bilm.config import joint_network_config
    from mosesrnn.bilm.data import joint_vocabulary
    from mosesrnn.bilm.model_file import TrainedJoint, save_joint
    from mosesrnn.bilm.orientation import JOINT_FEATURES
    from mosesrnn.cslm.model import CSLM

    if vocabulary is None:
        folder = os.path.join(os.path.dirname(__file__), "data")
        counts = [collections.Counter(open(os.path.join(folder, f"tatoeba.train2k.tok.{side}"), encoding="utf-8")
                                      .read().split()) for side in ("fr", "en")]
        vocabulary = joint_vocabulary(*counts, words, words)
    torch.manual_seed(seed)
    network = CSLM(joint_network_config(order, source_window, len(vocabulary.target), vocabulary.input_size, 6, (12,),
                                        0.1)).eval()
    if std is not None:
        with torch.no_grad():
            for parameter in network.parameters():
                parameter.normal_(0.0, std)
    save_joint(path, TrainedJoint(network, order, source_window, vocabulary, {"log_z_mean": 0.0},
                                      orientation=JOINT_FEATURES[feature]))
    return path


def dev5_moses_ini() -> str:
    """A runnable moses.ini over the Tatoeba table's lines for 5 dev sentences (with word alignments, as
    BilingualNPLM needs), no language model; absolute paths."""
    table = os.path.join(os.path.dirname(__file__), "data", "moses", "tatoeba.dev5.phrase-table.gz")
    return ("[input-factors]\n0\n[mapping]\n0 T 0\n[distortion-limit]\n6\n[feature]\nUnknownWordPenalty\n"
            "WordPenalty\nPhrasePenalty\nPhraseDictionaryMemory name=TranslationModel0 num-features=4 "
            f"path={table} input-factor=0 output-factor=0 table-limit=20\nDistortion\n[weight]\n"
            "UnknownWordPenalty0= 1\nWordPenalty0= -1\nPhrasePenalty0= 0.2\nTranslationModel0= 0.2 0.2 0.2 0.2\n"
            "Distortion0= 0.3\n")
