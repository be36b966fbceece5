"""The first instructions of a child process of :mod:`mosesrnn.runtime.processes`, run as a program of its own.

A child is a fresh interpreter (``python -c`` importing :func:`main`), not a ``multiprocessing`` process: it
never re-runs the caller's ``__main__`` (a script without ``if __name__ == "__main__":`` would start its whole
job again in every child), and nothing is written to it before it runs. Its two pipes, inherited as file
descriptors, are named on its command line; what it runs comes as the first messages on its inbox, sent by the
parent's sending thread: the parent's ``sys.path`` (so that it imports the same modules), then the function and
its arguments. A child that dies before it has read them breaks the sending thread's pipe, which the parent
reads as its death: nothing waits on it.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from multiprocessing.connection import Connection
from typing import Any, Iterator

__all__ = ["main", "SIGNALS"]

#: The signals a run's whole process group receives; the parent decides what stops, its children ignore them.
SIGNALS = (signal.SIGINT, signal.SIGTERM)
_PR_SET_PDEATHSIG = 1


def main() -> None:
    """The child's program: ``argv`` holds its inbox's and outbox's descriptors and the parent's pid.

    It ignores the group's signals (held since it started: one that came is dropped), dies with the parent,
    reads its work from the inbox and runs it: ``target(messages, reply, *args)``.
    """
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
    inbox_fd, outbox_fd, parent = map(int, sys.argv[1:4])
    with contextlib.suppress(OSError, AttributeError):  # not Linux: the inbox's end of file ends the child
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(0)
    inbox, outbox = Connection(inbox_fd, writable=False), Connection(outbox_fd, readable=False)
    try:
        sys.path[:] = inbox.recv()
        target, args = inbox.recv()
        target(_messages(inbox), outbox.send, *args)
    except (BrokenPipeError, EOFError):  # the parent is gone, or stopped us before any work: nobody to answer
        os._exit(0)


def _messages(inbox: Connection) -> Iterator[Any]:
    """The parent's messages, until it stops the child (None) or is gone (end of file)."""
    while True:
        try:
            message = inbox.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        yield message
