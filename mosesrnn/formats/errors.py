"""Bad input in a file, reported as ``PATH:LINE: problem``, and the line reading that reports it."""
from __future__ import annotations

from typing import Iterable, Iterator

from ..errors import MosesRNNError

__all__ = ["FileLineError", "decoded_lines"]


class FileLineError(MosesRNNError):
    """A problem at one line of an input file; the message names the file and the line."""

    def __init__(self, path: str, line_no: int, problem: str):
        super().__init__(f"{path}:{line_no}: {problem}")
        self.path, self.line_no, self.problem = path, line_no, problem


def decoded_lines(stream: Iterable[bytes], path: str, encoding: str, error: type[FileLineError],
                  hint: str = "", skip_before: int = 1) -> Iterator[tuple[int, str | None]]:
    """``(line number, text)`` of every line of a binary stream, decoded with ``encoding``.

    Lines 2 .. ``skip_before - 1`` are not decoded (their text is None: a resumed job skips them).
    A truncated or corrupt compressed stream, or undecodable text, raises ``error`` naming the
    line (``hint`` is added to the message of undecodable text).
    """
    lines, line_no = iter(stream), 0
    while True:
        try:
            raw = next(lines)
        except StopIteration:
            return
        except (EOFError, OSError) as problem:  # truncated gzip, bad CRC
            raise error(path, line_no + 1, f"cannot read compressed data: {problem}") from None
        line_no += 1
        if 1 < line_no < skip_before:
            yield line_no, None
            continue
        try:
            yield line_no, raw.decode(encoding)
        except UnicodeDecodeError as problem:
            raise error(path, line_no, f"not valid {encoding} at byte {problem.start}{hint}") from None
