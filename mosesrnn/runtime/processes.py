"""Child processes that cannot outlive their parent, nor make it wait without end.

A :class:`Child` runs a function in a spawned Python process (no thread, CUDA context or open file of the
parent is copied) and talks to it through two pipes it owns, one each way:

- the parent's messages go out on a thread of the child's own (``mosesrnn-send-N``), so sending never waits
  for a busy child; :func:`receive` waits on every child's pipe *and its death* at once, so a child that dies,
  also half-way through a message, is an error at once (:class:`ChildDied`), never a wait;
- the child holds SIGINT and SIGTERM from its start and ignores them from its first instruction (they reach
  the whole process group: the parent decides what stops, and stops its children), and dies with its parent
  (Linux's ``PR_SET_PDEATHSIG``, elsewhere its inbox's end of file), whatever it is doing;
- :meth:`Child.stop` ends it in order (its inbox ends, it returns) within a deadline, :meth:`Child.kill` at
  once; neither waits on a pipe: a sending thread blocked on a dead child's pipe gets a broken pipe, since the
  parent keeps no copy of the child's ends.
"""
from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import threading
from multiprocessing import resource_tracker
from typing import Any, Callable, Iterator, Sequence

__all__ = ["Child", "ChildDied", "receive", "spawned_children"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_PR_SET_PDEATHSIG = 1
_END = object()


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
    """``target(messages, reply, *args)`` in a spawned process: ``messages`` yields what :meth:`send` sends (it
    ends at :meth:`stop`), ``reply(message)`` sends one back, read by :func:`receive`. Start several at once
    with :func:`spawned_children`."""

    def __init__(self, name: str, target: Callable, args: Sequence = ()):
        context = multiprocessing.get_context("spawn")
        child_inbox, self._inbox = context.Pipe(duplex=False)
        self._outbox, child_outbox = context.Pipe(duplex=False)
        self.name = name
        self.process = context.Process(target=_child_main, name=name, daemon=True,
                                       args=(target, child_inbox, child_outbox, os.getpid(), tuple(args)))
        self._child_ends = (child_inbox, child_outbox)
        self._outgoing: queue.Queue = queue.Queue()
        self._sender = threading.Thread(target=self._send_all, name=f"mosesrnn-send-{name}", daemon=True)

    def start(self) -> None:
        """Start the process (and the thread that sends to it); the parent keeps no copy of the child's ends."""
        self.process.start()
        for end in self._child_ends:
            end.close()
        self._sender.start()

    def send(self, message: Any) -> None:
        """Queue ``message`` for the child (never waits)."""
        self._outgoing.put(message)

    def stop(self, wait: float = 5.0) -> None:
        """End the child in order: its messages end, it returns; killed if it has not within ``wait`` seconds."""
        self._outgoing.put(_END)
        self.process.join(wait)
        self.kill()

    def kill(self) -> None:
        """End the child at once (SIGKILL: it ignores the others) and release its pipes and thread."""
        if self.process.pid is not None and self.process.exitcode is None:
            self.process.kill()
            self.process.join(5.0)
        self._outgoing.put(_END)
        if self._sender.is_alive():  # blocked on the dead child's pipe: a broken pipe ends it
            self._sender.join(5.0)
        for end in (self._inbox, self._outbox, *self._child_ends):
            end.close()
        with contextlib.suppress(ValueError):  # a process that never started has nothing to release
            self.process.close()

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
    by_key: dict = {}
    for child in children:
        by_key[child._outbox] = child
        by_key[child.process.sentinel] = child
    ready = multiprocessing.connection.wait(list(by_key), timeout)
    for key in sorted(ready, key=lambda key: isinstance(key, int)):  # messages before deaths
        child = by_key[key]
        if isinstance(key, int):
            raise _death(child)
        try:
            return child, key.recv()
        except (EOFError, OSError):  # died half-way through a message, or after its last
            raise _death(child) from None
    return None


def _death(child: Child) -> ChildDied:
    # Its pipes close as it exits, a moment before its exit status can be read.
    child.process.join(1.0)
    return ChildDied(child.name, child.process.exitcode)


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
    (:func:`_child_main`). This process' own handling is left as it is: a signal that comes meanwhile is taken
    by another of its threads and answered as at any other time. (Ignoring it here instead, for the children
    to inherit, lost it: a thread that does not block it takes it while it is ignored.)

    multiprocessing's resource tracker, which a spawned process needs, is started first: starting it holds the
    same two signals and then *unblocks* them, which inside the block would let the next child start without
    them held."""
    resource_tracker.ensure_running()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _child_main(target: Callable, inbox, outbox, parent: int, args: tuple) -> None:
    """The child's first instructions: ignore the group's signals (held since it started: one that came is
    dropped), die with the parent, then run ``target``."""
    for sig in _SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    with contextlib.suppress(OSError, AttributeError):  # not Linux: the inbox's end of file ends the child
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(0)
    try:
        target(_messages(inbox), outbox.send, *args)
    except BrokenPipeError:  # the parent is gone: nobody to answer
        os._exit(0)


def _messages(inbox) -> Iterator[Any]:
    """The parent's messages, until it stops the child (None) or is gone (end of file)."""
    while True:
        try:
            message = inbox.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        yield message
