"""Stream a phrase table through feature columns and write the extended table.

Reading (with gzip on its own thread), computing and writing run side by side: a reader thread
cuts the table into chunks, the calling thread computes the feature columns of a chunk, and a
writer thread formats and compresses the previous one. Lines come out in input order, one for
one; the output appears only when the whole table has been written.
"""
from __future__ import annotations

import itertools
import json
import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

from . import __version__
from .features import Feature
from .phrase_table import PhraseEntry, TableReader, atomic_output, format_line

__all__ = ["ScoreSummary", "score_table", "signature", "chunked", "prefetch"]

log = logging.getLogger(__name__)
_DONE = object()


@dataclass(frozen=True)
class ScoreSummary:
    """What a scoring run did."""

    lines: int
    seconds: float
    signature: str

    @property
    def lines_per_second(self) -> float:
        """Throughput of the whole run, reading and writing included."""
        return self.lines / self.seconds if self.seconds else 0.0


def signature(features: Sequence[Feature], encoding: str) -> str:
    """A sacrebleu-style signature that pins down how a table was scored."""
    columns = ",".join(feature.describe() for feature in features)
    return f"mosesrnn:{__version__}|features:{columns}|encoding:{encoding}"


def chunked(entries: Iterable[PhraseEntry], size: int) -> Iterator[list[PhraseEntry]]:
    """Cut a stream of entries into lists of ``size`` entries (the last may be shorter)."""
    iterator = iter(entries)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def prefetch(items: Iterable, depth: int = 4) -> Iterator:
    """Produce ``items`` on a background thread, up to ``depth`` ahead; re-raise its errors here."""
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


class _Writer:
    """Formats and writes chunks on a background thread, in the order they are handed in."""

    def __init__(self, stream, depth: int = 4):
        self._stream, self._queue = stream, queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="mosesrnn-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not _DONE:
            if self._error is not None:
                continue  # drain after a failure so that put() never blocks
            entries, columns = item
            try:
                text = "".join(format_line(entry, values) for entry, values in zip(entries, zip(*columns)))
                self._stream.write(text.encode("utf-8"))
            except BaseException as error:
                self._error = error

    def put(self, entries: list[PhraseEntry], columns: list[list[str]]) -> None:
        """Queue one chunk and its columns (one list of values per feature)."""
        self._check()
        self._queue.put((entries, columns))

    def close(self) -> None:
        """Wait until everything queued is written."""
        self._queue.put(_DONE)
        self._thread.join()
        self._check()

    def _check(self) -> None:
        if self._error is not None:
            raise self._error


def score_table(input_path: str, output_path: str, features: Sequence[Feature], *,
                encoding: str = "utf-8", chunk_lines: int = 20000,
                progress: Callable[[int, int, int | None], None] | None = None) -> ScoreSummary:
    """Append the ``features`` columns, in order, to every line of a phrase table.

    ``progress(lines, bytes_read, bytes_total)`` is called after each chunk. A JSON sidecar
    ``OUTPUT.json`` records the signature (not for stdout). Raises
    :class:`~mosesrnn.phrase_table.PhraseTableError` on bad input, leaving no output behind.
    """
    if not features:
        raise ValueError("no feature to compute")
    sign = signature(features, encoding)
    log.info("signature: %s", sign)
    reader = TableReader(input_path, encoding)
    started, lines = time.perf_counter(), 0
    with atomic_output(output_path) as out:
        writer = _Writer(out)
        try:
            for chunk in prefetch(chunked(reader, chunk_lines)):
                writer.put(chunk, [feature.compute(chunk) for feature in features])
                lines += len(chunk)
                if progress:
                    progress(lines, reader.position(), reader.size)
        finally:
            writer.close()
    summary = ScoreSummary(lines, time.perf_counter() - started, sign)
    if output_path != "-":
        _write_sidecar(output_path, input_path, features, summary)
    return summary


def _write_sidecar(output_path: str, input_path: str, features: Sequence[Feature],
                   summary: ScoreSummary) -> None:
    record = {
        "signature": summary.signature,
        "mosesrnn_version": __version__,
        "input": input_path,
        "lines": summary.lines,
        "appended_columns": [feature.name for feature in features],
        "features": [feature.describe() for feature in features],
    }
    with atomic_output(output_path + ".json") as out:
        out.write((json.dumps(record, indent=2) + "\n").encode("utf-8"))
