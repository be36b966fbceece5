"""Cutting a phrase table into N contiguous shards at source-phrase boundaries.

Shard I of N covers the lines from the first *boundary* at or after line
``floor(total * (I-1) / N) + 1`` up to, not including, the first boundary at or after
``floor(total * I / N) + 1``, where a boundary is line 1 or a line whose source phrase differs
from the previous line's, and ``total`` is the table's line count (the end of the table is the
last boundary). Every shard computes both of its ends with the same rule, so the shards are
contiguous, disjoint and cover every line, and in a sorted table all lines of one source phrase
fall in the same shard. A shard may be empty if one source's block spans its whole nominal range.

The line count comes from a first pass over the table that only counts newlines (no parsing).
Line numbers, not byte offsets, are used for plain and gzipped tables alike: a gzip stream cannot
be entered in the middle, so a shard must decompress everything before it anyway.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterator

from ..formats.phrase_table import PhraseEntry, TableReader
from ..io.readers import Reader

__all__ = ["ShardSpec", "TableSlice"]

_SHARD = re.compile(r"^(\d+)/(\d+)$")


@dataclass(frozen=True)
class ShardSpec:
    """Shard ``index`` (1-based) of ``count``."""

    index: int = 1
    count: int = 1

    def __post_init__(self):
        if not 1 <= self.index <= self.count:
            raise ValueError(f"shard must be I/N with 1 <= I <= N, got {self}")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @classmethod
    def parse(cls, text: str, environ: dict | None = None) -> "ShardSpec":
        """Read ``"I/N"``, e.g. ``"2/8"``, or ``"auto"`` (:meth:`from_environment`); raises ValueError otherwise."""
        if text.strip() == "auto":
            return cls.from_environment(os.environ if environ is None else environ)
        match = _SHARD.match(text.strip())
        if not match:
            raise ValueError(f"shard must look like I/N (e.g. 2/8) or be auto, not {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))

    @classmethod
    def from_environment(cls, environ) -> "ShardSpec":
        """This process' shard from its launcher: torchrun (``RANK`` of ``WORLD_SIZE``), a Slurm job array
        (``SLURM_ARRAY_TASK_ID`` from ``SLURM_ARRAY_TASK_MIN`` of ``SLURM_ARRAY_TASK_COUNT``) or Slurm tasks
        (``SLURM_PROCID`` of ``SLURM_NTASKS``)."""
        for index, count, first in (("RANK", "WORLD_SIZE", None),
                                    ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"),
                                    ("SLURM_PROCID", "SLURM_NTASKS", None)):
            if index in environ and count in environ:
                offset = int(environ.get(first, 0)) if first else 0
                return cls(int(environ[index]) - offset + 1, int(environ[count]))
        raise ValueError("--shard auto reads the shard from torchrun (RANK, WORLD_SIZE) or Slurm "
                         "(SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT, or SLURM_PROCID and SLURM_NTASKS), and none "
                         "is set: give --shard I/N")

    def nominal_range(self, total_lines: int) -> tuple[int, int]:
        """The 1-based line numbers [start, stop) before moving both to boundaries."""
        return (total_lines * (self.index - 1) // self.count + 1,
                total_lines * self.index // self.count + 1)


class TableSlice(Reader[PhraseEntry]):
    """Iterate the entries of one shard's line range (see the module docstring), in a ``with`` block
    that closes the table where it is left (a :class:`~mosesrnn.io.readers.Reader`).

    ``nominal_stop=None`` runs to the end of the table. ``resume_line`` continues a shard at a
    line known to belong to it. After iteration ``first_line`` and ``end_line`` hold the
    shard's range [first_line, end_line) (``first_line`` is None when resuming).
    """

    def __init__(self, path: str, encoding: str, nominal_start: int = 1, nominal_stop: int | None = None,
                 resume_line: int | None = None):
        self.start = resume_line or nominal_start
        self.nominal_start, self.nominal_stop, self.resuming = nominal_start, nominal_stop, bool(resume_line)
        # One line before the start is read too: its source decides whether the start is a boundary.
        self.reader = TableReader(path, encoding, start_line=max(1, self.start - 1))
        self.first_line: int | None = None
        self.end_line: int | None = None
        super().__init__(self._slice())

    def _slice(self) -> Iterator[PhraseEntry]:
        started, previous, line_no = self.resuming, None, self.start - 1
        with self.reader:
            for entry in self.reader:
                line_no = entry.line_no
                boundary = previous is None or entry.source != previous
                previous = entry.source
                if line_no < self.start:
                    continue
                if boundary and self.nominal_stop is not None and line_no >= self.nominal_stop:
                    break
                if not started and boundary:
                    started, self.first_line = True, line_no
                if started:
                    yield entry
            else:
                line_no += 1  # the end of the table is the last boundary
        self.end_line = line_no
        if not started:
            self.first_line = line_no  # an empty shard
