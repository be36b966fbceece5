"""Ctrl-C and SIGTERM held back while a file that must be whole is saved.

A training stops after the update in progress on the first Ctrl-C, and at once on the second. At
once, but not in the middle of ``torch.save``: a KeyboardInterrupt raised there is raised inside
PyTorch's zip writer, which turns it into a ``RuntimeError`` (``inline_container.cc ... unexpected
pos``), a traceback instead of the one line of an interrupted run. :func:`signals_deferred` holds
SIGINT and SIGTERM back while a save runs and delivers them, in the order they came, as soon as it
is done: the file is whole, and then the run stops as the signal says (a first Ctrl-C asks the
training to stop, a second interrupts it, SIGTERM's default ends the process).

Deferrals nest (the outermost delivers); in a thread other than the main one, where Python runs no
signal handler, it does nothing.

Which signal stopped a run decides its exit status, as a shell reports a process a signal ended:
:func:`record_signal` notes it (the handlers of :mod:`mosesrnn.io.job` and the training loop call it),
:func:`interrupted_status` gives 128 + its number — 130 after Ctrl-C, 143 after SIGTERM.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

__all__ = ["signals_deferred", "interrupting", "record_signal", "interrupted_status"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_holding: list[list[int]] = []  # the signals held by the deferral in force (at most one)
_received: list[int] = []  # the last interrupting signal of this process, if one came


def record_signal(signum: int | None) -> None:
    """Note ``signum`` as the signal that stops the run (None: forget the last one, as a new run starts)."""
    _received[:] = [] if signum is None else [signum]


def interrupting(signum: int, frame) -> None:
    """A signal handler: note the signal and interrupt the main thread (KeyboardInterrupt), as Ctrl-C does."""
    record_signal(signum)
    raise KeyboardInterrupt


def interrupted_status() -> int:
    """The exit status of an interrupted run: 128 + the signal that stopped it (130 when none was noted)."""
    return 128 + (_received[0] if _received else signal.SIGINT)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back for the block, then deliver those that came (also used as a decorator)."""
    if threading.current_thread() is not threading.main_thread() or _holding:
        yield
        return
    held: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: held.append(signum)) for sig in _SIGNALS}
    _holding.append(held)
    try:
        yield
    finally:
        _holding.clear()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in held:  # as if each came now: the handlers in force before the save answer it
            signal.raise_signal(signum)
