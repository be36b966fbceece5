"""Phrases as model ids in bulk: one flat array of ids and one of lengths, padded in one array operation.

Scoring a chunk of a phrase table reads tens of thousands of short phrases. Building a list and a
tensor per phrase costs more than the network on a GPU, so a chunk's phrases become two numpy arrays
(:class:`IdArrays`: every phrase's ids one after the other, and each phrase's length), and a batch's
padded rows are cut from them with one gather. Nothing here imports torch: worker processes that encode
chunks for the process that owns the model (:mod:`mosesrnn.pipeline.workers`) run it without one.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .codec import Codec
from .vocab import EOS_ID, PAD_ID

__all__ = ["IdArrays", "id_arrays", "length_batches"]


@dataclass(frozen=True)
class IdArrays:
    """Phrases as ids: ``ids`` (tokens,) int64, every phrase's ids one after the other (no EOS);
    ``lengths`` (phrases,) int64, each phrase's token count."""

    ids: np.ndarray
    lengths: np.ndarray

    def __len__(self) -> int:
        return len(self.lengths)

    def padded(self, rows: np.ndarray, append_eos: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The phrases ``rows`` right-padded with PAD_ID: ``(ids, lengths)`` of shapes (b, T) and (b,).

        With ``append_eos`` each phrase gets EOS_ID after its last token, counted in its length (targets do,
        sources don't).
        """
        lengths = self.lengths[rows]
        starts = np.concatenate(([0], np.cumsum(self.lengths)[:-1]))[rows] if len(self.lengths) else lengths
        # at least one column: a batch of empty sources is one padding position wide, which every encoder reads
        width = max(int(lengths.max(initial=0)) + append_eos, 1)
        columns = np.arange(width)
        inside = columns < lengths[:, None]  # (b, T)
        out = np.full((len(rows), width), PAD_ID, dtype=np.int64)
        out[inside] = self.ids[(starts[:, None] + columns)[inside]]
        if append_eos:
            out[np.arange(len(rows)), lengths] = EOS_ID
            lengths = lengths + 1
        return out, lengths


def id_arrays(codec: Codec, texts: Sequence[str]) -> IdArrays:
    """The ids of every text's tokens (unknown tokens as ``<unk>``), as one :class:`IdArrays`."""
    tokens, lengths = _tokens_of_many(codec.tokenizer, texts)
    ids = np.fromiter(map(codec.vocabulary.id_of, tokens), dtype=np.int64, count=len(tokens))
    return IdArrays(ids, np.array(lengths, dtype=np.int64))


def _tokens_of_many(tokenizer, texts: Sequence[str]) -> tuple[list[str], list[int]]:
    """All the texts' tokens one after the other, and each text's count (in bulk where the tokenizer can)."""
    if hasattr(tokenizer, "tokens_of_many"):
        return tokenizer.tokens_of_many(texts)
    per_text = [tokenizer.tokens(text) for text in texts]
    return list(itertools.chain.from_iterable(per_text)), list(map(len, per_text))


def length_batches(lengths: np.ndarray, batch_tokens: int) -> list[np.ndarray]:
    """Cut positions into batches of similar length, shortest first.

    Positions are sorted by length (ties keep input order), then cut so that a batch's rows times its
    longest length stays within ``batch_tokens`` (a batch has at least one row). Runs of equal length are
    cut by arithmetic, not position by position.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(lengths, kind="stable")
    run_lengths, run_sizes = np.unique(lengths[order], return_counts=True)
    ends, done, rows = [], 0, 0  # rows: of the batch being filled, which starts at position `done`
    for length, size in zip(run_lengths.tolist(), run_sizes.tolist()):
        fit = max(batch_tokens // max(length, 1), 1)  # rows of this length a batch holds
        while size:
            if rows >= fit:
                done, rows = done + rows, 0
                ends.append(done)
            taken = min(fit - rows, size)
            rows, size = rows + taken, size - taken
    if rows:
        ends.append(done + rows)
    return [order[start:end] for start, end in zip([0] + ends[:-1], ends)]
