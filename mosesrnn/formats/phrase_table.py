"""Streaming, lossless reading and writing of Moses phrase tables.

A line is ``source ||| target ||| scores [||| alignment ||| counts ||| sparse ||| properties]``.
We split on ``|||`` and keep every field's exact spacing, so :func:`format_line` is the exact
inverse of :func:`parse_line`; new feature values go *inside* the scores field, after the
existing scores, which is the only place Moses reads them as dense features (see
``shared/docs/moses.md``).
"""
from __future__ import annotations

import functools
import itertools
import math
import os
import sys
from dataclasses import dataclass
from typing import BinaryIO, Iterator, Sequence

from ..errors import MosesRNNError
from ..io.compressed import decompressed, open_raw
from ..io.readers import Reader, reader
from .errors import FileLineError, decoded_lines

__all__ = [
    "PhraseTableError", "PhraseEntry", "ENCODING_HINT", "score_column",
    "parse_line", "format_line", "MAX_TABLE_EXPONENT", "MOSES_FLOOR", "moses_log", "table_value",
    "read_entries", "first_entries", "source_groups",
    "count_scores", "TableReader",
]

FIELD_SEPARATOR = "|||"
#: Said with a line that is not valid text in the table's encoding.
ENCODING_HINT = " (for a legacy table, pass its encoding, e.g. --encoding latin-1)"


class PhraseTableError(FileLineError):
    """A malformed phrase table; the message names the file and the line."""


@dataclass(frozen=True)
class PhraseEntry:
    """One phrase pair, with its raw fields kept byte for byte.

    ``fields`` are the text between ``|||`` separators, spacing included; ``ending`` is the
    line terminator (``"\\n"``, ``"\\r\\n"`` or ``""`` on a last line without one).
    """

    line_no: int
    fields: tuple[str, ...]
    scores: tuple[float, ...]
    ending: str

    @property
    def source(self) -> str:
        """The source phrase without surrounding spaces, e.g. ``"das Haus"``."""
        return self.fields[0].strip(" \t")

    @property
    def target(self) -> str:
        """The target phrase without surrounding spaces."""
        return self.fields[1].strip(" \t")


def score_column(path: str, entry: PhraseEntry, index: int, option: str) -> int:
    """``index`` (0-based; negative counts from the end) as a column of ``entry``'s scores, from 0.

    Raises :class:`PhraseTableError` at the entry's line, naming ``option``, if there is no such column.
    """
    width = len(entry.scores)
    if not -width <= index < width:
        raise PhraseTableError(path, entry.line_no, f"no score column {index} ({option}): the line has "
                               f"{width} score{'s' if width != 1 else ''}, columns 0..{width - 1} "
                               f"(or -1..-{width} from the end)")
    return index % width


def parse_line(line: str, path: str, line_no: int, expected_scores: int | None = None) -> PhraseEntry:
    """Parse one phrase-table line, checking what Moses would reject or misread.

    Raises :class:`PhraseTableError` for fewer than three fields, an empty source or target
    phrase, a score that is not a finite non-negative number, or (given ``expected_scores``) a
    different number of scores.
    """
    body = line.rstrip("\r\n")
    fields = tuple(body.split(FIELD_SEPARATOR))
    if len(fields) < 3:
        raise PhraseTableError(path, line_no, f"expected at least 3 '|||'-separated fields, found {len(fields)}")
    if not fields[0].strip():
        raise PhraseTableError(path, line_no, "empty source phrase")
    if not fields[1].strip():
        raise PhraseTableError(path, line_no, "empty target phrase")
    try:
        scores = _parse_scores(fields[2], path, line_no)
    except PhraseTableError as error:
        glued = next((i for i, field in enumerate(fields[3:], start=4) if _is_scores(field)), None)
        if glued is None:
            raise
        raise PhraseTableError(path, line_no, f"field 3 {fields[2].strip()!r} is not the scores, but field "
                               f"{glued} is: a phrase holds a '|||' glued to a word") from error
    if expected_scores is not None and len(scores) != expected_scores:
        raise PhraseTableError(
            path, line_no, f"{len(scores)} scores, but the first line has {expected_scores}")
    return PhraseEntry(line_no, fields, scores, line[len(body):])


def _is_scores(field: str) -> bool:
    try:
        return bool(field.split()) and all(math.isfinite(float(token)) for token in field.split())
    except ValueError:
        return False


def _parse_scores(field: str, path: str, line_no: int) -> tuple[float, ...]:
    tokens = field.split()
    if not tokens:
        raise PhraseTableError(path, line_no, "empty scores field")
    try:  # the common case in one pass; a bad score is then found, and named, token by token
        scores = tuple(map(float, tokens))
        if all(0 <= value < math.inf for value in scores):  # NaN fails the comparison
            return scores
    except ValueError:
        pass
    scores = []
    for token in tokens:
        try:
            value = float(token)
        except ValueError:
            raise PhraseTableError(path, line_no, f"score {token!r} is not a number") from None
        if math.isnan(value) or math.isinf(value):
            raise PhraseTableError(path, line_no, f"score {token!r} is not finite (Moses takes its log)")
        if value < 0:
            raise PhraseTableError(path, line_no, f"score {token!r} is negative (Moses' log of it is NaN)")
        scores.append(value)
    return tuple(scores)


#: The largest value a phrase table can carry as ``e^v`` (e^709.78 is the largest double).
MAX_TABLE_EXPONENT = 709.0
#: Moses' ``FloorScore``: it reads no log-probability or log-score below this (a phrase table's ``ln x``, an NPLM's
#: output score).
MOSES_FLOOR = -100.0


def moses_log(value: float) -> float:
    """A phrase-table score ``x`` as Moses reads it: ``max(ln x, -100)`` (:data:`MOSES_FLOOR`; 0 too)."""
    return max(math.log(value), MOSES_FLOOR) if value > 0 else MOSES_FLOOR


def table_value(value: float, digits: int | None = None) -> str:
    """Format ``e^value``, the way a phrase table holds a feature Moses should see as ``value``.

    Moses reads every score ``x`` as ``max(ln(x), -100)``, so ``ln()`` of the written number gives
    back ``value``. ``digits=None`` writes the shortest exact representation of the double (for
    integer counts, which Moses must see exactly); otherwise ``digits`` significant digits.
    Values below ``e^-745`` underflow to ``0``, which Moses floors to -100 like any value below
    ``e^-100``; values above :data:`MAX_TABLE_EXPONENT` (a line with over 709 unknown words) are
    written as ``e^709``, so Moses sees 709. NaN raises ValueError: a phrase table holds numbers.
    """
    if math.isnan(value):
        raise MosesRNNError("a feature computed NaN for a phrase pair, not a number: nothing written")
    value = min(value, MAX_TABLE_EXPONENT)
    return _exact_exp(value) if digits is None else f"{math.exp(value):.{digits}g}"


@functools.lru_cache(maxsize=4096)
def _exact_exp(value: float) -> str:
    # Exact values are small counts in practice, so their few distinct strings are cached.
    return repr(math.exp(value))


def format_line(entry: PhraseEntry, appended: Sequence[str] = ()) -> str:
    """Write ``entry`` back, with ``appended`` values added at the end of its scores field.

    With nothing appended the result equals the line that was parsed.
    """
    if not appended:
        return FIELD_SEPARATOR.join(entry.fields) + entry.ending
    scores = entry.fields[2]
    core = scores.rstrip(" \t")
    new_scores = core + " " + " ".join(appended) + scores[len(core):]
    return FIELD_SEPARATOR.join((*entry.fields[:2], new_scores, *entry.fields[3:])) + entry.ending


class TableReader(Reader[PhraseEntry]):
    """Stream the entries of a phrase table in file order, validating each line; one pass.

    ``-`` reads stdin; gzip (recognised by its magic bytes) is decompressed on a background
    thread, so it overlaps with the caller's work. Every line must have the number of scores of
    the first line. A line that is not valid ``encoding``, or a truncated or corrupt gzip stream,
    raises :class:`PhraseTableError`. Lines before ``start_line`` are skipped (for resuming); the
    first line still fixes the score count.
    ``position()`` and ``size`` (compressed bytes read and in all; ``size`` is None for stdin)
    drive progress bars. Read it in a ``with`` block, which closes the file where it is left (see
    :mod:`mosesrnn.io.readers`).
    """

    def __init__(self, path: str, encoding: str = "utf-8", start_line: int = 1):
        if path != "-" and not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no such file")
        self.path, self.encoding, self.start_line = path, encoding, start_line
        self.size = None if path == "-" else os.path.getsize(path)
        self._opened: list[BinaryIO] = []
        self._position = 0
        # A generator that does not refer to the reader: one dropped unclosed is closed at once, not in a cycle.
        super().__init__(_read_table(path, encoding, start_line, self._opened))

    def position(self) -> int:
        """Bytes of the (compressed) input consumed so far."""
        try:
            self._position = self._opened[0].tell()
        except (IndexError, OSError, ValueError):  # not open yet, or closed by the reading thread
            pass
        return self._position


def _read_table(path: str, encoding: str, start_line: int, opened: list[BinaryIO]) -> Iterator[PhraseEntry]:
    """The entries of :class:`TableReader`; the raw file, once open, is put in ``opened``."""
    if path == "-":
        with decompressed(sys.stdin.buffer) as stream:
            yield from _entries(stream, path, encoding, start_line)
        return
    with open_raw(path) as raw, decompressed(raw) as stream:
        opened.append(raw)
        yield from _entries(stream, path, encoding, start_line)


def _entries(stream: BinaryIO, path: str, encoding: str, start_line: int) -> Iterator[PhraseEntry]:
    expected = None
    for line_no, line in decoded_lines(stream, path, encoding, PhraseTableError, ENCODING_HINT, start_line):
        if line is None:
            continue
        entry = parse_line(line, path, line_no, expected)
        expected = len(entry.scores)
        if line_no >= start_line:  # line 1 is always parsed: it fixes the score count
            yield entry


def read_entries(path: str, encoding: str = "utf-8", start_line: int = 1) -> TableReader:
    """The validated entries of a phrase table, streamed (see :class:`TableReader`):
    ``with read_entries(path) as entries:``."""
    return TableReader(path, encoding, start_line)


def first_entries(path: str, count: int, encoding: str = "utf-8") -> list[PhraseEntry]:
    """The validated entries of the first ``count`` lines of a phrase table (fewer in a shorter one)."""
    with read_entries(path, encoding) as entries:
        return list(itertools.islice(entries, count))


def count_scores(path: str, encoding: str = "utf-8") -> int:
    """Return the number of scores on the first line of a phrase table."""
    with read_entries(path, encoding) as entries:
        first = next(entries, None)
    if first is None:
        raise PhraseTableError(path, 1, "the phrase table is empty")
    return len(first.scores)


@reader
def source_groups(path: str, encoding: str = "utf-8") -> Iterator[list[PhraseEntry]]:
    """Runs of adjacent entries with the same source, as a :class:`~mosesrnn.io.readers.Reader`; raises
    PhraseTableError if a source comes back."""
    seen: set[str] = set()
    group: list[PhraseEntry] = []
    with read_entries(path, encoding) as entries:
        for entry in entries:
            if group and entry.source != group[0].source:
                yield group
                group = []
            if not group:
                if entry.source in seen:
                    raise PhraseTableError(path, entry.line_no, f"source phrase {entry.source!r} occurs again "
                                           "after other sources: the table must be sorted by source phrase")
                seen.add(entry.source)
            group.append(entry)
    if group:
        yield group
