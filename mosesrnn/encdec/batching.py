"""Padded id tensors for the model, from lists of ids (search, training batches, analysis)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..text.id_arrays import IdArrays

__all__ = ["pad"]


def pad(sequences: Sequence[Sequence[int]], append_eos: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id sequences with PAD_ID.

    Returns ``(ids, lengths)`` of shapes ``(B, T)`` and ``(B,)``; with ``append_eos`` every
    sequence gets EOS_ID at its end (targets do, sources don't), counted in its length.
    """
    lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
    flat = np.fromiter((i for sequence in sequences for i in sequence), dtype=np.int64, count=int(lengths.sum()))
    ids, lengths = IdArrays(flat, lengths).padded(np.arange(len(sequences)), append_eos)
    return torch.from_numpy(ids), torch.from_numpy(lengths)
