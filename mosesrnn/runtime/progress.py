"""Progress of long jobs on stderr: a bar on a terminal, a log line every few minutes elsewhere.

Under nohup, Slurm or a pipe, stderr is no terminal and a bar would be noise; a job that prints
nothing for hours is no better. So :class:`Progress` draws a tqdm bar when stderr is a terminal,
and otherwise logs one line every ``interval`` seconds (5 minutes by default) with what is done,
the rate and, when the size of the work is known, the time left. ``quiet`` silences both.
"""
from __future__ import annotations

import logging
import sys
import time
from typing import Iterable, Iterator, TypeVar

from tqdm import tqdm

__all__ = ["Progress", "LOG_INTERVAL"]

log = logging.getLogger("mosesrnn")
T = TypeVar("T")

#: Seconds between two progress lines when stderr is not a terminal.
LOG_INTERVAL = 300.0


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


class Progress:
    """The progress of one job counting ``unit`` (see the module docstring); use it as a context manager.

    ``total``: the count when known; :meth:`update_position` can also estimate it from the share of
    the (compressed) input read.
    """

    def __init__(self, description: str, quiet: bool = False, unit: str = "lines", total: int | None = None,
                 initial: int = 0, interval: float = LOG_INTERVAL, terminal: bool | None = None):
        terminal = sys.stderr.isatty() if terminal is None else terminal
        self.description, self.unit, self.total, self.interval = description, unit, total, interval
        self._bar = tqdm(desc=description, unit=unit, unit_scale=True, disable=quiet or not terminal, total=total,
                         initial=initial, dynamic_ncols=True, smoothing=0.1)
        self._logs = not quiet and not terminal
        self._done, self._started, self._logged = initial, time.monotonic(), time.monotonic()
        self._first = initial
        self._postfix = ""

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc_info) -> None:
        self._bar.close()

    def update(self, count: int = 1, postfix: str | None = None) -> None:
        """``count`` more units done (``postfix``: a few words shown after the rate, e.g. the loss)."""
        self._done += count
        if postfix is not None:
            self._postfix = postfix
            self._bar.set_postfix_str(postfix, refresh=False)
        self._bar.update(count)
        self._maybe_log()

    def update_position(self, done: int, bytes_read: int = 0, bytes_total: int | None = None) -> None:
        """``done`` units in all; with the bytes of the input read, the total is estimated from their share."""
        if bytes_total and self.total is None and bytes_read:
            share = min(bytes_read / bytes_total, 1.0)
            self._bar.total = int(done / share) if share > 0 else None
        self.update(done - self._done)

    def track(self, items: Iterable[T], every: int = 10000) -> Iterator[T]:
        """Yield ``items``, counting them in steps of ``every``."""
        count = 0
        for count, item in enumerate(items, start=1):
            if count % every == 0:
                self.update(every)
            yield item
        self.update(count % every)

    def _maybe_log(self) -> None:
        now = time.monotonic()
        if not self._logs or now - self._logged < self.interval:
            return
        self._logged = now
        rate = (self._done - self._first) / max(now - self._started, 1e-9)
        total = self.total or self._bar.total
        left = f", {_duration((total - self._done) / rate)} left" if total and rate > 0 and total > self._done else ""
        of = f" of {total:,}" if total else ""
        extra = f", {self._postfix}" if self._postfix else ""
        log.info("%s: %s%s %s done, %.0f %s/s%s%s", self.description, f"{self._done:,}", of, self.unit, rate,
                 self.unit, left, extra)
