"""Add feature values to every hypothesis of a Moses n-best list.

Each hypothesis is paired with its source sentence (line ``id + 1`` of the source file, read
along as the ascending ids advance, so memory stays constant), the features compute one value
per pair in chunks (the RNN encodes each sentence once for all its hypotheses and decodes them
in length batches, as for a phrase table), and the values are appended to field 3 as new groups
``RNN0= -12.3 UNK0= 1`` — raw: Moses takes no logarithm of n-best values. Every other byte of
every line is kept, one output line per input line, in order.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

from ..features.registry import Feature, describe
from ..formats.compressed import atomic_output
from ..formats.nbest import NbestEntry, NbestError, format_line, read_nbest
from ..formats.text_file import text_lines
from .checkpoint import StreamOutput
from .streams import ChunkWriter, chunked, prefetch

__all__ = ["Hypothesis", "NbestSummary", "nbest_label", "score_nbest"]


@dataclass(frozen=True)
class Hypothesis:
    """A hypothesis as features read it: the source sentence and the translation."""

    source: str
    target: str


@dataclass(frozen=True)
class NbestSummary:
    """What an n-best scoring run did."""

    lines: int
    sentences: int
    seconds: float
    labels: tuple[str, ...] = ()  # the groups added, e.g. ("RNN0", "UNK0")
    features: tuple[str, ...] = ()  # each feature with its settings (see mosesrnn.features.registry.describe)

    @property
    def lines_per_second(self) -> float:
        """Hypotheses per second, reading and writing included."""
        return self.lines / self.seconds if self.seconds else 0.0


def nbest_label(feature: Feature) -> str:
    """The feature's label in an n-best list, Moses style: ``rnn`` -> ``RNN0``."""
    return feature.spec.name.upper().replace("-", "_") + "0"


class _Sources:
    """Line ``id + 1`` of the source file for ascending sentence ids, read along in one pass."""

    def __init__(self, path: str, encoding: str):
        self._lines, self.path, self._id, self._text = text_lines(path, encoding), path, -1, ""

    def sentence(self, entry: NbestEntry) -> str:
        while self._id < entry.sentence_id:
            line = next(self._lines, None)
            if line is None:
                raise NbestError(entry.path, entry.line_no, f"sentence id {entry.sentence_id}, but {self.path} "
                                                            f"has only {self._id + 1} lines")
            self._id += 1
            self._text = line[1].strip(" \t")
        return self._text


def score_nbest(nbest_path: str, source_path: str, output_path: str, features: Sequence[Feature], *,
                chunk_lines: int = 20000, encoding: str = "utf-8",
                progress: Callable[[int], None] | None = None) -> NbestSummary:
    """Append the ``features``' values, in order, to every hypothesis of an n-best list.

    ``-`` reads stdin or writes stdout; the output appears whole or not at all. Raises
    :class:`~mosesrnn.formats.nbest.NbestError` (``PATH:LINE: problem``) for a malformed line,
    a sentence id beyond the source file, or a feature label already in a line.
    """
    if not features:
        raise ValueError("no feature to compute")
    labels = [nbest_label(feature) for feature in features]
    started, lines, sentences = time.perf_counter(), 0, 0

    def format_chunk(entries: Sequence[NbestEntry], columns: Sequence[Sequence[float]]) -> str:
        return "".join(format_line(entry, [(label, [value]) for label, value in zip(labels, values)])
                       for entry, values in zip(entries, zip(*columns)))

    sources = _Sources(source_path, encoding)
    with atomic_output(output_path) as stream:
        writer = ChunkWriter(StreamOutput(stream), format_chunk)
        try:
            last_id = None
            for chunk in prefetch(chunked(read_nbest(nbest_path, encoding), chunk_lines)):
                pairs = [Hypothesis(sources.sentence(entry), entry.hypothesis) for entry in chunk]
                writer.put(chunk, [feature.values(pairs) for feature in features])
                sentences += len({entry.sentence_id for entry in chunk} - {last_id})
                lines, last_id = lines + len(chunk), chunk[-1].sentence_id
                if progress:
                    progress(lines)
        finally:
            writer.close()
    return NbestSummary(lines, sentences, time.perf_counter() - started, tuple(labels),
                        tuple(describe(feature) for feature in features))
