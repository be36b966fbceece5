"""Output files that appear whole or not at all, logs that grow, and outputs that are not regular files.

A regular output is written to a temporary file beside it and renamed at the end, so a reader
never sees half a file and a failed run leaves nothing behind. A symbolic link is followed (its
target is replaced, the link stays); a device, FIFO or socket (``/dev/null``, a named pipe) is
written directly, since renaming over it would replace it with a regular file.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from typing import BinaryIO, Iterator

from ..errors import MosesRNNError
from .declared import check_write

__all__ = ["atomic_file", "program_output", "append_text", "log_file", "is_special_file", "describe_os_error",
           "read_system_text"]


def is_special_file(path: str) -> bool:
    """Whether ``path`` exists and is not a regular file or directory (a device, FIFO or socket)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextlib.contextmanager
def atomic_file(path: str, suffix: str = ".part") -> Iterator[BinaryIO]:
    """Open ``path`` for binary writing so that it appears only when the block succeeds.

    Data goes to a temporary file in the same directory (so the final rename is atomic), which
    is renamed over ``path`` at the end and removed on error; ``-`` is stdout. See the module
    docstring for symbolic links and special files.
    """
    check_write(path)
    if path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    if is_special_file(path):
        with open(path, "wb") as stream:
            yield stream
        return
    path = os.path.realpath(path)
    directory = os.path.dirname(path)
    fd, temp_path = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as stream:
            yield stream
        os.chmod(temp_path, 0o666 & ~_umask())  # mkstemp's 0600 would hide the file from others
        os.replace(temp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_path)
        raise


@contextlib.contextmanager
def program_output(path: str) -> Iterator[str]:
    """A temporary path beside ``path`` for another program (Moses) to write; renamed to ``path`` when the
    block succeeds, removed when it fails, so ``path`` too appears whole or not at all."""
    check_write(path)
    directory, name = os.path.split(os.path.realpath(path))
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".part")
    os.close(fd)
    try:
        yield temporary
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, os.path.realpath(path))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def append_text(path: str, text: str) -> None:
    """Append ``text`` (UTF-8) to the log file ``path``, which a run declared (a training log)."""
    check_write(path)
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(text)


@contextlib.contextmanager
def log_file(path: str) -> Iterator[BinaryIO]:
    """``path`` opened for writing from its start, a log that another program's output fills as it runs
    (readable while it grows, unlike an atomic output)."""
    check_write(path)
    with open(path, "wb") as stream:
        yield stream


def read_system_text(path: str) -> str:
    """The text of a file of the operating system (``/proc/cpuinfo``), which no run declares."""
    if not path.startswith(("/proc/", "/sys/")):
        raise MosesRNNError(f"{path} is not a file of the operating system")
    with open(path, encoding="utf-8", errors="replace") as stream:
        return stream.read()


def describe_os_error(error: OSError) -> str:
    """One line for a failed read or write: ``PATH: no space left on device``."""
    if error.strerror is None:  # raised by our own code with a whole message
        return str(error)
    problem = error.strerror.lower()
    if error.errno == errno.ENOSPC:
        problem += " (temporary files removed)"
    return f"{error.filename}: {problem}" if error.filename else problem


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
