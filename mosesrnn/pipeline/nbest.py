"""Add feature values to every hypothesis of a Moses n-best list.

Each hypothesis is paired with its source sentence (line ``id + 1`` of the source file, read
along as the ascending ids advance, so memory stays constant), the features compute one value
per pair in chunks (the RNN encodes each sentence once for all its hypotheses and decodes them
in length batches, as for a phrase table), and the values are appended to field 3 as new groups
``RNN0= -12.3 UNK0= 1`` — raw: Moses takes no logarithm of n-best values. Every other byte of
every line is kept, one output line per input line, in order.
"""
from __future__ import annotations

import contextlib
import logging
import math
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

from ..errors import MosesRNNError
from ..features.registry import Feature, describe
from ..formats.nbest import NbestEntry, NbestError, format_line, read_nbest
from ..formats.text_file import text_lines
from ..io.compressed import atomic_output, atomic_text_output
from ..io.resumable import StreamOutput
from .preflight import first_chunk_warnings
from .streams import ChunkWriter, chunked, prefetch

__all__ = ["NbestPair", "NbestSummary", "nbest_label", "run_nbest_job", "word_score_line"]

log = logging.getLogger("mosesrnn")


@dataclass(frozen=True)
class NbestPair:
    """A hypothesis of an n-best list paired with its source sentence, as features read it: ``source`` and
    ``target``, the translation; ``extra``, the line's fields after the total (Moses' segmentation and word
    alignment, where it wrote them); ``path`` and ``line_no``, where the line is, for a feature's errors."""

    source: str
    target: str
    extra: tuple[str, ...] = ()
    path: str = "the n-best list"
    line_no: int = 0


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


def nbest_label(feature: Feature, labels: Mapping[str, str] | None = None) -> str:
    """The feature's label in an n-best list: the one ``labels`` gives it, else Moses style ``rnn`` -> ``RNN0``."""
    given = (labels or {}).get(feature.spec.name)
    return given or feature.spec.name.upper().replace("-", "_") + "0"


class _Sources:
    """Line ``id + 1`` of the source file ``path`` for ascending sentence ids, read along in one pass from ``lines``
    (its :func:`~mosesrnn.formats.text_file.text_lines`)."""

    def __init__(self, lines: Iterator[tuple[int, str]], path: str):
        self._lines, self.path, self._id, self._text = lines, path, -1, ""

    def sentence(self, entry: NbestEntry) -> str:
        while self._id < entry.sentence_id:
            line = next(self._lines, None)
            if line is None:
                raise NbestError(entry.path, entry.line_no, f"sentence id {entry.sentence_id}, but {self.path} "
                                                            f"has only {self._id + 1} lines")
            self._id += 1
            self._text = line[1].strip(" \t")
        return self._text


def run_nbest_job(nbest_path: str, source_path: str, output_path: str, features: Sequence[Feature],
                  labels: Mapping[str, str] | None = None, *, word_scores: str | None = None, chunk_lines: int = 20000,
                  encoding: str = "utf-8", progress: Callable[[int], None] | None = None) -> NbestSummary:
    """Append the ``features``' values, in order, to every hypothesis of an n-best list.

    ``-`` reads stdin or writes stdout; the output appears whole or not at all. Raises
    :class:`~mosesrnn.formats.nbest.NbestError` (``PATH:LINE: problem``) for a malformed line,
    a sentence id beyond the source file, or a feature label already in a line. ``labels`` names a
    feature's group (``{"rnn": "RNN1"}``); the others get theirs from their names (``RNN0``, ``UNK0``).
    ``word_scores``: a file that gets, for every hypothesis, the rnn model's log p of each token it
    predicts (see :func:`word_score_line`).
    """
    if not features:
        raise MosesRNNError("no feature to compute")
    rnn = next((feature for feature in features if feature.spec.name == "rnn"), None)
    if word_scores is not None and rnn is None:
        raise MosesRNNError("word scores are the rnn model's: give -m MODEL (the rnn feature)")
    names = [nbest_label(feature, labels) for feature in features]
    started, lines, sentences = time.perf_counter(), 0, 0

    def format_chunk(entries: Sequence[NbestEntry], columns: Sequence[Sequence[float]]) -> str:
        return "".join(format_line(entry, [(name, [value]) for name, value in zip(names, values)])
                       for entry, values in zip(entries, zip(*columns)))

    with atomic_output(output_path) as stream, _word_score_output(word_scores) as word_stream, \
            text_lines(source_path, encoding) as source_lines, read_nbest(nbest_path, encoding) as entries:
        sources = _Sources(source_lines, source_path)
        writer = ChunkWriter(StreamOutput(stream), format_chunk)
        try:
            last_id = None
            # Closed here, so that its thread has stopped reading before the readers close.
            with contextlib.closing(prefetch(chunked(entries, chunk_lines))) as chunks:
                for chunk in chunks:
                    pairs = [NbestPair(sources.sentence(entry), entry.hypothesis, entry.fields[4:], entry.path,
                                       entry.line_no) for entry in chunk]
                    if not lines:
                        for warning in first_chunk_warnings(nbest_path, pairs, features, table=False):
                            log.warning("warning: %s", warning)
                    writer.put(chunk, [feature.values(pairs) for feature in features])
                    if word_stream is not None:
                        word_stream.writelines(word_score_line(entry, scores)
                                               for entry, scores in zip(chunk, rnn.token_log_probs(pairs)))
                    sentences += len({entry.sentence_id for entry in chunk} - {last_id})
                    lines, last_id = lines + len(chunk), chunk[-1].sentence_id
                    if progress:
                        progress(lines)
        finally:
            writer.close()
    return NbestSummary(lines, sentences, time.perf_counter() - started, tuple(names),
                        tuple(describe(feature) for feature in features))


def word_score_line(entry: NbestEntry, scores: Sequence[float]) -> str:
    """One hypothesis' per-token scores, n-best style: ``ID ||| hypothesis ||| s_1 ... s_n s_EOS`` (natural
    log; the tokens are the model's, words or subword pieces, then the end of sentence). Raises NbestError for a
    score that is NaN or infinite: never written."""
    if not all(math.isfinite(score) for score in scores):
        raise NbestError(entry.path, entry.line_no, "the rnn model's word scores of this hypothesis are not all "
                                                    "finite numbers: nothing written")
    return f"{entry.sentence_id} ||| {entry.hypothesis} ||| {' '.join(f'{score:.6f}' for score in scores)}\n"


@contextlib.contextmanager
def _word_score_output(path: str | None):
    if path is None:
        yield None
        return
    with atomic_text_output(path) as stream:
        yield stream
