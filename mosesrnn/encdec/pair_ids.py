"""Text pairs as the model reads them, in bulk: each distinct input phrase once, every output phrase, in ids.

:class:`PairEncoder` is the part of scoring that reads text. It imports no torch and pickles small (the
codecs), so the worker processes of :mod:`mosesrnn.pipeline.workers` run it beside the process that owns
the model, which then only pads, copies and computes (:class:`~mosesrnn.encdec.scoring.PairScorer`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from ..text.codec import Codec
from ..text.id_arrays import IdArrays, id_arrays
from .direction import check_direction, orient

__all__ = ["Pair", "EncodedPairs", "PairEncoder", "group_by_source"]


class Pair(Protocol):
    """A pair as features and scorers read it: the source and target text, in the table's orientation
    (phrase-table entries, n-best hypotheses with their source sentence)."""

    source: str
    target: str


@dataclass(frozen=True)
class EncodedPairs:
    """Pairs in ids: ``inputs`` each distinct input phrase once (in order of first appearance),
    ``line_input`` (pairs,) each pair's row in ``inputs``, ``outputs`` each pair's output phrase."""

    inputs: IdArrays
    line_input: np.ndarray
    outputs: IdArrays

    def __len__(self) -> int:
        return len(self.outputs)


def group_by_source(sources: Sequence[str]) -> tuple[list[str], list[int]]:
    """The distinct sources in order of first appearance, and each line's index into them.

    >>> group_by_source(["a", "b", "a"])
    (['a', 'b'], [0, 1, 0])
    """
    index: dict[str, int] = {}
    line_source = [index.setdefault(source, len(index)) for source in sources]
    return list(index), line_source


class PairEncoder:
    """Text pairs -> :class:`EncodedPairs` for a model of ``direction`` with these codecs."""

    def __init__(self, input_codec: Codec, output_codec: Codec, direction: str):
        self.input_codec, self.output_codec, self.direction = input_codec, output_codec, check_direction(direction)

    def __call__(self, pairs: Sequence[Pair]) -> EncodedPairs:
        """The pairs' ids (what the model reads, what it predicts; see :func:`~mosesrnn.encdec.direction.orient`)."""
        inputs, outputs = orient(self.direction, [pair.source for pair in pairs], [pair.target for pair in pairs])
        distinct, line_input = group_by_source(inputs)
        return EncodedPairs(id_arrays(self.input_codec, distinct), np.asarray(line_input, dtype=np.int64),
                            id_arrays(self.output_codec, outputs))
