"""The ``mosesrnn`` program's entry point, light on purpose.

Its commands' modules take a quarter of a second to import, and a Ctrl-C in that time would end the
program with a Python traceback (and, CPython 3.11, "killed by SIGINT": see :func:`mosesrnn.cli.run`).
Here SIGINT and SIGTERM are answered before anything heavy is imported: one line and the exit status of
an interrupted run (130, 143), nothing having been done yet. Then :func:`mosesrnn.cli.run` takes over
with the commands' own handling.
"""
from __future__ import annotations

import os
import signal

__all__ = ["main"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _starting(signum: int, frame) -> None:
    os.write(2, b"mosesrnn: interrupted while starting: nothing done\n")
    os._exit(128 + signum)


def main() -> None:
    """Run the ``mosesrnn`` command line (``sys.argv``)."""
    previous = {sig: signal.signal(sig, _starting) for sig in _SIGNALS}
    from .cli import run

    for sig, handler in previous.items():
        signal.signal(sig, handler)
    run()
