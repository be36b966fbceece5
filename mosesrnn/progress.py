"""Progress bars on stderr for long jobs, silent when asked or when stderr is not a terminal."""
from __future__ import annotations

import sys
from typing import Iterable, Iterator, TypeVar

from tqdm import tqdm

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

    def update_position(self, lines: int, bytes_read: int, bytes_total: int | None) -> None:
        """Show ``lines`` done, and the share of the input read when its size is known."""
        self._bar.update(lines - self._lines)
        self._lines = lines
        if bytes_total:
            share = min(bytes_read / bytes_total, 1.0)
            self._bar.set_postfix_str(f"{100 * share:.0f}% of input", refresh=False)
            if share > 0:
                self._bar.total = int(lines / share)
