"""Figures written as PNG files, whole or not at all."""
from __future__ import annotations

from .atomic import atomic_file

__all__ = ["save_png"]


def save_png(figure, path: str) -> None:
    """Write a matplotlib figure to ``path`` as PNG, atomically (nothing is left if it fails)."""
    with atomic_file(path) as stream:
        figure.savefig(stream, format="png")
