"""Shared fixtures of the scoring tests: a tiny model trained on nothing, saved as a real model file."""
from __future__ import annotations

import os

import torch

from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.models.config import ModelConfig
from mosesrnn.models.encdec import EncoderDecoder
from mosesrnn.models.model_file import save_trained_model
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
