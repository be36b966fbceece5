"""Progress bars on stderr for long jobs, silent when asked or when stderr is not a terminal."""
from __future__ import annotations

import contextlib
import sys
import threading
from typing import Iterable, Iterator, TypeVar

from tqdm import tqdm

from .formats.compressed import count_lines

T = TypeVar("T")


class ProgressBar:
    """A tqdm bar counting lines; with the compressed bytes read it also shows the ETA.

    Use as a context manager; ``update_position`` suits the scorer's progress callback and
    ``track_entries`` wraps any iterable.
    """

    def __init__(self, description: str, quiet: bool = False, unit: str = "lines"):
        enabled = not quiet and sys.stderr.isatty()
        self._bar = tqdm(desc=description, unit=unit, unit_scale=True, disable=not enabled,
                         dynamic_ncols=True, smoothing=0.1)
        self._lines = 0
        self._total_lines: int | None = None
        self._counting = False  # while lines are being counted, the bytes read are no estimate

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc_info) -> None:
        self._bar.close()

    def track_entries(self, items: Iterable[T], every: int = 10000) -> Iterator[T]:
        """Yield ``items``, advancing the bar every ``every`` items."""
        count = 0
        for count, item in enumerate(items, start=1):
            if count % every == 0:
                self._bar.update(every)
            yield item
        self._bar.update(count % every)

    def count_lines_in_background(self, path: str) -> None:
        """Count the lines of ``path`` on a thread; once known, they are the bar's total (exact ETA)."""
        def count() -> None:
            with contextlib.suppress(Exception):  # only the ETA is lost
                self._total_lines = count_lines(path)

        if not self._bar.disable:
            self._counting = True
            threading.Thread(target=count, name="mosesrnn-line-count", daemon=True).start()

    def update_position(self, lines: int, bytes_read: int, bytes_total: int | None) -> None:
        """Show ``lines`` done, against the counted total when known, else the share of the input read."""
        self._bar.update(lines - self._lines)
        self._lines = lines
        if self._total_lines:
            self._bar.total = self._total_lines
        elif bytes_total and not self._counting:
            share = min(bytes_read / bytes_total, 1.0)
            self._bar.set_postfix_str(f"{100 * share:.0f}% of input", refresh=False)
            if share > 0:
                self._bar.total = int(lines / share)
