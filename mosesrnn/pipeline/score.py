"""Stream a phrase table through feature columns and write the extended table.

Reading (with gzip on its own thread), computing and writing run side by side (see
:mod:`mosesrnn.pipeline.streams`); with ``workers``, worker processes parse, encode and format the
chunks around this process, which only runs the models (:mod:`mosesrnn.pipeline.workers`), and the
output is byte for byte the same. Lines come out in input order, one for one; the output appears
only when the whole table (or shard, see :mod:`mosesrnn.pipeline.shards`) has been written. A
checkpoint is taken every ``checkpoint_every`` chunks and every ``checkpoint_seconds``, and when
the run is interrupted (Ctrl-C, SIGTERM), so the same command continues a stopped or killed run
from there (see :mod:`mosesrnn.io.resumable`). What is checked and warned about before and at the
start of the pass is :mod:`mosesrnn.pipeline.preflight`.
"""
from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import os
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from ..features.registry import Feature, describe
from ..formats.phrase_table import MAX_TABLE_EXPONENT, PhraseTableError
from ..formats.sidecar import Sidecar, write_sidecar
from ..io.atomic import is_special_file
from ..io.compressed import count_lines
from ..io.job import Interrupted
from ..io.resumable import ResumableOutput, StreamOutput, open_output
from ..version import __version__
from .preflight import check_run, first_chunk_warnings, table_warnings
from .shards import ShardSpec
from .streams import ChunkWriter, prefetch
from .table_chunks import RawChunk, TableChunks, parse_chunk
from .workers import ChunkText, WorkerDied, WorkerPool

__all__ = ["ScoreSummary", "ScoreInterrupted", "run_score_job", "signature"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoreSummary:
    """What a scoring run did: its lines, the table's lines first_line..last_line (1-based, inclusive), the time."""

    lines: int
    seconds: float
    signature: str
    first_line: int = 1
    last_line: int = 0

    @property
    def lines_per_second(self) -> float:
        """Throughput of the whole run, reading and writing included."""
        return self.lines / self.seconds if self.seconds else 0.0


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
    starts over. ``workers`` processes parse, encode and format beside this one (0: all in this process;
    the output is the same). ``-`` is stdout; a device or FIFO is written directly. ``progress(lines,
    bytes_read, bytes_total)`` is called after each chunk. A JSON sidecar ``OUTPUT.json`` records
    the signature and the line range (regular files only). Raises
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
    table = TableChunks(input_path, encoding, chunk_lines, *nominal, resume_line=state.get("next_line"))
    started = time.perf_counter()
    try:
        with table:
            lines, capped = _score_chunks(table, output, features, _Schedule(checkpoint_every, checkpoint_seconds),
                                          state, progress, workers, scored_already=bool(warnings))
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
                           state.get("first_line") or table.first_line, table.end_line - 1)
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


def _score_chunks(table: TableChunks, output: ResumableOutput | StreamOutput, features: Sequence[Feature],
                  schedule: _Schedule, state: dict, progress, workers: int,
                  scored_already: bool = False) -> tuple[int, int]:
    """Compute and write the chunks of ``table``; returns (lines done, resumed ones included; values capped).

    On Ctrl-C the chunks already computed are written and checkpointed, then ScoreInterrupted is raised.
    """
    lines, done, capped = state.get("lines", 0), None, 0
    with contextlib.closing(prefetch(table)) as chunks:
        first = next(chunks, None)
        if first is None:
            return lines, capped
        text = ChunkText(table.path, table.encoding, table.expected_scores,
                         tuple(feature.encoder for feature in features),
                         tuple(feature.spec.table_digits for feature in features))
        with contextlib.ExitStack() as stack:
            pool = stack.enter_context(WorkerPool(workers, text)) if workers else None
            writer = ChunkWriter(output, _as_formatted if pool else text.format)
            stack.callback(writer.close)
            scored = (_by_workers(pool, features, itertools.chain([first], chunks)) if pool else
                      _in_process(features, _encoded(text, itertools.chain([first], chunks))))
            try:
                for number, (chunk, entries, columns, data) in enumerate(scored, start=1):
                    if number == 1 and not state:
                        for warning in first_chunk_warnings(table.path, entries or parse_chunk(
                                chunk, table.path, table.encoding, table.expected_scores), features,
                                scored_already=scored_already):
                            log.warning("warning: %s", warning)
                    capped += sum(value > MAX_TABLE_EXPONENT for column in columns for value in column)
                    after = {"next_line": chunk.last_line + 1, "lines": lines + chunk.lines,
                             "first_line": state.get("first_line") or table.first_line}
                    writer.put(entries if data is None else data, columns, after if schedule.due(number) else None)
                    lines, done = after["lines"], after
                    if progress:
                        progress(lines, table.position(), table.size)
            except KeyboardInterrupt:
                writer.close()
                if done is not None:
                    output.checkpoint(done)
                raise ScoreInterrupted("", done and done["next_line"], lines) from None
    return lines, capped


def _as_formatted(data: bytes, columns) -> bytes:
    """The writer's formatting when workers have formatted the chunk already."""
    return data


def _encoded(text: ChunkText, chunks) -> Iterator[tuple[RawChunk, list, list]]:
    """Each chunk with its entries and the encoders' payloads (run on the reading thread, as prefetched)."""
    return ((chunk, *text.encode(chunk)) for chunk in chunks)


def _in_process(features: Sequence[Feature], encoded) -> Iterator[tuple]:
    """``(chunk, entries, columns, None)`` of every chunk, parsed and encoded on one reading thread."""
    with contextlib.closing(prefetch(encoded)) as ready:
        for chunk, entries, payloads in ready:
            yield chunk, entries, [feature.compute(payload) for feature, payload in zip(features, payloads)], None


def _by_workers(pool: WorkerPool, features: Sequence[Feature], chunks: Iterator[RawChunk],
                depth: int | None = None) -> Iterator[tuple]:
    """``(chunk, None, columns, formatted bytes)`` of every chunk, in order; the workers parse, encode and format,
    ``depth`` chunks ahead (default: two a worker). A bad line found by the reader is raised after the chunks
    before it, so that the first bad line of the table is the one reported."""
    depth = depth or 2 * len(pool)
    submitted: collections.deque = collections.deque()  # (number, chunk) being encoded
    computed: collections.deque = collections.deque()  # (number, chunk, columns) being formatted
    numbers, reader_error = itertools.count(), None

    def submit() -> None:
        nonlocal reader_error
        while reader_error is None and len(submitted) < depth:
            try:
                chunk = next(chunks)
            except StopIteration:
                return
            except PhraseTableError as error:
                reader_error = error
                return
            number = next(numbers)
            pool.encode(number, chunk)
            submitted.append((number, chunk))

    submit()
    while submitted or computed:
        if submitted:
            number, chunk = submitted.popleft()
            _, payloads = pool.encoded(number)
            columns = [feature.compute(payload) for feature, payload in zip(features, payloads)]
            pool.format(number, columns)
            computed.append((number, chunk, columns))
            submit()
        while computed:
            data = pool.formatted(computed[0][0], block=not submitted or len(computed) > depth)
            if data is None:
                break
            _, chunk, columns = computed.popleft()
            yield chunk, None, columns, data
    if reader_error is not None:
        raise reader_error


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
