"""Plain text files, one item a line: source sentences, references, corpora, weights.

Read through :func:`~mosesrnn.io.compressed.open_input` (gzip recognised by its bytes, ``-``
for stdin); undecodable text and truncated compressed data raise
:class:`~mosesrnn.formats.errors.FileLineError` naming the file and the line.
"""
from __future__ import annotations

from typing import Iterator

from ..io.compressed import open_input
from .errors import FileLineError, decoded_lines

__all__ = ["text_lines", "read_lines"]


def text_lines(path: str, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """``(line number, text without its line end)`` of every line of a text file."""
    with open_input(path) as stream:
        for line_no, text in decoded_lines(stream, path, encoding, FileLineError):
            yield line_no, text.rstrip("\r\n")


def read_lines(path: str, encoding: str = "utf-8") -> list[str]:
    """The lines of a text file (.gz allowed, ``-`` for stdin), without their line ends."""
    return [text for _, text in text_lines(path, encoding)]
