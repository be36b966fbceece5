"""Worker processes around the process that owns the models: text in, text out, the network in the middle.

Scoring a chunk of a phrase table is parse -> encode (text to ids) -> compute (the network) -> format. Only
``compute`` needs the models; the rest is Python text work that one process cannot do fast enough to keep a
GPU busy. :class:`ChunkText` is that text work for one table and one list of features; :class:`WorkerPool`
runs it in ``count`` processes (spawned: no thread, CUDA context or open file of the parent is copied). Chunk
``n`` goes to worker ``n % count``, which parses and encodes it, keeps its entries, and formats them when the
columns come back, so that only ids and values cross between processes.

The processes are :class:`~mosesrnn.runtime.processes.Child` processes: they ignore Ctrl-C and SIGTERM (the
parent stops the run and checkpoints), die with the parent, and one that dies is reported by
:meth:`WorkerPool.encoded` and :meth:`WorkerPool.formatted` at once (:class:`WorkerDied`), never as a wait
without end; leaving the pool after an error kills them without waiting on any pipe.
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..formats.phrase_table import PhraseEntry, PhraseTableError, format_line, table_value
from ..runtime.processes import Child, ChildDied, receive, spawned_children
from .table_chunks import RawChunk, parse_chunk

__all__ = ["ChunkText", "WorkerPool", "WorkerError", "WorkerDied", "default_workers", "worker_count"]

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
class ChunkText:
    """The text work of scoring one table: parse a chunk and run the features' encoders on it; format
    its entries with the columns appended (``digits[j]`` significant digits for column j, None: exactly)."""

    path: str
    encoding: str
    expected_scores: int
    encoders: tuple[Callable[[Sequence[PhraseEntry]], Any], ...]
    digits: tuple[int | None, ...]

    def encode(self, chunk: RawChunk) -> tuple[list[PhraseEntry], list[Any]]:
        """The chunk's entries and what each feature's encoder makes of them."""
        entries = parse_chunk(chunk, self.path, self.encoding, self.expected_scores)
        return entries, [encoder(entries) for encoder in self.encoders]

    def format(self, entries: Sequence[PhraseEntry], columns: Sequence[Sequence[float]]) -> bytes:
        """The table's lines with the columns appended as ``e^v``, encoded as UTF-8."""
        texts = [[table_value(value, digits) for value in column] for column, digits in zip(columns, self.digits)]
        return "".join(format_line(entry, values) for entry, values in zip(entries, zip(*texts))).encode("utf-8")


def _serve(messages, reply, text: ChunkText) -> None:
    """A worker's loop: ("encode", n, RawChunk) -> ("encoded", n, (lines, payloads)); ("format", n, columns) ->
    ("formatted", n, bytes). A bad line is sent as ("bad", n, (path, line, problem)), any other failure as
    ("failed", n, traceback)."""
    entries_of: dict[int, list[PhraseEntry]] = {}
    for kind, number, payload in messages:
        try:
            if kind == "encode":
                entries, encoded = text.encode(payload)
                entries_of[number] = entries
                reply(("encoded", number, (len(entries), encoded)))
            else:
                reply(("formatted", number, text.format(entries_of.pop(number), payload)))
        except PhraseTableError as error:
            reply(("bad", number, (error.path, error.line_no, error.problem)))
        except BrokenPipeError:
            raise
        except Exception:  # anything else is a bug: its traceback goes to the parent
            reply(("failed", number, traceback.format_exc()))


class WorkerPool:
    """``count`` processes doing ``text``'s work on numbered chunks; results are asked for by chunk number.

    Use it in a ``with`` block: leaving it stops the workers, in order after success and at once (killed) after
    an error or an interruption, without waiting on any pipe.
    """

    def __init__(self, count: int, text: ChunkText, stall_seconds: float = STALL_SECONDS):
        self._workers = [Child(f"worker {i + 1} of {count}", _serve, (text,)) for i in range(count)]
        self._running = contextlib.ExitStack()
        self._running.enter_context(spawned_children(self._workers))
        self._ready: dict[tuple[str, int], Any] = {}
        self._failed: dict[int, BaseException] = {}  # raised when that chunk is asked for, so the first comes first
        self._stall = stall_seconds

    def __len__(self) -> int:
        return len(self._workers)

    def encode(self, number: int, chunk: RawChunk) -> None:
        """Hand chunk ``number`` to its worker to parse and encode (never waits)."""
        self._worker(number).send(("encode", number, chunk))

    def format(self, number: int, columns: list) -> None:
        """Hand chunk ``number``'s columns to the worker that holds its entries, to format (never waits)."""
        self._worker(number).send(("format", number, columns))

    def encoded(self, number: int) -> tuple[int, list]:
        """Chunk ``number``'s line count and encoders' payloads, waiting for them."""
        return self._wait("encoded", number)

    def formatted(self, number: int, block: bool = True) -> bytes | None:
        """Chunk ``number``'s formatted lines; without ``block``, None unless they are ready."""
        return self._wait("formatted", number, block)

    def _worker(self, number: int) -> Child:
        return self._workers[number % len(self._workers)]

    def _wait(self, kind: str, number: int, block: bool = True):
        since = time.monotonic()
        while (kind, number) not in self._ready:
            if number in self._failed:
                raise self._failed.pop(number)
            try:
                got = receive(self._workers, 1.0 if block else 0)
            except ChildDied as death:
                raise WorkerDied(death.name, death.exitcode) from None
            if got is None:
                if not block:
                    return None
                if time.monotonic() - since > self._stall:
                    raise WorkerError(f"{self._worker(number).name} sent nothing in {self._stall:.0f} s while "
                                      f"chunk {number + 1} waited on it")
                continue
            since = time.monotonic()
            what, at, payload = got[1]
            if what == "bad":
                self._failed[at] = PhraseTableError(*payload)
            elif what == "failed":
                self._failed[at] = WorkerError(f"a worker failed on chunk {at + 1}:\n{payload}")
            else:
                self._ready[what, at] = payload
        return self._ready.pop((kind, number))

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, kind, error, trace) -> None:
        self._running.__exit__(kind, error, trace)
