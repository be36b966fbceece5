"""The one place that opens possibly compressed files.

Reading recognises gzip by its magic bytes (not by the name), so ``table.gz``, a gzipped table
named otherwise and a plain one all read the same way; decompression runs on its own thread
(:mod:`mosesrnn.io.gzip_stream`: python-isal, or zlib where isal is missing), so it overlaps with the
caller's work. Writing compresses when the name ends in ``.gz``, at level 1 (phrase tables are large
and written once).
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import BinaryIO, Iterator

from ..errors import MosesRNNError
from .atomic import atomic_file
from .declared import check_read
from .gzip_stream import GzipReader, GzipWriter, inflated_size

__all__ = ["GZIP_MAGIC", "is_gzip_name", "decompressed", "open_input", "read_bytes", "open_raw", "read_head",
           "compressed", "atomic_output", "atomic_text_output", "count_lines", "estimated_text_size"]

GZIP_MAGIC = b"\x1f\x8b"


def is_gzip_name(path: str) -> bool:
    """Whether an output named ``path`` is written gzipped."""
    return path.endswith(".gz")


@contextlib.contextmanager
def decompressed(raw: BinaryIO) -> Iterator[BinaryIO]:
    """``raw`` itself, or a decompressing stream over it if it starts with the gzip magic bytes.

    A stream that cannot ``peek`` (a pipe wrapped by a test harness) is buffered first.
    """
    if not hasattr(raw, "peek"):
        raw = io.BufferedReader(raw)
    if raw.peek(2)[:2] == GZIP_MAGIC:
        with io.BufferedReader(GzipReader(raw), 1 << 17) as stream:
            yield stream
    else:
        yield raw


@contextlib.contextmanager
def open_input(path: str) -> Iterator[BinaryIO]:
    """Open a file (``-``: stdin) for binary reading, decompressing gzip transparently."""
    if path == "-":
        with decompressed(sys.stdin.buffer) as stream:
            yield stream
        return
    with open_raw(path) as raw, decompressed(raw) as stream:
        yield stream


def read_bytes(path: str) -> bytes:
    """The whole (decompressed) content of a small declared input (a moses.ini, a sidecar); truncated or
    damaged compressed data raises MosesRNNError naming the file."""
    with open_input(path) as stream:
        try:
            return stream.read()
        except (EOFError, OSError) as problem:
            if isinstance(problem, OSError) and problem.filename:
                raise
            raise MosesRNNError(f"{path}: cannot read compressed data: {problem}") from None


def open_raw(path: str) -> BinaryIO:
    """Open a declared input for reading its bytes as they are (gzip members copied whole)."""
    check_read(path)
    return open(path, "rb")


def read_head(path: str, size: int) -> bytes:
    """The first ``size`` bytes of a declared input, as they are (to tell what kind of file it is)."""
    with open_raw(path) as stream:
        return stream.read(size)


@contextlib.contextmanager
def compressed(raw: BinaryIO, path: str) -> Iterator[BinaryIO]:
    """A stream over ``raw`` that gzips what is written if ``path`` ends in ``.gz``, else ``raw``."""
    if is_gzip_name(path):
        with io.BufferedWriter(GzipWriter(raw, level=1), 1 << 17) as stream:
            yield stream
    else:
        yield raw


def count_lines(path: str, block_size: int = 1 << 22) -> int:
    """Number of lines of a (gzipped) text file; a last line without newline counts."""
    with open_input(path) as stream:
        lines, last = 0, b"\n"
        while block := stream.read(block_size):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


def estimated_text_size(path: str, sample: int = 1 << 20) -> int:
    """The bytes of text in a declared input: its size, or for gzip its size times the ratio of its first
    ``sample`` compressed bytes (exact for a file that small)."""
    with open_raw(path) as raw:
        head = raw.read(sample)
        size = os.fstat(raw.fileno()).st_size
    if head[:2] != GZIP_MAGIC:
        return size
    inflated, consumed = inflated_size(head)
    return round(size * inflated / consumed) if consumed else size


@contextlib.contextmanager
def atomic_output(path: str) -> Iterator[BinaryIO]:
    """Open ``path`` for binary writing so that it appears only when the block succeeds.

    Data goes to a temporary file in the same directory, which is renamed over ``path`` at the
    end and removed on error; ``*.gz`` is compressed; ``-`` writes to stdout.
    """
    with atomic_file(path) as raw, compressed(raw, path) as stream:
        yield stream


@contextlib.contextmanager
def atomic_text_output(path: str | None) -> Iterator[io.TextIOWrapper]:
    """A UTF-8 text stream to ``path`` (written atomically; ``*.gz`` compressed), or stdout for None or ``-``."""
    if path in (None, "-"):
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_output(path) as raw:
        stream = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
        yield stream
        stream.flush()
        stream.detach()  # the raw stream is closed (and renamed into place) by atomic_output
