"""What the commands share: option types, logging to stderr, and library errors as clean CLI errors."""
from __future__ import annotations

import contextlib
import logging
import re
import signal
import sys
from typing import Iterator

import click

__all__ = ["TABLE", "ENCODING", "QUIET", "DEVICE", "THREADS", "setup_logging", "fail", "interrupt_on_signals",
           "parse_duration", "duration"]

TABLE = click.Path(dir_okay=False, allow_dash=True)
ENCODING = click.option(
    "--encoding", default="utf-8", show_default=True,
    help="Text encoding of the phrase table; Moses tables are UTF-8. Use e.g. latin-1 to read a "
         "legacy table on purpose (the output is always UTF-8).")
QUIET = click.option("--quiet", "-q", is_flag=True, help="No progress bar or log messages, only errors.")
DEVICE = click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
                      help="auto = cuda if available, else cpu.")
THREADS = click.option("--threads", type=click.IntRange(1), help="CPU threads for torch (default: torch's choice).")


def setup_logging(quiet: bool) -> None:
    """Log ``mosesrnn: ...`` lines to stderr (warnings and errors only when ``quiet``).

    Only our own loggers speak at INFO level; libraries (matplotlib's font cache...) only warn.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("mosesrnn: %(message)s"))
    for name in ("mosesrnn", "moses_integration"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(logging.WARNING if quiet else logging.INFO)
        logger.propagate = False


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """Inside the block, SIGINT (Ctrl-C) and SIGTERM (a scheduler's preemption, ``kill``) raise
    KeyboardInterrupt, so the job stops cleanly, also when started with SIGINT ignored (as a
    background job of a script is), the way ``train`` does."""
    previous = {sig: signal.signal(sig, signal.default_int_handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def fail(error: Exception) -> click.ClickException:
    """A library error as a click error: its message on stderr, exit status 1."""
    return click.ClickException(str(error))


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``90``, ``90s``, ``10m``, ``1h30m`` or ``1.5h``."""
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms]?)", text.strip().lower())
    if not parts or "".join(number + unit for number, unit in parts) != text.strip().lower():
        raise ValueError(f"not a duration: {text!r} (examples: 600, 90s, 10m, 1h30m)")
    return sum(float(number) * {"h": 3600, "m": 60, "s": 1, "": 1}[unit] for number, unit in parts)


def duration(ctx, param, value):
    """Click callback: '10m' -> 600.0 seconds."""
    try:
        return None if value is None else parse_duration(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
