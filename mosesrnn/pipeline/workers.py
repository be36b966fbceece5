"""Worker processes around the process that owns the models: numbers cross to it, never text.

Scoring a chunk of a phrase table is read -> parse -> encode (text to ids) -> compute (the network) -> format
-> compress. Only ``compute`` needs the models; the rest is Python text work that one process cannot do fast
enough to keep a GPU busy. :class:`ChunkJob` is that text work for one table and one list of features;
:class:`WorkerPool` runs it in ``count`` processes. Chunk ``n`` goes to worker ``n % count``, which reads it
from the table itself (:class:`TableSpec`: every worker decompresses the table and cuts it into the same
chunks, keeping its own; the reading costs about a tenth of a worker's time) or, from stdin, is handed its
bytes; it parses and encodes the chunk, keeps its entries, and when the columns come back formats them and
compresses the chunk into the output's form (a whole gzip member for ``*.gz``). What crosses to the models'
process is the encoders' numeric arrays; what comes back from it, the columns as float64 arrays; its output is
the workers' compressed bytes, written as they are.

The processes are :class:`~mosesrnn.runtime.processes.Child` processes: fresh interpreters that never run the
caller's ``__main__``, ignore Ctrl-C and SIGTERM (the parent stops the run and checkpoints), die with the
parent, and one that dies is reported by :meth:`WorkerPool.encoded` and :meth:`WorkerPool.formatted` at once
(:class:`WorkerDied`), never as a wait without end; leaving the pool after an error kills them without waiting
on any pipe.
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import MosesRNNError
from ..formats.phrase_table import PhraseEntry, PhraseTableError, format_line, table_value
from ..io.gzip_stream import gzip_member
from ..runtime.processes import Child, ChildDied, receive, spawned_children
from .table_chunks import RawChunk, TableChunks, parse_chunk

__all__ = ["ChunkJob", "TableSpec", "EncodedChunk", "TableEnd", "WorkerPool", "WorkerError", "WorkerDied",
           "default_workers", "worker_count"]

log = logging.getLogger(__name__)

#: Seconds the parent waits for a chunk from a live worker that sends nothing at all before it gives up on it.
STALL_SECONDS = 600.0


def default_workers(table_bytes: int | None, cores: int | None = None) -> int:
    """The ``--workers`` of a table of ``table_bytes`` uncompressed (None: a stream): one process a core beside
    the one that owns the models, at most 8; none for a table under 8 MB, whose few chunks would not repay the
    workers' start (about a second each)."""
    cores = cores or len(os.sched_getaffinity(0))
    if table_bytes is not None and table_bytes < 8 << 20:
        return 0
    return max(0, min(cores - 1, 8))


def worker_count(requested: int, cores: int | None = None) -> int:
    """``requested`` workers, capped (with a warning) at the cores this process may run on: a worker is a whole
    interpreter (about 60 MB), and more of them than cores only take turns."""
    cores = cores or len(os.sched_getaffinity(0))
    if requested > cores:
        log.warning("warning: --workers %d capped at %d, the cores this process may use", requested, cores)
        return cores
    return requested


class WorkerError(RuntimeError):
    """A worker process failed on a chunk (a bug: the message holds its traceback), or stopped answering."""


class WorkerDied(ChildDied):
    """A worker process died (killed, out of memory): an error of the run, in one line, with what the run kept."""


@dataclass(frozen=True)
class TableSpec:
    """Where the workers read the chunks of a table: :class:`~mosesrnn.pipeline.table_chunks.TableChunks`'s
    arguments (one shard's range, maybe resumed), so that each cuts the same chunks."""

    path: str
    encoding: str
    chunk_lines: int
    nominal_start: int = 1
    nominal_stop: int | None = None
    resume_line: int | None = None

    def open(self) -> TableChunks:
        """The table's chunks, to be read in a ``with`` block."""
        return TableChunks(self.path, self.encoding, self.chunk_lines, self.nominal_start, self.nominal_stop,
                           self.resume_line)


@dataclass(frozen=True)
class ChunkJob:
    """The text work of scoring one table: parse a chunk and run the features' encoders on it; format its entries
    with the columns appended (``digits[j]`` significant digits for column j, None: exactly), as one gzip member
    when ``gzip``."""

    path: str
    encoding: str
    encoders: tuple[Callable[[Sequence[PhraseEntry]], Any], ...]
    digits: tuple[int | None, ...]
    gzip: bool = False

    def encode(self, chunk: RawChunk, expected_scores: int) -> tuple[list[PhraseEntry], list[Any]]:
        """The chunk's entries (every line with ``expected_scores`` scores) and what each encoder makes of them."""
        entries = parse_chunk(chunk, self.path, self.encoding, expected_scores)
        return entries, [encoder(entries) for encoder in self.encoders]

    def format(self, entries: Sequence[PhraseEntry], columns: Sequence[Sequence[float]]) -> bytes:
        """The table's lines with the columns appended as ``e^v``, in UTF-8, as they go into the output file."""
        texts = [[table_value(value, digits) for value in np.asarray(column, dtype=np.float64).tolist()]
                 for column, digits in zip(columns, self.digits)]
        data = "".join(format_line(entry, values) for entry, values in zip(entries, zip(*texts))).encode("utf-8")
        return gzip_member(data) if self.gzip else data


@dataclass(frozen=True)
class EncodedChunk:
    """A chunk as a worker hands it to the models' process: where it lies in the table, the encoders' payloads.

    Attributes:
        first_line, lines: the chunk's first line number and its line count.
        payloads: each encoder's result (numeric arrays).
        position: compressed bytes of the table read when the chunk was cut (for progress bars).
        table_first_line: the first line of the range being scored (None when resuming).
        expected_scores: line 1's score count, which every line must have.
        data: the chunk's raw bytes, for the first chunk of a table a worker read itself (the first chunk's
            warnings parse it); else None.
    """

    first_line: int
    lines: int
    payloads: list
    position: int = 0
    table_first_line: int | None = None
    expected_scores: int | None = None
    data: bytes | None = None

    @property
    def last_line(self) -> int:
        """The number of the chunk's last line."""
        return self.first_line + self.lines - 1

    def raw(self) -> RawChunk | None:
        """The chunk's text, where it came along."""
        return None if self.data is None else RawChunk(self.first_line, self.lines, self.data)


@dataclass(frozen=True)
class TableEnd:
    """What a worker that read the table to its end knows of the range: [first_line, end_line) (first_line None
    when resuming), line 1's score count (None for an empty table), the compressed bytes read."""

    first_line: int | None
    end_line: int
    expected_scores: int | None
    position: int


class _OwnChunks:
    """The chunks of a table a worker reads itself, handed out by number; the others' are read past."""

    def __init__(self, spec: TableSpec):
        self._spec = spec
        self._table: TableChunks | None = None
        self._chunks: Iterator[RawChunk] | None = None
        self._next = 0
        self._failure: PhraseTableError | OSError | None = None

    def get(self, number: int) -> RawChunk | TableEnd:
        """Chunk ``number`` (asked for in increasing order), or the range's end when the table has fewer."""
        if self._failure is not None:
            raise self._failure
        try:
            if self._table is None:  # opened here, so that a table gone meanwhile is an error of its chunk
                self._table = self._spec.open()
                self._chunks = iter(self._table)
            while self._next <= number:
                chunk = next(self._chunks)
                self._next += 1
        except StopIteration:
            return TableEnd(self._table.first_line, self._table.end_line, self._table.expected_scores,
                            self._table.position())
        except (PhraseTableError, OSError) as failure:
            self._failure = failure
            raise
        return chunk

    @property
    def table(self) -> TableChunks:
        """The reader, for its range and position."""
        return self._table

    def close(self) -> None:
        """Close the table."""
        if self._table is not None:
            self._table.close()


def _serve(messages, reply, job: ChunkJob, spec: TableSpec | None) -> None:
    """A worker's loop.

    ("encode", n, (RawChunk, scores) or None) -> ("encoded", n, EncodedChunk), or ("end", n, TableEnd) when
    the worker reads the table itself (None) and it has fewer chunks; ("format", n, columns) -> ("formatted",
    n, (bytes, CPU seconds of the worker so far)). The first reply carries the CPU seconds its start took as
    ("ready", -1, seconds). A bad line is sent as ("bad", n, (path, line, problem)), another mistake of the user's
    (:class:`~mosesrnn.errors.MosesRNNError`, a NaN to write) as ("mistake", n, message), a failed read as
    ("oserror", n, (errno, strerror, filename, text)), any other failure (a bug) as ("failed", n, traceback).
    """
    reply(("ready", -1, time.process_time()))
    own = _OwnChunks(spec) if spec is not None else None
    entries_of: dict[int, list[PhraseEntry]] = {}
    try:
        for kind, number, payload in messages:
            try:
                if kind == "encode":
                    reply(_encoded(job, own, number, payload, entries_of))
                else:
                    data = job.format(entries_of.pop(number), payload)
                    reply(("formatted", number, (data, time.process_time())))
            except PhraseTableError as error:
                reply(("bad", number, (error.path, error.line_no, error.problem)))
            except MosesRNNError as error:  # a user's mistake found here: one line, as in one process
                reply(("mistake", number, str(error)))
            except BrokenPipeError:
                raise
            except OSError as error:
                reply(("oserror", number, (error.errno, error.strerror, error.filename, str(error))))
            except Exception:  # anything else is a bug: its traceback goes to the parent
                reply(("failed", number, traceback.format_exc()))
    finally:
        if own is not None:
            own.close()


def _encoded(job: ChunkJob, own: _OwnChunks | None, number: int, given, entries_of: dict) -> tuple:
    """The reply to ("encode", ``number``, ``given``): the chunk parsed and encoded, its entries kept."""
    if own is None:
        chunk, scores = given
        table_first_line, position, data = None, 0, None
    else:
        chunk = own.get(number)
        if isinstance(chunk, TableEnd):
            return "end", number, chunk
        scores, table_first_line, position = own.table.expected_scores, own.table.first_line, own.table.position()
        data = chunk.data if number == 0 else None
    entries, payloads = job.encode(chunk, scores)
    entries_of[number] = entries
    return "encoded", number, EncodedChunk(chunk.first_line, chunk.lines, payloads, position, table_first_line,
                                           scores, data)


class WorkerPool:
    """``count`` processes doing ``job``'s work on numbered chunks, which they read from ``spec`` themselves
    (None: :meth:`encode` hands them over); results are asked for by chunk number.

    Use it in a ``with`` block: leaving it stops the workers, in order after success and at once (killed) after
    an error or an interruption, without waiting on any pipe. :attr:`started_cpu` and :attr:`cpu` hold each
    worker's CPU seconds at its start and at its last formatted chunk.
    """

    def __init__(self, count: int, job: ChunkJob, spec: TableSpec | None = None,
                 stall_seconds: float = STALL_SECONDS):
        self._workers = [Child(f"worker {i + 1} of {count}", _serve, (job, spec)) for i in range(count)]
        self._running = contextlib.ExitStack()
        self._running.enter_context(spawned_children(self._workers))
        self._ready: dict[tuple[str, int], Any] = {}
        self._failed: dict[int, BaseException] = {}  # raised when that chunk is asked for, so the first comes first
        self._stall = stall_seconds
        self.started_cpu: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._workers)

    def encode(self, number: int, chunk: RawChunk | None = None, expected_scores: int | None = None) -> None:
        """Ask chunk ``number``'s worker to parse and encode it: the chunk read here, with the table's score count,
        or None where the workers read the table (never waits)."""
        self._worker(number).send(("encode", number, None if chunk is None else (chunk, expected_scores)))

    def format(self, number: int, columns: list) -> None:
        """Hand chunk ``number``'s columns to the worker that holds its entries, to format (never waits)."""
        self._worker(number).send(("format", number, columns))

    def encoded(self, number: int) -> EncodedChunk | TableEnd:
        """Chunk ``number`` encoded, or the range's end when it has no such chunk, waiting for it."""
        self._wait(number, ("encoded", "end"))
        return self._ready.pop(("encoded", number), None) or self._ready.pop(("end", number))

    def formatted(self, number: int, block: bool = True) -> bytes | None:
        """Chunk ``number``'s output bytes; without ``block``, None unless they are ready."""
        if not self._wait(number, ("formatted",), block):
            return None
        return self._ready.pop(("formatted", number))

    def _worker(self, number: int) -> Child:
        return self._workers[number % len(self._workers)]

    def _wait(self, number: int, kinds: tuple[str, ...], block: bool = True) -> bool:
        """Take the workers' messages until one of ``kinds`` for chunk ``number`` is in; False when none came and
        ``block`` is off."""
        since = time.monotonic()
        while not any((kind, number) in self._ready for kind in kinds):
            if number in self._failed:
                raise self._failed.pop(number)
            try:
                got = receive(self._workers, 1.0 if block else 0)
            except ChildDied as death:
                raise WorkerDied(death.name, death.exitcode) from None
            if got is None:
                if not block:
                    return False
                if time.monotonic() - since > self._stall:
                    raise WorkerError(f"{self._worker(number).name} sent nothing in {self._stall:.0f} s while "
                                      f"chunk {number + 1} waited on it")
                continue
            since = time.monotonic()
            self._take(got[0], *got[1])
        return True

    def _take(self, worker: Child, what: str, at: int, payload) -> None:
        if what == "ready":
            self.started_cpu[worker.name] = payload
        elif what == "bad":
            self._failed.setdefault(at, PhraseTableError(*payload))
        elif what == "mistake":
            self._failed.setdefault(at, MosesRNNError(payload))
        elif what == "oserror":
            errno, strerror, filename, text = payload
            self._failed.setdefault(at, OSError(errno, strerror, filename) if errno is not None else OSError(text))
        elif what == "failed":
            self._failed.setdefault(at, WorkerError(f"a worker failed on chunk {at + 1}:\n{payload}"))
        elif what == "formatted":
            self._ready[what, at], self.cpu[worker.name] = payload
        else:
            self._ready[what, at] = payload

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, kind, error, trace) -> None:
        self._running.__exit__(kind, error, trace)
