"""Joining the shards of one scored table (``mosesrnn score --shard I/N``) into one file.

Each part's sidecar (``PART.json``) says which input, signature and line range it holds. The
parts must come from the same input and the same scoring, hold shards 1..N exactly once, and
their line ranges must tile the table from line 1 to its last line. The parts are then
concatenated byte for byte, in shard order: plain text joins as text, and gzip parts join as a
multi-member gzip file, which every gzip reader (and Moses) reads as one stream.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from typing import Sequence

from ..files import atomic_file
from ..formats.compressed import is_gzip_name

__all__ = ["MergeError", "MergeSummary", "merge_parts"]

_SAME = ("signature", "input", "input_bytes", "total_lines", "appended_columns")


class MergeError(ValueError):
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
    records = _check_records([_read_sidecar(path) for path in parts])
    if any(is_gzip_name(record["path"]) != is_gzip_name(output_path) for record in records):
        raise MergeError("the parts and the output must all be gzipped (.gz) or all plain")
    _concatenate([record["path"] for record in records], output_path)
    merged = {key: value for key, value in records[0].items() if key != "path"}
    merged.update(shard="1/1", first_line=1, end_line=records[-1]["end_line"],
                  lines=sum(record["lines"] for record in records), bytes=os.path.getsize(output_path),
                  merged_from=[os.path.abspath(record["path"]) for record in records])
    with atomic_file(output_path + ".json") as stream:
        stream.write((json.dumps(merged, indent=2) + "\n").encode("utf-8"))
    return MergeSummary(len(records), merged["lines"], merged["signature"])


def _read_sidecar(path: str) -> dict:
    """The sidecar of a finished part, checked against the part's size."""
    try:
        with open(path + ".json", encoding="utf-8") as stream:
            record = json.load(stream)
    except FileNotFoundError:
        raise MergeError(f"{path}.json not found: {path} is not a finished shard") from None
    if not os.path.isfile(path) or os.path.getsize(path) != record.get("bytes"):
        raise MergeError(f"{path} is missing or its size differs from its sidecar's")
    return {**record, "path": path}


def _check_records(records: list[dict]) -> list[dict]:
    """Return the records in shard order, or raise MergeError saying what is wrong."""
    if not records:
        raise MergeError("no part to merge")
    for name in _SAME:
        values = {json.dumps(record.get(name)) for record in records}
        if len(values) > 1:
            raise MergeError(f"the parts differ in {name}: {', '.join(sorted(values))}")
    counts = {int(record["shard"].split("/")[1]) for record in records}
    if len(counts) > 1:
        raise MergeError(f"the parts come from different shardings: {sorted(counts)} shards")
    count, by_index = counts.pop(), {}
    for record in records:
        index = int(record["shard"].split("/")[0])
        if index in by_index:
            raise MergeError(f"shard {index}/{count} given twice: "
                             f"{by_index[index]['path']} and {record['path']}")
        by_index[index] = record
    missing = [str(index) for index in range(1, count + 1) if index not in by_index]
    if missing:
        raise MergeError(f"shard(s) {', '.join(missing)} of {count} missing")
    ordered = [by_index[index] for index in range(1, count + 1)]
    expected = 1
    for record in ordered:
        if record["first_line"] != expected:
            raise MergeError(f"{record['path']} starts at line {record['first_line']}, expected {expected}")
        expected = record["end_line"]
    if expected != ordered[0]["total_lines"] + 1:
        raise MergeError(f"the parts end at line {expected - 1}, the table has {ordered[0]['total_lines']}")
    return ordered


def _concatenate(paths: Sequence[str], output_path: str) -> None:
    # Byte for byte: gzip parts join as one multi-member gzip file.
    with atomic_file(output_path) as out:
        for path in paths:
            with open(path, "rb") as part:
                shutil.copyfileobj(part, out, 1 << 22)
