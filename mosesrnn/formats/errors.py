"""Bad input in a file, reported as ``PATH:LINE: problem``."""
from __future__ import annotations

__all__ = ["FileLineError"]


class FileLineError(ValueError):
    """A problem at one line of an input file; the message names the file and the line."""

    def __init__(self, path: str, line_no: int, problem: str):
        super().__init__(f"{path}:{line_no}: {problem}")
        self.path, self.line_no, self.problem = path, line_no, problem
