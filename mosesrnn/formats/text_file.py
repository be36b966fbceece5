"""Plain text files, one item a line: source sentences, references, corpora, weights.

Read through :func:`~mosesrnn.io.compressed.open_input` (gzip recognised by its bytes, ``-``
for stdin); undecodable text and truncated compressed data raise
:class:`~mosesrnn.formats.errors.FileLineError` naming the file and the line.
"""
from __future__ import annotations

import contextlib
import itertools
from typing import Iterator, Sequence

from ..io.compressed import open_input
from ..io.readers import reader
from .errors import FileLineError, decoded_lines

__all__ = ["text_lines", "read_lines", "parallel_lines"]


@reader
def text_lines(path: str, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """``(line number, text without its line end)`` of every line of a text file, as a
    :class:`~mosesrnn.io.readers.Reader`: ``with text_lines(path) as lines:``."""
    with open_input(path) as stream:
        for line_no, text in decoded_lines(stream, path, encoding, FileLineError):
            yield line_no, text.rstrip("\r\n")


def read_lines(path: str, encoding: str = "utf-8") -> list[str]:
    """The lines of a text file (.gz allowed, ``-`` for stdin), without their line ends."""
    with text_lines(path, encoding) as lines:
        return [text for _, text in lines]


@reader
def parallel_lines(paths: Sequence[str], encoding: str = "utf-8", limit: int | None = None
                   ) -> Iterator[tuple[int, tuple[str, ...]]]:
    """``(line number, the texts of that line in each file)`` of files that go line for line (a corpus and its
    translation, its alignment); only the first ``limit`` lines when given. A
    :class:`~mosesrnn.io.readers.Reader`: ``with parallel_lines(paths) as rows:``.

    Raises FileLineError naming each file that ends before the others, at the line it lacks."""
    with contextlib.ExitStack() as stack:
        streams = [stack.enter_context(text_lines(path, encoding)) for path in paths]
        rows = itertools.zip_longest(*streams)
        for line_no, row in enumerate(itertools.islice(rows, limit), start=1):
            if None in row:
                raise _ended(paths, row, line_no)
            yield line_no, tuple(text for _, text in row)


def _ended(paths: Sequence[str], row: tuple, line_no: int) -> FileLineError:
    """The error for the files that end before line ``line_no`` while the others (``row``'s items) go on."""
    ended = [path for path, item in zip(paths, row) if item is None]
    going = [path for path, item in zip(paths, row) if item is not None]
    return FileLineError(" and ".join(ended), line_no, f"{'ends' if len(ended) == 1 else 'end'} here, but "
                                                       f"{' and '.join(going)} {'goes' if len(going) == 1 else 'go'} "
                                                       f"on: the files must be line for line")
