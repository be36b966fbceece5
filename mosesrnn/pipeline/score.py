"""Stream a phrase table through feature columns and write the extended table.

Reading (with gzip on its own thread), computing and writing run side by side (see
:mod:`mosesrnn.pipeline.streams`); with ``workers``, worker processes read, parse, encode, format and compress
the chunks around this process, which only takes their arrays, runs the models and hands the columns back
(:mod:`mosesrnn.pipeline.workers`), and the output is byte for byte the same (a gzip member a chunk). A chunk
is started before the last one is read back, so that a GPU never waits for the host between chunks. Lines come
out in input order, one for one; the output appears only when the whole table (or shard, see
:mod:`mosesrnn.pipeline.shards`) has been written. A checkpoint is taken every ``checkpoint_every`` chunks and
every ``checkpoint_seconds``, and when the run is interrupted (Ctrl-C, SIGTERM), so the same command continues a
stopped or killed run from there (see :mod:`mosesrnn.io.resumable`). What is checked and warned about before and
at the start of the pass is :mod:`mosesrnn.pipeline.preflight`.
"""
from __future__ import annotations

import collections
import contextlib
import logging
import os
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from ..features.registry import Feature, describe
from ..formats.phrase_table import MAX_TABLE_EXPONENT, PhraseTableError
from ..formats.sidecar import Sidecar, write_sidecar
from ..io.atomic import is_special_file
from ..io.compressed import count_lines
from ..io.declared import check_read
from ..io.job import Interrupted
from ..io.resumable import ResumableOutput, StreamOutput, open_output
from ..version import __version__
from .preflight import check_run, first_chunk_warnings, table_warnings
from .shards import ShardSpec
from .streams import ChunkWriter, prefetch
from .table_chunks import RawChunk, TableChunks, parse_chunk
from .workers import ChunkJob, EncodedChunk, TableEnd, TableSpec, WorkerDied, WorkerPool

__all__ = ["ScoreSummary", "ScoreInterrupted", "run_score_job", "signature"]

log = logging.getLogger(__name__)

#: The first lines of a table that :func:`~mosesrnn.pipeline.preflight.first_chunk_warnings` reads.
WARNING_LINES = 2000


@dataclass(frozen=True)
class ScoreSummary:
    """What a scoring run did.

    Attributes:
        lines: the lines written (those of a resumed run's earlier passes included).
        seconds: the pass's wall time, from the table's first read to its output's last write (start-up, the
            models' loading included, is not in it).
        signature: how the values were computed (:func:`signature`).
        first_line, last_line: the table's lines the output holds (1-based, inclusive).
        cpu_seconds: this process' CPU time in the pass, all its threads (the models' included).
        worker_cpu_seconds: each worker's CPU time from its start to its last chunk (empty without workers).
        pass_lines: the lines this pass scored (``lines`` less those of the passes it continued).
    """

    lines: int
    seconds: float
    signature: str
    first_line: int = 1
    last_line: int = 0
    cpu_seconds: float = 0.0
    worker_cpu_seconds: tuple[float, ...] = ()
    pass_lines: int = 0

    @property
    def lines_per_second(self) -> float:
        """Throughput of the whole run, reading and writing included."""
        return self.lines / self.seconds if self.seconds else 0.0

    def cpu_per_line(self) -> str:
        """The CPU time a line of this pass in this process and in each worker (of the lines it handled), e.g.
        ``"40.1 us here (the models included), 14.0 and 13.8 us in the workers"``."""
        if not self.pass_lines:
            return "no line scored"
        text = f"{1e6 * self.cpu_seconds / self.pass_lines:.2f} us here (the models included)"
        if self.worker_cpu_seconds:
            share = len(self.worker_cpu_seconds) / self.pass_lines
            text += f", {' and '.join(f'{1e6 * cpu * share:.1f}' for cpu in self.worker_cpu_seconds)} us in the workers"
        return text


def signature(features: Sequence[Feature], encoding: str) -> str:
    """A sacrebleu-style signature that pins down how a table was scored: every feature with
    every setting that changes its values (see :func:`mosesrnn.features.registry.describe`)."""
    columns = ",".join(describe(feature) for feature in features)
    return f"mosesrnn:{__version__}|features:{columns}|encoding:{encoding}"


class ScoreInterrupted(Interrupted):
    """The run was stopped (Ctrl-C, SIGTERM); after a checkpoint at ``next_line``, the same command continues it."""

    def __init__(self, output_path: str, next_line: int | None, lines: int, resumable: bool = True):
        where = (_kept(output_path, {"next_line": next_line, "lines": lines} if next_line else None) if resumable
                 else "the output is not a regular file, so there is nothing to resume")
        super().__init__(f"interrupted: {where}")
        self.next_line, self.lines = next_line, lines


def _kept(output_path: str, recorded: dict | None) -> str:
    """What a stopped run kept: the lines of its last checkpoint, and where the same command continues."""
    if recorded is None:
        return f"stopped before the first checkpoint: nothing kept, {output_path} not written"
    return (f"{recorded['lines']:,} lines done and kept in {output_path}.part; run the same command to continue "
            f"at line {recorded['next_line']}")


def run_score_job(input_path: str, output_path: str, features: Sequence[Feature], *,
                  encoding: str = "utf-8", chunk_lines: int = 20000, shard: ShardSpec = ShardSpec(),
                  resume: bool = True, checkpoint_every: int = 25, checkpoint_seconds: float = 300.0,
                  workers: int = 0, progress: Callable[[int, int, int | None], None] | None = None) -> ScoreSummary:
    """Append the ``features`` columns, in order, to every line of a phrase table (or one shard).

    The output is written as ``OUTPUT.part``, checkpointed (see the module docstring) and renamed
    when complete; ``resume`` (the default) continues a stopped run of the same command (same input,
    shard, chunking and signature, which holds every setting that changes a value), and False
    starts over. ``workers`` processes read, parse, encode, format and compress beside this one (0: all in this
    process; the output is the same, byte for byte). ``-`` is stdout; a device or FIFO is written directly.
    ``progress(lines, bytes_read, bytes_total)`` is called after each chunk. A JSON sidecar ``OUTPUT.json``
    records the signature and the line range (regular files only). Raises
    :class:`~mosesrnn.formats.phrase_table.PhraseTableError` on bad input and OSError when
    writing fails (leaving no output behind), :class:`ScoreInterrupted` when stopped, and
    :class:`~mosesrnn.io.resumable.ResumeError` for a stopped run that does not match this one.
    """
    check_run(input_path, output_path, features, shard)
    resume = resume and input_path != "-"  # stdin cannot be read again from where a run stopped
    warnings = table_warnings(input_path)
    for warning in warnings:
        log.warning("warning: %s", warning)
    sign = signature(features, encoding)
    total = count_lines(input_path) if shard.count > 1 else None
    nominal = shard.nominal_range(total) if total is not None else (1, None)
    key = _run_key(input_path, sign, shard, chunk_lines, checkpoint_every)
    output = open_output(output_path, key, resume)
    state = output.state or {}
    if state:
        log.info("resuming at line %d (%d lines done)", state["next_line"], state["lines"])
    spec = TableSpec(input_path, encoding, chunk_lines, *nominal, resume_line=state.get("next_line"))
    job = ChunkJob(input_path, encoding, tuple(feature.encoder for feature in features),
                   tuple(feature.spec.table_digits for feature in features), gzip=output.gzip)
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        run = _Run(features, job, output, _Schedule(checkpoint_every, checkpoint_seconds), state, progress,
                   scored_already=bool(warnings))
        with _chunk_source(spec, job, workers) as (table, scored, pool):
            lines, capped = run.write(table, scored(features))
            workers_cpu = _workers_cpu(pool)
        size = output.finish()
    except (ScoreInterrupted, KeyboardInterrupt):  # Ctrl-C in the chunks (checkpointed), or later
        resumable = isinstance(output, ResumableOutput)
        recorded = output.recorded if resumable else None
        output.abandon(keep=recorded is not None)
        raise ScoreInterrupted(output_path, recorded and recorded["next_line"],
                               recorded["lines"] if recorded else 0, resumable) from None
    except WorkerDied as death:  # a crash of a helper: the checkpoints stay, the same command continues
        recorded = output.recorded if isinstance(output, ResumableOutput) else None
        output.abandon(keep=recorded is not None)
        raise WorkerDied(death.name, death.exitcode, _kept(output_path, recorded)) from None
    except BaseException as error:
        # Bad input or a failed write (disk full) leaves nothing; a crash keeps the checkpoints.
        output.abandon(keep=not isinstance(error, (PhraseTableError, OSError)))
        raise
    if capped:
        log.warning("%d values above %g (lines with more than %d unknown words) were written as e^%g: "
                    "Moses sees %g", capped, MAX_TABLE_EXPONENT, MAX_TABLE_EXPONENT, MAX_TABLE_EXPONENT,
                    MAX_TABLE_EXPONENT)
    summary = ScoreSummary(lines, time.perf_counter() - started, sign,
                           state.get("first_line") or table.first_line, table.end_line - 1,
                           time.process_time() - cpu_started, workers_cpu, lines - state.get("lines", 0))
    if output_path != "-" and not is_special_file(output_path):
        _write_sidecar(output_path, key, features, summary, shard, total, size)
    return summary


def _run_key(input_path: str, sign: str, shard: ShardSpec, chunk_lines: int, checkpoint_every: int) -> dict:
    """Everything a resumed run must share with the run it continues."""
    stat = os.stat(input_path) if input_path != "-" else None
    return {"signature": sign, "input": os.path.abspath(input_path) if stat else "-",
            "input_bytes": stat.st_size if stat else None,
            "input_mtime_ns": stat.st_mtime_ns if stat else None,
            "shard": str(shard), "chunk_lines": chunk_lines, "checkpoint_every": checkpoint_every}


class _Schedule:
    """When to checkpoint: after every ``every``-th chunk, and after a chunk ``seconds`` after the last."""

    def __init__(self, every: int, seconds: float):
        self.every, self.seconds, self._last = every, seconds, time.monotonic()

    def due(self, chunk_number: int) -> bool:
        """Whether a checkpoint follows this chunk."""
        if chunk_number % self.every and time.monotonic() - self._last < self.seconds:
            return False
        self._last = time.monotonic()
        return True


@dataclass
class _Scored:
    """A chunk with its columns: its entries to format here, or its output bytes from a worker (``data``);
    ``raw`` is its text where it came along (the first chunk's warnings read it)."""

    first_line: int
    lines: int
    columns: list[np.ndarray]
    entries: list | None = None
    data: bytes | None = None
    raw: RawChunk | None = None


class _Run:
    """Writing the scored chunks of one run: in order, checkpointed on schedule, the first chunk's warnings, the
    values capped counted."""

    def __init__(self, features: Sequence[Feature], job: ChunkJob, output: ResumableOutput | StreamOutput,
                 schedule: _Schedule, state: dict, progress, scored_already: bool):
        self.features, self.job, self.output, self.schedule = features, job, output, schedule
        self.state, self.progress, self.scored_already = state, progress, scored_already

    def write(self, table: TableChunks | _RemoteTable, scored: Iterator[_Scored]) -> tuple[int, int]:
        """Write every chunk of ``scored``; returns (lines done, resumed ones included; values capped). ``table``
        tells where the range starts and how far the input is read.

        On Ctrl-C the chunks already computed are written and checkpointed, then ScoreInterrupted is raised.
        """
        lines, done, capped = self.state.get("lines", 0), None, 0
        writer = ChunkWriter(self.output, self.job.format)
        try:
            for number, chunk in enumerate(scored, start=1):
                if number == 1 and not self.state:
                    self._warn(table, chunk)
                capped += sum(int(np.count_nonzero(column > MAX_TABLE_EXPONENT)) for column in chunk.columns)
                after = {"next_line": chunk.first_line + chunk.lines, "lines": lines + chunk.lines,
                         "first_line": self.state.get("first_line") or table.first_line}
                writer.put(chunk.entries, chunk.columns, after if self.schedule.due(number) else None, data=chunk.data)
                lines, done = after["lines"], after
                if self.progress:
                    self.progress(lines, table.position(), table.size)
            writer.close()
        except KeyboardInterrupt:
            writer.close()
            if done is not None:
                self.output.checkpoint(done)
            raise ScoreInterrupted("", done and done["next_line"], lines) from None
        finally:
            writer.close(check=False)
        return lines, capped

    def _warn(self, table: TableChunks | _RemoteTable, chunk: _Scored) -> None:
        """The first chunk's warnings, from its first :data:`WARNING_LINES` lines (parsed here when a worker
        read them: once, and few, so that the models' process stays clear of text)."""
        if chunk.entries is not None:
            entries = chunk.entries[:WARNING_LINES]
        else:
            head = b"\n".join(chunk.raw.data.split(b"\n", WARNING_LINES)[:WARNING_LINES])
            entries = parse_chunk(RawChunk(chunk.first_line, min(chunk.lines, WARNING_LINES), head), table.path,
                                  table.encoding, table.expected_scores)
        for warning in first_chunk_warnings(table.path, entries, self.features, scored_already=self.scored_already):
            log.warning("warning: %s", warning)


def _overlapped(features: Sequence[Feature], items: Iterator[tuple]) -> Iterator[tuple]:
    """``(item, columns)`` for every ``(item, payloads)`` of ``items``, in order, each column as float64: the next
    item's columns are started before this one's are read, so that a GPU computes chunk n+1 while chunk n's values
    come back, and is never left waiting for the host between chunks."""
    previous = None
    for item, payloads in items:
        started = [feature.start(payload) for feature, payload in zip(features, payloads)]
        if previous is not None:
            yield _read(*previous)
        previous = item, started
    if previous is not None:
        yield _read(*previous)


def _read(item, started: list) -> tuple:
    return item, [np.asarray(values(), dtype=np.float64) for values in started]


class _InProcess:
    """The chunks of a table read, parsed and encoded on threads of this process (``--workers 0``)."""

    def __init__(self, table: TableChunks, job: ChunkJob):
        self.table, self.job = table, job

    def __call__(self, features: Sequence[Feature]) -> Iterator[_Scored]:
        with contextlib.closing(prefetch(self.table)) as chunks:
            with contextlib.closing(prefetch(self._encoded(chunks))) as ready:  # closed first: it reads ``chunks``
                for (chunk, entries), columns in _overlapped(features, ready):
                    yield _Scored(chunk.first_line, chunk.lines, columns, entries=entries)

    def _encoded(self, chunks: Iterator[RawChunk]) -> Iterator[tuple]:
        """``((chunk, entries), payloads)`` of every chunk: parsed and encoded (on the thread that prefetches)."""
        for chunk in chunks:
            entries, payloads = self.job.encode(chunk, self.table.expected_scores)
            yield (chunk, entries), payloads


class _RemoteTable:
    """What the models' process knows of a table its workers read: the range, from their messages."""

    def __init__(self, spec: TableSpec):
        check_read(spec.path)  # the workers read it: the run must have declared it
        if not os.path.isfile(spec.path):
            raise FileNotFoundError(f"{spec.path}: no such file")
        self.path, self.encoding = spec.path, spec.encoding
        self.size = os.path.getsize(spec.path)
        self.first_line: int | None = None
        self.end_line: int | None = None
        self.expected_scores: int | None = None
        self._position = 0

    def position(self) -> int:
        """Compressed bytes of the table read (by the worker of the latest chunk)."""
        return self._position

    def saw(self, chunk: EncodedChunk | TableEnd) -> None:
        """Take what a chunk, or the range's end, says of the range."""
        self._position = max(self._position, chunk.position)
        self.expected_scores = chunk.expected_scores
        if isinstance(chunk, TableEnd):
            self.first_line, self.end_line = chunk.first_line, chunk.end_line
        elif self.first_line is None:
            self.first_line = chunk.table_first_line


class _ByWorkers:
    """The chunks of a table read, parsed, encoded, formatted and compressed by a :class:`WorkerPool`: this
    process asks for chunks ``depth`` ahead (default: two a worker), computes their columns as they come, in
    order (a chunk started before the last one's values are read), and hands the columns back. ``chunks`` are
    read here and handed over (stdin), or None: the workers read the table. A bad line found by this process'
    reader is raised after the chunks before it, so that the first bad line of the table is the one reported."""

    def __init__(self, pool: WorkerPool, table: TableChunks | _RemoteTable, chunks: Iterator[RawChunk] | None,
                 depth: int | None = None):
        self.pool, self.table, self.chunks = pool, table, chunks
        self.depth = depth or 2 * len(pool)
        self._asked, self._ended, self._reader_error = 0, False, None
        self._first: RawChunk | None = None  # the first chunk read here, for its warnings

    def __call__(self, features: Sequence[Feature]) -> Iterator[_Scored]:
        computed: collections.deque = collections.deque()  # (number, chunk, columns) being formatted
        for (number, chunk), columns in _overlapped(features, self._encoded()):
            self.pool.format(number, columns)
            computed.append((number, chunk, columns))
            yield from self._formatted(computed, block=len(computed) > self.depth)
        yield from self._formatted(computed, block=True)
        if self._reader_error is not None:
            raise self._reader_error

    def _encoded(self) -> Iterator[tuple]:
        """``((number, chunk), payloads)`` of every chunk, in order, as the workers hand them over."""
        number = 0
        while True:
            self._ask(number + self.depth)
            if self._ended and number == self._asked:
                return
            chunk = self.pool.encoded(number)
            if isinstance(self.table, _RemoteTable):
                self.table.saw(chunk)
            if isinstance(chunk, TableEnd):
                return
            yield (number, chunk), chunk.payloads
            number += 1

    def _ask(self, until: int) -> None:
        """Ask the workers for the chunks before ``until`` not asked for yet (never waits on them)."""
        while not self._ended and self._asked < until:
            if self.chunks is None:
                self.pool.encode(self._asked)
            else:
                try:
                    chunk = next(self.chunks)
                except StopIteration:
                    self._ended = True
                    return
                except PhraseTableError as error:
                    self._reader_error, self._ended = error, True
                    return
                self.pool.encode(self._asked, chunk, self.table.expected_scores)
                self._first = self._first or chunk
            self._asked += 1

    def _formatted(self, computed: collections.deque, block: bool) -> Iterator[_Scored]:
        """The chunks at the head of ``computed`` whose bytes are back; waits for them all with ``block``."""
        while computed:
            data = self.pool.formatted(computed[0][0], block=block)
            if data is None:
                return
            number, chunk, columns = computed.popleft()
            raw = chunk.raw() or (self._first if number == 0 else None)
            yield _Scored(chunk.first_line, chunk.lines, columns, data=data, raw=raw)


@contextlib.contextmanager
def _chunk_source(spec: TableSpec, job: ChunkJob, workers: int):
    """``(table, scored, pool)``: the table's range as it is read; ``scored(features)``, the chunks with their
    columns, by ``workers`` processes (reading the table themselves, unless it is stdin) or in this one; the
    pool of workers (None without)."""
    with contextlib.ExitStack() as stack:
        if workers and spec.path != "-":
            table = _RemoteTable(spec)
            pool = stack.enter_context(WorkerPool(workers, job, spec))
            yield table, _ByWorkers(pool, table, None), pool
            return
        table = stack.enter_context(spec.open())
        if not workers:
            yield table, _InProcess(table, job), None
            return
        pool = stack.enter_context(WorkerPool(workers, job))
        chunks = stack.enter_context(contextlib.closing(prefetch(table)))
        yield table, _ByWorkers(pool, table, chunks), pool


def _workers_cpu(pool: WorkerPool | None) -> tuple[float, ...]:
    """Each worker's CPU seconds from its start to its last chunk."""
    if pool is None:
        return ()
    return tuple(pool.cpu.get(name, start) - start for name, start in sorted(pool.started_cpu.items()))


def _write_sidecar(output_path: str, key: dict, features: Sequence[Feature], summary: ScoreSummary,
                   shard: ShardSpec, total_lines: int | None, size: int) -> None:
    """Write ``OUTPUT.json``: how the table was scored and which of its lines this file holds."""
    write_sidecar(output_path, Sidecar(
        signature=summary.signature, mosesrnn_version=__version__, input=key["input"],
        input_bytes=key["input_bytes"], shard=str(shard), first_line=summary.first_line,
        last_line=summary.last_line, lines=summary.lines,
        total_lines=total_lines if total_lines is not None else summary.last_line, bytes=size,
        appended_columns=tuple(feature.spec.name for feature in features),
        features=tuple(describe(feature) for feature in features)))
