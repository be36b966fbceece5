"""The sha256 of a file's content, streamed, and remembered within the process.

A file is hashed once per process for as long as it stays the same file: the digest is kept under its
device, inode, size and modification time, so a file rewritten, replaced (a rebuilt program, a re-exported
model) or touched is read again, and one asked for twice is read once.
"""
from __future__ import annotations

import hashlib
import os

from .compressed import open_raw

__all__ = ["content_sha256"]

_KNOWN: dict[tuple, str] = {}  # (realpath, device, inode, size, mtime_ns) -> hex digest


def content_sha256(path: str) -> str:
    """The hex sha256 of the bytes of the declared input ``path`` (a link: of the file it leads to), read
    in chunks: a file of gigabytes costs no memory."""
    status = os.stat(path)
    key = (os.path.realpath(path), status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
    if key not in _KNOWN:
        with open_raw(path) as stream:
            _KNOWN[key] = hashlib.file_digest(stream, "sha256").hexdigest()
    return _KNOWN[key]
