"""Worker processes around the process that owns the models: text in, text out, the network in the middle.

Scoring a chunk of a phrase table is parse -> encode (text to ids) -> compute (the network) -> format. Only
``compute`` needs the models; the rest is Python text work that one process cannot do fast enough to keep a
GPU busy. :class:`ChunkText` is that text work for one table and one list of features; :class:`WorkerPool`
runs it in ``count`` processes (spawned: no thread, CUDA context or open file of the parent is copied). Chunk
``n`` goes to worker ``n % count``, which parses and encodes it, keeps its entries, and formats them when the
columns come back, so that only ids and values cross between processes.

A worker ignores Ctrl-C (the parent stops the run and checkpoints); one that dies or fails is reported by
:meth:`WorkerPool.encoded` and :meth:`WorkerPool.formatted` as an error, never as a wait without end.
"""
from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..formats.phrase_table import PhraseEntry, PhraseTableError, format_line, table_value
from .table_chunks import RawChunk, parse_chunk

__all__ = ["ChunkText", "WorkerPool", "WorkerError", "default_workers"]

#: Seconds between checks that every worker is alive, while the parent waits for a result.
_ALIVE_CHECK = 1.0


def default_workers(input_bytes: int | None, cores: int | None = None) -> int:
    """The ``--workers`` of a table of ``input_bytes`` (None: a stream): one process a core beside the one
    that owns the models, at most 8; none for a table under 8 MB, whose few chunks would not repay the
    workers' start (about a second each)."""
    cores = cores or len(os.sched_getaffinity(0))
    if input_bytes is not None and input_bytes < 8 << 20:
        return 0
    return max(0, min(cores - 1, 8))


class WorkerError(RuntimeError):
    """A worker process failed (not because of the table: that raises PhraseTableError) or died."""


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


def _serve(text: ChunkText, inbox, results) -> None:
    """A worker's loop: ("encode", n, RawChunk) -> ("encoded", n, (lines, payloads)); ("format", n, columns) ->
    ("formatted", n, bytes); None, or the parent's death, ends it. A bad line is sent as ("bad", n, (path, line,
    problem))."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # What the parent has not read when the worker ends, it will never ask for: leaving never waits on a full pipe.
    results.cancel_join_thread()
    parent = os.getppid()
    entries_of: dict[int, list[PhraseEntry]] = {}
    while True:
        try:
            task = inbox.get(timeout=_ALIVE_CHECK)
        except queue.Empty:
            if os.getppid() != parent:  # the parent was killed (kill -9): nobody will ask for more
                os._exit(0)
            continue
        except (EOFError, OSError):  # the parent's end of the inbox is gone
            os._exit(0)
        if task is None:
            return
        kind, number, payload = task
        try:
            if kind == "encode":
                entries, encoded = text.encode(payload)
                entries_of[number] = entries
                results.put(("encoded", number, (len(entries), encoded)))
            else:
                results.put(("formatted", number, text.format(entries_of.pop(number), payload)))
        except PhraseTableError as error:
            results.put(("bad", number, (error.path, error.line_no, error.problem)))
        except BaseException:  # anything else is a bug: its traceback goes to the parent
            results.put(("failed", number, traceback.format_exc()))


class WorkerPool:
    """``count`` processes doing ``text``'s work on numbered chunks; results are asked for by chunk number.

    Use it in a ``with`` block: leaving it stops the workers (at once when the block raised).
    """

    def __init__(self, count: int, text: ChunkText):
        context = multiprocessing.get_context("spawn")
        self._results = context.Queue()
        self._inboxes = [context.Queue() for _ in range(count)]  # a put never waits for a busy worker
        self._ready: dict[tuple[str, int], Any] = {}
        self._failed: dict[int, BaseException] = {}  # raised when that chunk is asked for, so the first comes first
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the children start ignoring Ctrl-C
        try:
            self._processes = [context.Process(target=_serve, args=(text, inbox, self._results), daemon=True,
                                               name=f"mosesrnn-worker-{i}") for i, inbox in enumerate(self._inboxes)]
            for process in self._processes:
                process.start()
        finally:
            signal.signal(signal.SIGINT, previous)

    def __len__(self) -> int:
        return len(self._processes)

    def encode(self, number: int, chunk: RawChunk) -> None:
        """Hand chunk ``number`` to its worker to parse and encode."""
        self._inbox(number).put(("encode", number, chunk))

    def format(self, number: int, columns: list) -> None:
        """Hand chunk ``number``'s columns to the worker that holds its entries, to format."""
        self._inbox(number).put(("format", number, columns))

    def encoded(self, number: int) -> tuple[int, list]:
        """Chunk ``number``'s line count and encoders' payloads, waiting for them."""
        return self._wait("encoded", number)

    def formatted(self, number: int, block: bool = True) -> bytes | None:
        """Chunk ``number``'s formatted lines; without ``block``, None unless they are ready."""
        return self._wait("formatted", number, block)

    def _inbox(self, number: int):
        return self._inboxes[number % len(self._inboxes)]

    def _wait(self, kind: str, number: int, block: bool = True):
        while (kind, number) not in self._ready:
            if number in self._failed:
                raise self._failed.pop(number)
            try:
                got, at, payload = self._results.get(block, _ALIVE_CHECK)
            except queue.Empty:
                if not block:
                    return None
                self._check_alive()
                continue
            if got == "bad":
                self._failed[at] = PhraseTableError(*payload)
            elif got == "failed":
                self._failed[at] = WorkerError(f"a worker failed on chunk {at}:\n{payload}")
            else:
                self._ready[got, at] = payload
        return self._ready.pop((kind, number))

    def _check_alive(self) -> None:
        dead = [process for process in self._processes if not process.is_alive()]
        if dead:
            raise WorkerError(f"worker process {dead[0].name} died (exit status {dead[0].exitcode}): out of memory?")

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, kind, error, trace) -> None:
        for inbox, process in zip(self._inboxes, self._processes):
            if error is None and process.is_alive():
                inbox.put(None)
        for process in self._processes:
            process.join(timeout=5 if error is None else 0)
            if process.is_alive():
                process.terminate()
                process.join()
        for channel in (*self._inboxes, self._results):
            channel.close()
            channel.join_thread()
