"""Child processes and the signals of a run (mosesrnn.runtime.processes).

SIGINT and SIGTERM reach a whole process group; the parent decides what stops. A signal that comes while
the children start must reach the parent (it was lost when the parent ignored the signals for its children
to inherit: another of its threads took it while ignored), and must not reach a child whose interpreter is
still starting (it would die with a traceback).
"""
from __future__ import annotations

import os
import signal
import threading

from mosesrnn.runtime.processes import Child, receive, spawned_children


def _echo(messages, reply) -> None:
    for message in messages:
        reply(message)


def test_a_signal_while_the_children_start_reaches_the_parent_and_spares_them(monkeypatch):
    received: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    idle = threading.Event()
    bystander = threading.Thread(target=idle.wait)  # a thread that does not hold the signal, as a run has
    bystander.start()
    start = Child.start

    def start_then_signal(child: Child) -> None:
        start(child)
        os.kill(child.process.pid, signal.SIGTERM)  # the child's interpreter is still starting
        if child.name == "first":
            os.kill(os.getpid(), signal.SIGTERM)  # this process, between the two starts

    monkeypatch.setattr(Child, "start", start_then_signal)
    children = [Child("first", _echo), Child("second", _echo)]
    try:
        with spawned_children(children):
            for child in children:
                child.send(child.name)
            replies = sorted(receive(children, 60)[1] for _ in children)
    finally:
        idle.set()
        bystander.join()
        signal.signal(signal.SIGTERM, previous)
    assert replies == ["first", "second"]  # both lived through the signal (receive raises for a dead one)
    assert received == [signal.SIGTERM]
