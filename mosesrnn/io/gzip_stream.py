"""gzip read and written on a thread of its own, with python-isal where it imports and the standard zlib elsewhere.

Decompression and compression overlap with the caller's work: :class:`GzipReader` decompresses ahead on a
``mosesrnn-gunzip`` thread, :class:`GzipWriter` compresses behind on a ``mosesrnn-gzip`` thread. Both use one
deflate library, :data:`backend`: python-isal's ``isal_zlib`` (several times faster; a dependency of the
package) or, where it does not import (a bare GPU host that carries only the project's tree), the standard
library's ``zlib``. The text read and written is the same with either; the compressed bytes may differ.

A damaged stream is reported where it is damaged: the reader hands out every byte that decompressed before the
problem, then raises — ``EOFError`` for a file cut short, ``gzip.BadGzipFile`` (an OSError) for a bad checksum
or bytes that are not gzip — so a reader of lines names the line where the file ends.
"""
from __future__ import annotations

import gzip
import io
import queue
import threading
import zlib
from typing import BinaryIO

try:
    from isal import isal_zlib as backend
except ImportError:  # the standard library's: same API, same text, slower
    backend = zlib

__all__ = ["backend", "backend_name", "GzipReader", "GzipWriter", "gzip_compressor", "gzip_member", "inflated_size"]

_GZIP_WBITS = 16 + zlib.MAX_WBITS  # a gzip header and trailer (mtime 0: members are reproducible)
_IN_BLOCK = 1 << 18  # compressed bytes read at a time
_OUT_BLOCK = 1 << 20  # the most decompressed bytes handed over at a time (a gzip bomb stays in bounded memory)
_END = object()


def backend_name() -> str:
    """``isal`` or ``zlib``: the deflate library in use."""
    return "zlib" if backend is zlib else "isal"


def gzip_compressor(level: int = 1):
    """A compressor that writes one gzip member (``compress(data)``, then ``flush()``)."""
    return backend.compressobj(level, backend.DEFLATED, _GZIP_WBITS)


def gzip_member(data: bytes, level: int = 1) -> bytes:
    """``data`` compressed as one whole gzip member (the same bytes for the same data, wherever it is made)."""
    compressor = gzip_compressor(level)
    return compressor.compress(data) + compressor.flush()


def inflated_size(data: bytes) -> tuple[int, int]:
    """``(bytes of text, compressed bytes they came from)`` of the gzip members at the start of ``data``, read as
    far as ``data`` goes (a sample of a larger file); stops at the first damage."""
    inflated = consumed = 0
    while data:
        decompressor = backend.decompressobj(_GZIP_WBITS)
        try:
            while data:  # in bounded pieces: a sample of a gzip bomb stays small
                inflated += len(decompressor.decompress(data, _OUT_BLOCK))
                consumed += len(data) - len(decompressor.unconsumed_tail)
                data = decompressor.unconsumed_tail
                if decompressor.eof:
                    consumed -= len(decompressor.unused_data)
                    data = decompressor.unused_data
                    break
        except backend.error:
            break
    return inflated, consumed


class GzipReader(io.RawIOBase):
    """The decompressed bytes of a gzip stream over ``raw`` (every member of it, as gzip and zcat read them).

    Read it through ``io.BufferedReader`` (:func:`mosesrnn.io.compressed.decompressed` does); close it where it
    is left: its thread stops. ``raw`` is not closed.
    """

    def __init__(self, raw: BinaryIO, depth: int = 4):
        super().__init__()
        self.raw = raw
        self._blocks: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._pending = memoryview(b"")
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="mosesrnn-gunzip", daemon=True)
        self._thread.start()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        """Fill ``buffer`` with the next decompressed bytes; 0 at the end of the stream."""
        while not self._pending:
            if self._failure is not None:
                raise self._failure
            item = self._blocks.get()
            if item is _END:
                self._blocks.put(_END)  # every later read sees the end too
                return 0
            if isinstance(item, BaseException):
                self._failure = item
                raise item
            self._pending = memoryview(item)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        """Stop the decompressing thread (it ends within a block) and close."""
        if not self.closed:
            self._stop.set()
            while self._thread.is_alive():
                try:  # a thread waiting to hand over a block takes the room and sees the stop
                    self._blocks.get_nowait()
                except queue.Empty:
                    self._thread.join(0.01)
        super().close()

    def _put(self, item) -> bool:
        """Hand ``item`` over, unless the reader stopped; whether to go on."""
        while not self._stop.is_set():
            try:
                self._blocks.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            self._decompress()
        except BaseException as error:  # raised in the reader's thread, after the bytes before it
            self._put(error)
        else:
            self._put(_END)

    def _decompress(self) -> None:
        decompressor, in_member = backend.decompressobj(_GZIP_WBITS), False
        while True:
            data = self.raw.read(_IN_BLOCK)
            if not data:
                if in_member:
                    raise EOFError("Compressed file ended before the end-of-stream marker was reached")
                return
            while data:
                in_member = True
                try:
                    out = decompressor.decompress(data, _OUT_BLOCK)
                except backend.error as problem:
                    raise gzip.BadGzipFile(f"damaged gzip data ({problem})") from None
                if out and not self._put(out):
                    return
                if decompressor.eof:  # a member ends; what follows is the next one
                    data, decompressor, in_member = decompressor.unused_data, backend.decompressobj(_GZIP_WBITS), False
                else:
                    data = decompressor.unconsumed_tail
            if self._stop.is_set():
                return


class GzipWriter(io.RawIOBase):
    """A gzip stream written to ``raw``, one member, compressed on a thread behind the writer at ``level``.

    Write through ``io.BufferedWriter`` (:func:`mosesrnn.io.compressed.compressed` does). A failed write (a full
    disk) is raised by the next ``write`` or by ``close``, which completes the member; ``raw`` is not closed.
    """

    def __init__(self, raw: BinaryIO, level: int = 1, depth: int = 4):
        super().__init__()
        self.raw = raw
        self._compressor = gzip_compressor(level)
        self._blocks: queue.Queue = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="mosesrnn-gzip", daemon=True)
        self._thread.start()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        """Queue ``data`` for compression; raises the compressing thread's error, if any."""
        self._check()
        self._blocks.put(bytes(data))
        return len(data)

    def close(self) -> None:
        """Compress what is queued, end the member and close; raises a failed write's error."""
        if self.closed:
            return
        try:
            self._blocks.put(_END)
            self._thread.join()
            self._check()
            self.raw.write(self._compressor.flush())
        finally:
            super().close()

    def _check(self) -> None:
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while (data := self._blocks.get()) is not _END:
            if self._error is None:  # after a failure only drain, so that write() never waits
                try:
                    self.raw.write(self._compressor.compress(data))
                except BaseException as error:
                    self._error = error
