"""Resumable output: a ``.part`` file that grows in checkpointed pieces, plus a progress record.

``OUT.part`` receives the output in pieces already in the file's form: for ``*.gz`` (:attr:`ResumableOutput.gzip`)
each piece is a whole gzip member (a gzip file may hold several members, and gzip/zcat/Moses read them as one
stream), so that pieces can be compressed anywhere, in worker processes too. At each checkpoint the file is
flushed to disk, and ``OUT.progress.json`` records the bytes and lines done so far together with the run's key
(signature, input, shard, chunking). A run
killed at any moment leaves at most some bytes after the last recorded size; resuming truncates
them and continues. Checkpoints fall after the same chunks in every run of the same command,
so a resumed run writes exactly the bytes an uninterrupted one would. When the run completes,
``OUT.part`` is renamed to ``OUT`` and the progress record removed.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from typing import BinaryIO

from ..errors import MosesRNNError
from .atomic import atomic_file, is_special_file
from .compressed import is_gzip_name
from .declared import check_write
from .gzip_stream import gzip_member
from .json_file import parse_json

__all__ = ["ResumeError", "ResumableOutput", "StreamOutput", "open_output"]

log = logging.getLogger(__name__)


class ResumeError(MosesRNNError):
    """A run would continue a stopped run that does not match it."""


class ResumableOutput:
    """The ``.part`` file and progress record of one output (see the module docstring).

    ``key`` identifies the run; with ``resume`` a matching progress record is continued (its
    ``state`` holds what was recorded), a different one raises ResumeError, and a missing one
    starts afresh.
    """

    def __init__(self, path: str, key: dict, resume: bool = False):
        check_write(path)
        path = os.path.realpath(path)  # a symbolic link is followed: its target is replaced, the link stays
        self.path, self.key = path, key
        self.part_path, self.progress_path = path + ".part", path + ".progress.json"
        if not resume:  # a stale record must never be resumed over this run's bytes
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.progress_path)
        self.state: dict | None = self._load_state() if resume else None
        self.recorded: dict | None = self.state  # the state of the last checkpoint
        size = self.state["bytes"] if self.state else 0
        self._raw: BinaryIO = open(self.part_path, "r+b" if self.state else "wb")
        self._raw.truncate(size)
        self._raw.seek(size)
        #: Whether the pieces written must be whole gzip members (the output is ``*.gz``).
        self.gzip = is_gzip_name(path)

    def _load_state(self) -> dict | None:
        try:
            with open(self.progress_path, "rb") as stream:
                record = parse_json(stream.read(), self.progress_path, "a progress record")
        except FileNotFoundError:
            if os.path.exists(self.part_path):
                log.info("%s holds no checkpoint (%s is missing): starting from the beginning", self.part_path,
                         self.progress_path)
            return None
        except ValueError as error:
            raise ResumeError(f"{error}: it is damaged, start over with --restart") from None
        if not (isinstance(record, dict) and isinstance(record.get("key"), dict) and
                isinstance(record.get("state"), dict) and isinstance(record["state"].get("bytes"), int)):
            raise ResumeError(f"{self.progress_path}: not a progress record (no key and state): it is damaged, start "
                              f"over with --restart")
        differing = sorted(name for name in set(self.key) | set(record.get("key", {}))
                           if self.key.get(name) != record.get("key", {}).get(name))
        if differing:
            raise ResumeError(f"{self.part_path} holds a stopped run that differs from this one in "
                              f"{', '.join(differing)}: run the command that made it to continue it, or start over "
                              f"with --restart")
        if not os.path.exists(self.part_path) or os.path.getsize(self.part_path) < record["state"]["bytes"]:
            raise ResumeError(f"cannot continue {self.path}: {self.part_path} is missing or shorter than "
                              f"recorded; start over with --restart")
        return record["state"]

    def write(self, piece: bytes) -> None:
        """Append ``piece``, in the file's form: whole gzip members for ``*.gz`` (:attr:`gzip`)."""
        self._raw.write(piece)

    def checkpoint(self, state: dict) -> None:
        """Sync what was written to disk and record ``state`` with the byte size."""
        self._raw.flush()
        os.fsync(self._raw.fileno())
        record = {"key": self.key, "state": {**state, "bytes": self._raw.tell()}}
        with atomic_file(self.progress_path) as stream:
            stream.write(json.dumps(record, indent=2).encode("utf-8"))
        self.recorded = record["state"]

    def finish(self) -> int:
        """Complete the output, give it its final name and drop the progress record; returns its size."""
        if self.gzip and self._raw.tell() == 0:
            self.write(gzip_member(b""))  # an empty table is still a valid gzip file
        self._raw.flush()
        size = self._raw.tell()
        self._raw.close()
        os.replace(self.part_path, self.path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.progress_path)
        return size

    def abandon(self, keep: bool) -> None:
        """Close after a failure; ``keep=False`` also removes the part and the progress record."""
        with contextlib.suppress(OSError):  # a full disk fails the last flush too
            self._raw.close()
        if not keep:
            for path in (self.part_path, self.progress_path):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)


class StreamOutput:
    """The same interface over an open stream (stdout, a device, a FIFO): no checkpoints, nothing
    to rename; with ``close`` the stream is closed when done."""

    state = None
    gzip = False  # written as it comes

    def __init__(self, stream: BinaryIO, close: bool = False):
        self._stream, self._close = stream, close

    def write(self, data: bytes) -> None:
        """Write ``data`` as is."""
        self._stream.write(data)

    def checkpoint(self, state: dict) -> None:
        """Nothing to record for a stream."""

    def finish(self) -> int:
        """Flush (and maybe close) the stream; the size is unknown (0)."""
        self._stream.flush()
        if self._close:
            self._stream.close()
        return 0

    def abandon(self, keep: bool) -> None:
        """Close the stream if it is ours; nothing else to clean up."""
        if self._close:
            with contextlib.suppress(OSError):
                self._stream.close()


def open_output(path: str, key: dict, resume: bool) -> ResumableOutput | StreamOutput:
    """Where a scoring run writes: stdout for ``-``, a device or FIFO directly (nothing to
    resume or rename), else a resumable ``.part`` file beside the output (see the module docstring)."""
    if path == "-":
        return StreamOutput(sys.stdout.buffer)
    if is_special_file(path):  # nothing to resume: written directly
        check_write(path)
        return StreamOutput(open(path, "wb"), close=True)
    return ResumableOutput(path, key, resume)
