"""Padded id tensors for the model."""
from __future__ import annotations

from typing import Sequence

import torch

from .config import EOS_ID, PAD_ID

__all__ = ["pad"]


def pad(sequences: Sequence[Sequence[int]], append_eos: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id sequences with PAD_ID.

    Returns ``(ids, lengths)`` of shapes ``(B, T)`` and ``(B,)``; with ``append_eos`` every
    sequence gets EOS_ID at its end (targets do, sources don't), counted in its length.
    """
    extra = 1 if append_eos else 0
    lengths = torch.tensor([len(sequence) + extra for sequence in sequences], dtype=torch.long)
    ids = torch.full((len(sequences), int(lengths.max()) if len(sequences) else 0), PAD_ID, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, :len(sequence)] = torch.as_tensor(sequence, dtype=torch.long)
        if append_eos:
            ids[row, len(sequence)] = EOS_ID
    return ids, lengths
