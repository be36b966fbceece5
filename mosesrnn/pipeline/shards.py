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

from ..errors import MosesRNNError

__all__ = ["ShardSpec"]

_SHARD = re.compile(r"^(\d+)/(\d+)$")


@dataclass(frozen=True)
class ShardSpec:
    """Shard ``index`` (1-based) of ``count``."""

    index: int = 1
    count: int = 1

    def __post_init__(self):
        if not 1 <= self.index <= self.count:
            raise MosesRNNError(f"shard must be I/N with 1 <= I <= N, got {self}")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @classmethod
    def parse(cls, text: str, environ: dict | None = None) -> "ShardSpec":
        """Read ``"I/N"``, e.g. ``"2/8"``, or ``"auto"`` (:meth:`from_environment`); raises MosesRNNError otherwise."""
        if text.strip() == "auto":
            return cls.from_environment(os.environ if environ is None else environ)
        match = _SHARD.match(text.strip())
        if not match:
            raise MosesRNNError(f"shard must look like I/N (e.g. 2/8) or be auto, not {text!r}")
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
        raise MosesRNNError("--shard auto reads the shard from torchrun (RANK, WORLD_SIZE) or Slurm "
                            "(SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT, or SLURM_PROCID and SLURM_NTASKS), and "
                            "none is set: give --shard I/N")

    def nominal_range(self, total_lines: int) -> tuple[int, int]:
        """The 1-based line numbers [start, stop) before moving both to boundaries."""
        return (total_lines * (self.index - 1) // self.count + 1,
                total_lines * self.index // self.count + 1)
