"""Output files that appear whole or not at all, and outputs that are not regular files.

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
import tempfile
from typing import BinaryIO, Iterator

__all__ = ["atomic_file", "is_special_file", "describe_os_error"]


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
    is renamed over ``path`` at the end and removed on error. See the module docstring for
    symbolic links and special files.
    """
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
