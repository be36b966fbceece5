"""Shared fixtures of the scoring tests: a tiny model trained on nothing, saved as a real model file."""
from __future__ import annotations

import os

import torch

from mosesrnn.config import ModelConfig
from mosesrnn.model import RNNEncoderDecoder
from mosesrnn.model_file import save_trained_model
from mosesrnn.phrase_table import read_entries
from mosesrnn.vocab import build_vocabularies

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
    model = RNNEncoderDecoder(ModelConfig(source, target, **{**TINY, **sizes}))
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.3)
    save_trained_model(path, model, vocabularies, direction)
    return path
