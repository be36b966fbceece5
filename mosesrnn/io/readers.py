"""Readers of files that close the file, and its decompressing thread, where the caller leaves them.

A generator over an open file closes it when it runs to its end or is closed. One left before its
end (a refusal, a look-ahead, a read of the first line) is otherwise closed by the garbage
collector, at any moment and in any thread: joining a gzip reader's thread there can deadlock
(a starting thread collects garbage while it holds the lock that ``Thread.join`` takes). So the
readers of :mod:`mosesrnn.formats` return a :class:`Reader`, used as ``with read_entries(path) as
entries:``, which closes the file where the block is left.
"""
from __future__ import annotations

import functools
import inspect
import warnings
from typing import Callable, Generator, Iterator, ParamSpec, TypeVar

__all__ = ["Reader", "reader"]

T = TypeVar("T")
P = ParamSpec("P")


class Reader(Iterator[T]):
    """The items of an open file, one pass; a context manager that closes the file when left.

    A reader run to its end, or whose reading raised, has closed its file already. One collected
    while suspended half-way without being closed warns :class:`ResourceWarning` and closes, as an
    unclosed file does (the tests turn the warning into an error).
    """

    _items: Generator[T, None, None] | None = None

    def __init__(self, items: Generator[T, None, None]):
        self._items = items

    def __iter__(self) -> "Reader[T]":
        return self

    def __next__(self) -> T:
        return next(self._items)

    def close(self) -> None:
        """Close the file (joining its decompressing thread) if it is open; reading then stops."""
        self._items.close()

    def __enter__(self) -> "Reader[T]":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __del__(self) -> None:
        if self._items is None or inspect.getgeneratorstate(self._items) != inspect.GEN_SUSPENDED:
            return
        name = self._items.__qualname__ if type(self) is Reader else type(self).__name__
        try:  # stacklevel=1: a warning of this module, whoever collects the reader (the tests make it an error)
            warnings.warn(f"{name} left open before its end: read it in a `with` block", ResourceWarning,
                          stacklevel=1, source=self)
        finally:
            self._items.close()  # now: a warning made an error keeps this frame, and the reader, alive


def reader(function: Callable[P, Generator[T, None, None]]) -> Callable[P, Reader[T]]:
    """Make a generator function that opens a file return a :class:`Reader` of its items."""
    @functools.wraps(function)
    def opened(*args: P.args, **kwargs: P.kwargs) -> Reader[T]:
        return Reader(function(*args, **kwargs))
    return opened
