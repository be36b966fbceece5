"""The jobs running in this process, and the check every reader and writer of this floor makes.

A :class:`~mosesrnn.io.job.Job` registers here while it runs; :func:`check_read` and
:func:`check_write` refuse a path the innermost job was not declared with. Outside every job (a
library function called from Python) nothing is refused.
"""
from __future__ import annotations

from typing import Protocol

__all__ = ["UndeclaredFileError", "Declared", "enter", "leave", "innermost", "check_read", "check_write",
           "declare_input"]


class UndeclaredFileError(RuntimeError):
    """A run reached a file its job was not declared with: a bug in the command, not bad input."""


class Declared(Protocol):
    """What a running job answers: may the run read or write this path?"""

    def may_read(self, path: str) -> bool:
        """Whether the run declared ``path`` as something it reads."""

    def may_write(self, path: str) -> bool:
        """Whether the run declared ``path`` as something it writes."""

    def add_input(self, path: str) -> None:
        """Declare one more file the run reads."""


_RUNNING: list[Declared] = []  # innermost last; process-wide, so that reader threads check too


def enter(job: Declared) -> None:
    """Register ``job`` as the innermost running job."""
    _RUNNING.append(job)


def leave(job: Declared) -> None:
    """Unregister ``job``."""
    _RUNNING.remove(job)


def innermost() -> Declared | None:
    """The innermost running job, or None."""
    return _RUNNING[-1] if _RUNNING else None


def check_read(path: str) -> None:
    """Raise :class:`UndeclaredFileError` if the running job may not read ``path``."""
    job = innermost()
    if job is not None and path != "-" and not job.may_read(path):
        raise UndeclaredFileError(f"{path} is read, but the run declared no such input: a bug, please report it")


def check_write(path: str) -> None:
    """Raise :class:`UndeclaredFileError` if the running job may not write ``path``."""
    job = innermost()
    if job is not None and path != "-" and not job.may_write(path):
        raise UndeclaredFileError(f"{path} is written, but the run declared no such output: a bug, please report it")


def declare_input(path: str) -> None:
    """Declare, to the running jobs, a file that a declared input names (a table of a moses.ini): the run reads
    it too. Only reads are declared this way; what a run writes is declared before it starts."""
    for job in _RUNNING:
        job.add_input(path)
