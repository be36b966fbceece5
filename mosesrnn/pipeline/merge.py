"""Joining the shards of one scored table (``mosesrnn score --shard I/N``) into one file.

Each part's sidecar (``PART.json``) says which input, signature and line range it holds. The
parts must come from the same input and the same scoring, hold shards 1..N exactly once, and
their line ranges must tile the table from line 1 to its last line. The parts are then
concatenated byte for byte, in shard order: plain text joins as text, and gzip parts join as a
multi-member gzip file, which every gzip reader (and Moses) reads as one stream.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
from dataclasses import dataclass
from typing import Sequence

from ..errors import MosesRNNError
from ..formats.sidecar import Sidecar, read_sidecar, sidecar_path, write_sidecar
from ..io.atomic import atomic_file
from ..io.compressed import is_gzip_name, open_raw

__all__ = ["MergeError", "MergeSummary", "merge_parts"]

_SAME = ("signature", "input", "input_bytes", "total_lines", "appended_columns")


class MergeError(MosesRNNError):
    """The parts do not make exactly one whole table."""


@dataclass(frozen=True)
class MergeSummary:
    """What a merge wrote."""

    parts: int
    lines: int
    signature: str


def merge_parts(parts: Sequence[str], output_path: str) -> MergeSummary:
    """Check the shards ``parts`` (any order) and write them, in shard order, to ``output_path``.

    Writes ``output_path`` atomically and its sidecar ``output_path.json``; raises MergeError if
    a shard is missing, given twice, from another input or scoring, or its file is incomplete.
    """
    ordered = _check_parts([(path, _read_part(path)) for path in parts])
    if output_path != "-" and any(is_gzip_name(path) != is_gzip_name(output_path) for path, _ in ordered):
        raise MergeError("the parts and the output must all be gzipped (.gz) or all plain")
    _concatenate([path for path, _ in ordered], output_path)
    records = [record for _, record in ordered]
    merged = dataclasses.replace(records[0], shard="1/1", first_line=1, last_line=records[-1].last_line,
                                 lines=sum(record.lines for record in records),
                                 bytes=os.path.getsize(output_path) if output_path != "-" else 0,
                                 merged_from=tuple(os.path.abspath(path) for path, _ in ordered))
    if output_path != "-":  # a merged table on stdout goes without its record
        write_sidecar(output_path, merged)
    return MergeSummary(len(records), merged.lines, merged.signature)


def _read_part(path: str) -> Sidecar:
    """The sidecar of a finished part, checked against the part's size."""
    record = read_sidecar(path)
    if record is None:
        raise MergeError(f"{sidecar_path(path)} not found: {path} is not a finished shard")
    if not os.path.isfile(path) or os.path.getsize(path) != record.bytes:
        raise MergeError(f"{path} is missing or its size differs from its sidecar's")
    return record


def _check_parts(records: list[tuple[str, Sidecar]]) -> list[tuple[str, Sidecar]]:
    """The parts ``(path, sidecar)`` in shard order, or raise MergeError saying what is wrong."""
    if not records:
        raise MergeError("no part to merge")
    for name in _SAME:
        values = {repr(getattr(record, name)) for _, record in records}
        if len(values) > 1:
            raise MergeError(f"the parts differ in {name}: {', '.join(sorted(values))}")
    counts = {int(record.shard.split("/")[1]) for _, record in records}
    if len(counts) > 1:
        raise MergeError(f"the parts come from different shardings: {sorted(counts)} shards")
    count, by_index = counts.pop(), {}
    for path, record in records:
        index = int(record.shard.split("/")[0])
        if index in by_index:
            raise MergeError(f"shard {index}/{count} given twice: {by_index[index][0]} and {path}")
        by_index[index] = (path, record)
    missing = [str(index) for index in range(1, count + 1) if index not in by_index]
    if missing:
        raise MergeError(f"shard(s) {', '.join(missing)} of {count} missing")
    ordered = [by_index[index] for index in range(1, count + 1)]
    expected = 1
    for path, record in ordered:
        if record.first_line != expected:
            raise MergeError(f"{path} starts at line {record.first_line}, expected {expected}")
        expected = record.last_line + 1
    total = ordered[0][1].total_lines
    if expected != total + 1:
        raise MergeError(f"the parts end at line {expected - 1}, the table has {total}")
    return ordered


def _concatenate(paths: Sequence[str], output_path: str) -> None:
    # Byte for byte: gzip parts join as one multi-member gzip file.
    with atomic_file(output_path) as out:
        for path in paths:
            with open_raw(path) as part:
                shutil.copyfileobj(part, out, 1 << 22)
