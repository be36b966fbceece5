"""Child processes that cannot outlive their parent, nor make it wait without end.

A :class:`Child` runs a function in a fresh Python process (:mod:`mosesrnn.runtime.child`: no thread, CUDA
context or open file of the parent is copied, and the caller's ``__main__`` is never run again) and talks to it
through two pipes it owns, one each way:

- the parent's messages go out on a thread of the child's own (``mosesrnn-send-N``), the function to run and its
  arguments first, so sending never waits for a busy child, nor for one that died before it read anything;
  :func:`receive` waits on every child's pipe at once, and a child that dies, also half-way through a message
  or before its first, closes it: an error at once (:class:`ChildDied`), never a wait;
- the child holds SIGINT and SIGTERM from its start and ignores them from its first instruction (they reach
  the whole process group: the parent decides what stops, and stops its children), and dies with its parent
  (Linux's ``PR_SET_PDEATHSIG``, elsewhere its inbox's end of file), whatever it is doing;
- :meth:`Child.stop` ends it in order (its inbox ends, it returns) within a deadline, :meth:`Child.kill` at
  once; neither waits on a pipe: a sending thread blocked on a dead child's pipe gets a broken pipe, since the
  parent keeps no copy of the child's ends.
"""
from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from .child import SIGNALS

__all__ = ["Child", "ChildDied", "receive", "spawned_children"]

_END = object()
#: Where the ``mosesrnn`` package lies: the child imports its first module from there, whatever its cwd holds.
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_BOOTSTRAP = f"import sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); from mosesrnn.runtime.child import main; main()"


class ChildDied(ChildProcessError):
    """A child process ended before it was asked to (killed, out of memory, crashed); ``then`` says what follows."""

    def __init__(self, name: str, exitcode: int | None, then: str = ""):
        if exitcode is None or exitcode >= 0:
            how = f"exit status {exitcode}" if exitcode is not None else "its pipe closed"
        else:
            how = f"killed by {signal.Signals(-exitcode).name}"
        hint = ": out of memory?" if exitcode == -signal.SIGKILL else ""
        super().__init__(f"{name} died ({how}){hint}{'; ' + then if then else ''}")
        self.name, self.exitcode = name, exitcode


class Child:
    """``target(messages, reply, *args)`` in a child process: ``messages`` yields what :meth:`send` sends (it
    ends at :meth:`stop`), ``reply(message)`` sends one back, read by :func:`receive`. ``target`` and ``args``
    must pickle (``target`` by its module and name). Start several at once with :func:`spawned_children`."""

    def __init__(self, name: str, target: Callable, args: Sequence = ()):
        self.name = name
        self.process: subprocess.Popen | None = None
        self._inbox: Connection | None = None
        self._outbox: Connection | None = None
        self._outgoing: queue.Queue = queue.Queue()
        self._outgoing.put(list(sys.path))
        self._outgoing.put((target, tuple(args)))
        self._sender = threading.Thread(target=self._send_all, name=f"mosesrnn-send-{name}", daemon=True)

    def start(self) -> None:
        """Start the process (and the thread that sends to it); the parent keeps no copy of the child's ends."""
        child_inbox, inbox = os.pipe()
        outbox, child_outbox = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, str(child_inbox), str(child_outbox), str(os.getpid())],
                stdin=subprocess.DEVNULL, pass_fds=(child_inbox, child_outbox))
        except BaseException:
            for end in (inbox, outbox):
                os.close(end)
            raise
        finally:
            for end in (child_inbox, child_outbox):
                os.close(end)
        self._inbox, self._outbox = Connection(inbox, readable=False), Connection(outbox, writable=False)
        self._sender.start()

    @property
    def pid(self) -> int | None:
        """The child's process id (None before it starts)."""
        return self.process.pid if self.process else None

    def send(self, message: Any) -> None:
        """Queue ``message`` for the child (never waits)."""
        self._outgoing.put(message)

    def stop(self, wait: float = 5.0) -> None:
        """End the child in order: its messages end, it returns; killed if it has not within ``wait`` seconds."""
        self._outgoing.put(_END)
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(wait)
        self.kill()

    def kill(self) -> None:
        """End the child at once (SIGKILL: it ignores the others) and release its pipes and thread."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(5.0)
        self._outgoing.put(_END)
        if self._sender.is_alive():  # blocked on the dead child's pipe: a broken pipe ends it
            self._sender.join(5.0)
        for end in (self._inbox, self._outbox):
            if end is not None:
                end.close()

    def exit_status(self, wait: float = 1.0) -> int | None:
        """The child's exit status (negative: the signal that killed it), waiting up to ``wait`` seconds for it;
        None while it runs."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.process.wait(wait)
        return None

    def _send_all(self) -> None:
        # A write to a dead child's pipe must raise here, not deliver SIGPIPE (which the CLI leaves fatal).
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPIPE})
        try:
            while (message := self._outgoing.get()) is not _END:
                self._inbox.send(message)
            self._inbox.send(None)
        except OSError:  # the child is gone; receive() reports it
            pass


def receive(children: Sequence[Child], timeout: float | None) -> tuple[Child, Any] | None:
    """The next message of any of ``children``, as ``(child, message)``; None when none came within ``timeout``
    seconds (None: no limit). Raises :class:`ChildDied` when one of them has died (after its last messages)."""
    by_pipe = {child._outbox: child for child in children}
    for pipe in wait(list(by_pipe), timeout):
        child = by_pipe[pipe]
        try:
            return child, pipe.recv()
        except (EOFError, OSError):  # died half-way through a message, before its first, or after its last
            raise ChildDied(child.name, child.exit_status()) from None
    return None


@contextlib.contextmanager
def spawned_children(children: Sequence[Child]) -> Iterator[Sequence[Child]]:
    """Start ``children`` and end them when the block is left: in order after success, at once after an error
    or an interruption. The children ignore SIGINT and SIGTERM from their start (one that comes while they start
    is held by them, then dropped; this process answers it as at any other time)."""
    try:
        with _held_by_new_processes():
            for child in children:
                child.start()
        yield children
    except BaseException:
        for child in children:
            child.kill()
        raise
    for child in children:
        child.stop()


@contextlib.contextmanager
def _held_by_new_processes() -> Iterator[None]:
    """SIGINT and SIGTERM blocked in this thread while it starts processes: a child inherits the mask across
    fork and exec, so its interpreter holds a signal of the group until its first instructions ignore them
    (:func:`mosesrnn.runtime.child.main`). This process' own handling is left as it is: a signal that comes
    meanwhile is taken by another of its threads and answered as at any other time. (Ignoring it here instead,
    for the children to inherit, lost it: a thread that does not block it takes it while it is ignored.)"""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
