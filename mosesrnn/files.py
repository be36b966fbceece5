"""Files that appear whole or not at all."""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import BinaryIO, Iterator

__all__ = ["atomic_file"]


@contextlib.contextmanager
def atomic_file(path: str, suffix: str = ".part") -> Iterator[BinaryIO]:
    """Open ``path`` for binary writing so that it appears only when the block succeeds.

    Data goes to a temporary file in the same directory (so the final rename is atomic), which
    is renamed over ``path`` at the end and removed on error.
    """
    directory = os.path.dirname(os.path.abspath(path))
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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
