"""One shard of a phrase table as chunks of raw lines, parsed where the work is.

The process that owns the model must not spend its time on text. :class:`TableChunks` reads the
(decompressed) table and hands out chunks of ``chunk_lines`` raw lines, joined into one ``bytes``;
:func:`parse_chunk` turns a chunk into validated :class:`~mosesrnn.formats.phrase_table.PhraseEntry`
objects, in this process or in a worker (:mod:`mosesrnn.pipeline.workers`). Only the lines that
decide something are parsed here: line 1 (it fixes the score count every line must have) and the
lines around the shard's two ends (their source phrases place the boundaries, see
:mod:`mosesrnn.pipeline.shards`); the rest are split by newline in bulk.
"""
from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass
from typing import BinaryIO, Iterator

from ..formats.phrase_table import ENCODING_HINT, PhraseEntry, PhraseTableError, parse_line
from ..io.compressed import decompressed, open_raw
from ..io.readers import Reader

__all__ = ["RawChunk", "TableChunks", "parse_chunk"]


@dataclass(frozen=True)
class RawChunk:
    """Consecutive lines of a table: the first one's number, and the lines as they are in the file."""

    first_line: int
    lines: int
    data: bytes

    @property
    def last_line(self) -> int:
        """The number of the chunk's last line."""
        return self.first_line + self.lines - 1


def parse_chunk(chunk: RawChunk, path: str, encoding: str, expected_scores: int) -> list[PhraseEntry]:
    """The validated entries of ``chunk``'s lines (every line with ``expected_scores`` scores); raises
    :class:`~mosesrnn.formats.phrase_table.PhraseTableError` at the first bad line."""
    try:
        lines = chunk.data.decode(encoding).split("\n")  # one decode: newline is one byte in the table encodings
    except UnicodeDecodeError:
        lines = [_decoded(raw, path, line_no, encoding)
                 for line_no, raw in zip(itertools.count(chunk.first_line), chunk.data.split(b"\n"))]
    last = lines.pop()  # "" after a final newline, else a last line without one
    texts = [line + "\n" for line in lines] + ([last] if last else [])
    return [parse_line(text, path, line_no, expected_scores)
            for line_no, text in zip(itertools.count(chunk.first_line), texts)]


def _decoded(raw: bytes, path: str, line_no: int, encoding: str) -> str:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as problem:
        raise PhraseTableError(path, line_no, f"not valid {encoding} at byte {problem.start}{ENCODING_HINT}") from None


class TableChunks(Reader[RawChunk]):
    """The lines of one shard's range of a table, in chunks of ``chunk_lines`` (the last may be shorter).

    The range is the shard's of :mod:`mosesrnn.pipeline.shards`: from the first source-phrase boundary at
    or after ``nominal_start`` up to the first at or after ``nominal_stop`` (None: the end of the table);
    ``resume_line`` continues a shard at a line known to belong to it. After iteration ``first_line`` and
    ``end_line`` hold the range [first_line, end_line) (``first_line`` is None when resuming), and
    ``expected_scores`` the score count of line 1 once it has been read. ``position()`` and ``size``
    (compressed bytes read and in all; None for stdin) drive progress bars. Read it in a ``with`` block,
    which closes the table where it is left.
    """

    def __init__(self, path: str, encoding: str, chunk_lines: int, nominal_start: int = 1,
                 nominal_stop: int | None = None, resume_line: int | None = None):
        if path != "-" and not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no such file")
        self.path, self.encoding, self.chunk_lines = path, encoding, chunk_lines
        self.start, self.nominal_stop, self.resuming = resume_line or nominal_start, nominal_stop, bool(resume_line)
        self.size = None if path == "-" else os.path.getsize(path)
        self.first_line: int | None = None
        self.end_line: int | None = None
        self.expected_scores: int | None = None
        self._raw: BinaryIO | None = None
        self._position = 0
        super().__init__(self._read())

    def position(self) -> int:
        """Bytes of the (compressed) input consumed so far."""
        try:
            self._position = self._raw.tell()
        except (AttributeError, OSError, ValueError):  # not open yet, or closed
            pass
        return self._position

    def _read(self) -> Iterator[RawChunk]:
        if self.path == "-":
            with decompressed(sys.stdin.buffer) as stream:
                yield from self._chunks(stream)
            return
        with open_raw(self.path) as raw, decompressed(raw) as stream:
            self._raw = raw
            yield from self._chunks(stream)

    def _chunks(self, stream: BinaryIO) -> Iterator[RawChunk]:
        lines = _NumberedLines(stream, self.path)
        first = lines.take(1)
        if not first:
            self.first_line = self.end_line = 1
            return
        self.expected_scores = len(self._parse(first[0], 1).scores)
        if self.start > 2:
            lines.skip(self.start - 3)  # lines 2 .. start-2: the line before the start places the boundary
            previous = lines.take(1)
        else:
            previous = first if self.start == 2 else []
        previous_source = self._parse(previous[0], self.start - 1).source if previous else None
        pending = first if self.start == 1 else []  # line 1 read already belongs to the range
        if not self.resuming:
            pending, previous_source = self._find_start(lines, pending, previous_source)
            if pending is None:
                return
        else:
            self.first_line = None
        line_no = self.start if self.first_line is None else self.first_line
        yield from self._body(lines, pending, line_no, previous_source)

    def _find_start(self, lines: "_NumberedLines", pending: list[bytes], previous_source: str | None):
        """Read on from the nominal start to the first boundary: the lines from it (a list), the last source
        read; None when the shard is empty (a boundary at or after the nominal stop came first)."""
        line_no = self.start
        while True:
            raw = pending.pop() if pending else next(iter(lines.take(1)), None)
            if raw is None:
                self.first_line = self.end_line = line_no  # the end of the table is the last boundary
                return None, previous_source
            source = self._parse(raw, line_no).source
            boundary = previous_source is None or source != previous_source
            if boundary and self.nominal_stop is not None and line_no >= self.nominal_stop:
                self.first_line = self.end_line = line_no
                return None, source
            if boundary:
                self.first_line = line_no
                return [raw], source
            previous_source, line_no = source, line_no + 1

    def _body(self, lines: "_NumberedLines", pending: list[bytes], line_no: int, previous_source: str | None):
        """The chunks from ``line_no`` (its line in ``pending`` when read already) to the end of the range."""
        stop = self.nominal_stop
        chunk, chunk_start = list(pending), line_no
        line_no += len(chunk)
        while True:
            if len(chunk) == self.chunk_lines:
                yield RawChunk(chunk_start, len(chunk), b"".join(chunk))
                chunk, chunk_start = [], line_no
            free = self.chunk_lines - len(chunk)
            bulk = free if stop is None else min(free, max(stop - 1 - line_no, 0))
            if bulk:  # lines before the one preceding the nominal stop decide nothing: read in bulk
                got = lines.take(bulk)
                chunk += got
                line_no += len(got)
                if len(got) < bulk:
                    break
            else:  # near the stop: one line at a time, each source compared with the one before
                got = lines.take(1)
                if not got:
                    break
                source = self._parse(got[0], line_no).source
                if line_no >= stop and source != previous_source:
                    break
                previous_source = source
                chunk.append(got[0])
                line_no += 1
        if chunk:
            yield RawChunk(chunk_start, len(chunk), b"".join(chunk))
        self.end_line = line_no

    def _parse(self, raw: bytes, line_no: int) -> PhraseEntry:
        return parse_line(_decoded(raw, self.path, line_no, self.encoding), self.path, line_no, self.expected_scores)


class _NumberedLines:
    """A binary stream's lines taken in bulk; a damaged compressed stream raises PhraseTableError at its line."""

    def __init__(self, stream: BinaryIO, path: str):
        self.stream, self.path, self.read = stream, path, 0

    def take(self, count: int) -> list[bytes]:
        """Up to ``count`` next lines (fewer at the end of the file)."""
        lines: list[bytes] = []
        try:
            lines.extend(itertools.islice(self.stream, count))  # keeps what it read when the stream fails
        except (EOFError, OSError) as problem:  # truncated gzip, bad CRC
            raise PhraseTableError(self.path, self.read + len(lines) + 1,
                                   f"cannot read compressed data: {problem}") from None
        self.read += len(lines)
        return lines

    def skip(self, count: int) -> None:
        """Read past ``count`` lines without keeping them."""
        while count > 0 and (skipped := len(self.take(min(count, 65536)))):
            count -= skipped
