"""A lock for the outputs of a run, so that two runs never write the same output at once.

The lock is a file beside the output (``OUTPUT.lock``; for a folder, ``FOLDER/.lock``) that the
run holds with ``flock`` while it works and removes when done. The kernel releases a ``flock``
when its process dies, so a lock file left by a crashed or killed run is *stale*: it is not held,
and the next run takes it over. The file records who holds it (pid, host, command, start time)
for the message that refuses a second run, as ``make`` and ``git`` name their lock files.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import sys
import time

from ..errors import MosesRNNError

__all__ = ["LockedError", "OutputLock", "lock_path", "command_line"]

log = logging.getLogger("mosesrnn")


class LockedError(MosesRNNError):
    """Another live run holds the lock of an output."""


def lock_path(output: str, folder: bool = False) -> str:
    """Where the lock of ``output`` lives: ``OUTPUT.lock``, or ``FOLDER/.lock`` for a folder."""
    return os.path.join(output, ".lock") if folder else output + ".lock"


class OutputLock:
    """The lock of one output (see the module docstring); :meth:`acquire` it, then :meth:`release` it."""

    def __init__(self, output: str, folder: bool = False):
        self.output, self.path = output, lock_path(output, folder)
        self._fd: int | None = None

    def acquire(self, command: str) -> None:
        """Hold the lock, or raise LockedError naming the run that holds it."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_record(fd)
                os.close(fd)
                raise LockedError(f"{self.output} is being written by another run ({_describe(holder)}); "
                                  f"wait for it to finish, or choose another output") from None
            except OSError as error:  # a file system without locks (some network ones): go on unlocked
                os.close(fd)
                os.unlink(self.path)
                log.warning("warning: cannot lock %s on this file system (%s): nothing stops another run from "
                            "writing it at the same time", self.output, error.strerror)
                return
            if _same_file(fd, self.path):
                break
            os.close(fd)  # the holder removed the file between our open and our flock: try again
        stale = _read_record(fd)
        if stale:
            log.info("taking over the stale lock %s (%s, which is gone)", self.path, _describe(stale))
        record = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
                  "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode("utf-8"), 0)
        self._fd = fd

    def release(self) -> None:
        """Remove the lock file and let go of the lock (the removal first, so that no run
        locks a file that is about to disappear)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(self._fd)
        self._fd = None


def command_line() -> str:
    """This process' command line, shortened, for the lock record."""
    text = " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])
    return text if len(text) <= 200 else text[:197] + "..."


def _same_file(fd: int, path: str) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _read_record(fd: int) -> dict:
    try:
        return json.loads(os.pread(fd, 4096, 0).decode("utf-8") or "{}")
    except (ValueError, UnicodeDecodeError):
        return {}


def _describe(record: dict) -> str:
    if not record:
        return "a run that left no record"
    return (f"pid {record.get('pid')} on {record.get('host')}, `{record.get('command')}`, "
            f"since {record.get('started')}")
