"""Stream a phrase table through feature columns and write the extended table.

Reading (with gzip on its own thread), computing and writing run side by side: a reader thread
cuts the table into chunks, the calling thread computes the feature columns of a chunk, and a
writer thread formats and compresses the previous one. Lines come out in input order, one for
one; the output appears only when the whole table (or shard, see :mod:`mosesrnn.pipeline.shards`) has been
written, and a killed run can be resumed from its last checkpoint (see :mod:`mosesrnn.pipeline.checkpoint`).
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

from .. import __version__
from ..features.registry import Feature, describe
from ..formats.phrase_table import PhraseEntry, PhraseTableError, atomic_output, format_line, table_value
from .checkpoint import ResumableOutput, StreamOutput
from .shards import ShardSpec, TableSlice, count_lines

__all__ = ["ScoreSummary", "score_table", "signature", "chunked", "prefetch"]

log = logging.getLogger(__name__)
_DONE = object()


@dataclass(frozen=True)
class ScoreSummary:
    """What a scoring run did: its lines, the table's line range [first_line, end_line), the time."""

    lines: int
    seconds: float
    signature: str
    first_line: int = 1
    end_line: int = 1

    @property
    def lines_per_second(self) -> float:
        """Throughput of the whole run, reading and writing included."""
        return self.lines / self.seconds if self.seconds else 0.0


def signature(features: Sequence[Feature], encoding: str) -> str:
    """A sacrebleu-style signature that pins down how a table was scored: every feature with
    every setting that changes its values (see :func:`mosesrnn.features.registry.describe`)."""
    columns = ",".join(describe(feature) for feature in features)
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
    """Formats and writes chunks on a background thread, in the order they are handed in.

    Column j's values are written as phrase-table values ``e^v`` with ``digits[j]`` significant
    digits (None: exactly). A chunk handed in with a ``checkpoint`` state is followed by
    ``output.checkpoint(state)``.
    """

    def __init__(self, output: ResumableOutput | StreamOutput, digits: Sequence[int | None], depth: int = 4):
        self._output, self._digits, self._queue = output, tuple(digits), queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="mosesrnn-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not _DONE:
            if self._error is not None:
                continue  # drain after a failure so that put() never blocks
            entries, columns, checkpoint = item
            try:
                texts = [[table_value(value, digits) for value in column]
                         for column, digits in zip(columns, self._digits)]
                text = "".join(format_line(entry, values) for entry, values in zip(entries, zip(*texts)))
                self._output.write(text.encode("utf-8"))
                if checkpoint is not None:
                    self._output.checkpoint(checkpoint)
            except BaseException as error:
                self._error = error

    def put(self, entries: list[PhraseEntry], columns: list[list[float]],
            checkpoint: dict | None = None) -> None:
        """Queue one chunk, its columns (one list of values per feature) and maybe a checkpoint."""
        self._check()
        self._queue.put((entries, columns, checkpoint))

    def close(self) -> None:
        """Wait until everything queued is written."""
        self._queue.put(_DONE)
        self._thread.join()
        self._check()

    def _check(self) -> None:
        if self._error is not None:
            raise self._error


def score_table(input_path: str, output_path: str, features: Sequence[Feature], *,
                encoding: str = "utf-8", chunk_lines: int = 20000, shard: ShardSpec = ShardSpec(),
                resume: bool = False, checkpoint_every: int = 25,
                progress: Callable[[int, int, int | None], None] | None = None) -> ScoreSummary:
    """Append the ``features`` columns, in order, to every line of a phrase table (or one shard).

    The output is written as ``OUTPUT.part`` with a checkpoint every ``checkpoint_every`` chunks
    (see :mod:`mosesrnn.pipeline.checkpoint`) and renamed when complete; ``resume`` continues a killed run
    of the same command (same input, shard, chunking and signature, which holds every setting
    that changes a value, down to batch size and device). ``progress(lines, bytes_read, bytes_total)`` is
    called after each chunk. A JSON sidecar ``OUTPUT.json`` records the signature and the line
    range (not for stdout). Raises :class:`~mosesrnn.formats.phrase_table.PhraseTableError` on bad input
    (leaving no output behind) and :class:`~mosesrnn.pipeline.checkpoint.ResumeError` for a resume that
    does not match.
    """
    if not features:
        raise ValueError("no feature to compute")
    if input_path != "-" and not os.path.isfile(input_path):
        raise FileNotFoundError(f"{input_path}: no such file")
    if "-" in (input_path, output_path) and (resume or shard.count > 1):
        raise ValueError("--resume and --shard need a file, not stdin/stdout")
    sign = signature(features, encoding)
    log.info("signature: %s", sign)
    total = count_lines(input_path) if shard.count > 1 else None
    nominal = shard.nominal_range(total) if total is not None else (1, None)
    key = _run_key(input_path, sign, shard, chunk_lines, checkpoint_every)
    output = (StreamOutput(sys.stdout.buffer) if output_path == "-"
              else ResumableOutput(output_path, key, resume))
    state = output.state or {}
    if state:
        log.info("resuming at line %d (%d lines done)", state["next_line"], state["lines"])
    table = TableSlice(input_path, encoding, *nominal, resume_line=state.get("next_line"))
    started = time.perf_counter()
    try:
        lines = _score_chunks(table, output, features, chunk_lines, checkpoint_every, state, progress)
    except BaseException as error:
        output.abandon(keep=not isinstance(error, PhraseTableError))
        raise
    size = output.finish()
    summary = ScoreSummary(lines, time.perf_counter() - started, sign,
                           state.get("first_line") or table.first_line, table.end_line)
    if output_path != "-":
        _write_sidecar(output_path, key, features, summary, shard, total, size)
    return summary


def _run_key(input_path: str, sign: str, shard: ShardSpec, chunk_lines: int, checkpoint_every: int) -> dict:
    """Everything a resumed run must share with the run it continues."""
    stat = os.stat(input_path) if input_path != "-" else None
    return {"signature": sign, "input": os.path.abspath(input_path) if stat else "-",
            "input_bytes": stat.st_size if stat else None,
            "input_mtime_ns": stat.st_mtime_ns if stat else None,
            "shard": str(shard), "chunk_lines": chunk_lines, "checkpoint_every": checkpoint_every}


def _score_chunks(table: TableSlice, output, features: Sequence[Feature], chunk_lines: int,
                  checkpoint_every: int, state: dict, progress) -> int:
    """Compute and write the chunks of ``table``; returns the lines done (resumed ones included)."""
    lines = state.get("lines", 0)
    writer = _Writer(output, [feature.spec.table_digits for feature in features])
    try:
        for number, chunk in enumerate(prefetch(chunked(table, chunk_lines)), start=1):
            lines += len(chunk)
            checkpoint = None
            if number % checkpoint_every == 0:
                checkpoint = {"next_line": chunk[-1].line_no + 1, "lines": lines,
                              "first_line": state.get("first_line") or table.first_line}
            writer.put(chunk, [feature.values(chunk) for feature in features], checkpoint)
            if progress:
                progress(lines, table.reader.position(), table.reader.size)
    finally:
        writer.close()
    return lines


def _write_sidecar(output_path: str, key: dict, features: Sequence[Feature], summary: ScoreSummary,
                   shard: ShardSpec, total_lines: int | None, size: int) -> None:
    """Write ``OUTPUT.json``: how the table was scored and which of its lines this file holds."""
    record = {
        "signature": summary.signature,
        "mosesrnn_version": __version__,
        "input": key["input"],
        "input_bytes": key["input_bytes"],
        "shard": str(shard),
        "first_line": summary.first_line,
        "end_line": summary.end_line,
        "lines": summary.lines,
        "total_lines": total_lines if total_lines is not None else summary.end_line - 1,
        "bytes": size,
        "appended_columns": [feature.spec.name for feature in features],
        "features": [describe(feature) for feature in features],
    }
    with atomic_output(output_path + ".json") as out:
        out.write((json.dumps(record, indent=2) + "\n").encode("utf-8"))
