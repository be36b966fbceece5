"""The threads of the streaming scorer: chunks read ahead on one thread, written on another.

Reading (gzip included) and writing (formatting and compression) run beside the computation, so
the model never waits on a file.
"""
from __future__ import annotations

import itertools
import queue
import threading
from typing import Callable, Iterable, Iterator, Sequence

from ..io.resumable import ResumableOutput, StreamOutput

__all__ = ["chunked", "prefetch", "ChunkWriter"]

_DONE = object()


def chunked(entries: Iterable, size: int) -> Iterator[list]:
    """Cut a stream of entries into lists of ``size`` entries (the last may be shorter)."""
    iterator = iter(entries)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def prefetch(items: Iterable, depth: int = 4) -> Iterator:
    """Produce ``items`` on a background thread, up to ``depth`` ahead; re-raise its errors here. Close it
    (``contextlib.closing``) where it is left: its thread stops, and closes ``items`` if it can be closed."""
    buffer: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                buffer.put(item)
            buffer.put(_DONE)
        except BaseException as error:  # handed to the consumer, raised there
            buffer.put(error)
        finally:
            if hasattr(items, "close"):  # a generator left before its end: closed here, not by the garbage collector
                items.close()

    thread = threading.Thread(target=produce, name="mosesrnn-reader", daemon=True)
    thread.start()
    try:
        while (item := buffer.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a producer waiting on a full queue
            try:
                buffer.get_nowait()
            except queue.Empty:
                thread.join(0.01)


class ChunkWriter:
    """Formats and writes chunks on a background thread, in the order they are handed in.

    ``format_chunk(entries, columns)`` returns the text of a chunk (str, or bytes already in the output's form),
    ``columns`` holding one list of values per feature; a chunk handed in with its ``data`` (formatted by a worker)
    is written as it is. A chunk handed in with a ``checkpoint`` state is followed by ``output.checkpoint(state)``.
    """

    def __init__(self, output: ResumableOutput | StreamOutput,
                 format_chunk: Callable[[Sequence, Sequence[Sequence[float]]], str | bytes], depth: int = 4):
        self._output, self._format, self._queue = output, format_chunk, queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="mosesrnn-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not _DONE:
            if self._error is not None:
                continue  # drain after a failure so that put() never blocks
            entries, columns, checkpoint, data = item
            try:
                text = self._format(entries, columns) if data is None else data
                self._output.write(text if isinstance(text, bytes) else text.encode("utf-8"))
                if checkpoint is not None:
                    self._output.checkpoint(checkpoint)
            except BaseException as error:
                self._error = error

    def put(self, entries: list | None, columns: list, checkpoint: dict | None = None, *,
            data: bytes | None = None) -> None:
        """Queue one chunk, its columns (one sequence of values per feature) or its bytes already formatted
        (``data``), and maybe a checkpoint."""
        self._check()
        self._queue.put((entries, columns, checkpoint, data))

    def close(self, check: bool = True) -> None:
        """Wait until everything queued is written; raise the writing thread's error, if any (with ``check``)."""
        if self._thread.is_alive():
            self._queue.put(_DONE)
            self._thread.join()
        if check:
            self._check()

    def _check(self) -> None:
        if self._error is not None:
            raise self._error
