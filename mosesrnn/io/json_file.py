"""Reading the JSON files mosesrnn writes beside its outputs (sidecars, companions, descriptors, records).

Every reader goes through :func:`read_json` (or :func:`parse_json` for bytes it read itself), so that a
damaged file is refused in one line naming it, and the line and column where JSON stopped making sense:
``PATH:LINE:COLUMN: not WHAT (why)``, never a bare ``JSONDecodeError``.
"""
from __future__ import annotations

import json

from ..errors import MosesRNNError
from .compressed import read_bytes

__all__ = ["parse_json", "read_json"]


def parse_json(data: bytes, path: str, what: str) -> object:
    """The JSON value of ``data``, the bytes of ``path``; raises MosesRNNError naming ``path`` (and the line and
    column) for bytes that are not UTF-8 JSON, saying that the file is not ``what``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MosesRNNError(f"{path}: not {what} (not valid UTF-8 at byte {error.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise MosesRNNError(f"{path}:{error.lineno}:{error.colno}: not {what} ({error.msg})") from None
    except RecursionError:
        raise MosesRNNError(f"{path}: not {what} (nested too deeply)") from None


def read_json(path: str, what: str) -> object:
    """The JSON value in the file ``path`` (gzip read transparently); raises MosesRNNError as :func:`parse_json`
    does, FileNotFoundError for a missing file."""
    return parse_json(read_bytes(path), path, what)
