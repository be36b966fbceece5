"""Figures: written as PNG files whole or not at all, with Moses' escaped tokens shown as text.

Moses-tokenised text escapes ``' " & | < > [ ]`` (``&apos;``, ``&quot;``, ...); the phrases keep
their escapes everywhere else, but a plot is read by people, so its labels show the characters.
"""
from __future__ import annotations

import re

from .files import atomic_file

__all__ = ["save_png", "display_text"]

_MOSES_ESCAPES = {"&apos;": "'", "&quot;": '"', "&amp;": "&", "&#124;": "|", "&lt;": "<", "&gt;": ">",
                  "&#91;": "[", "&#93;": "]"}
_ESCAPE = re.compile("|".join(map(re.escape, _MOSES_ESCAPES)))


def display_text(text: str) -> str:
    """Moses-escaped text as a reader expects it: ``l&apos; homme`` -> ``l' homme``.

    >>> display_text("c &apos;est &amp;#124; &#124;")
    "c 'est &#124; |"
    """
    return _ESCAPE.sub(lambda match: _MOSES_ESCAPES[match.group(0)], text)


def save_png(figure, path: str) -> None:
    """Write a matplotlib figure to ``path`` as PNG, atomically (nothing is left if it fails)."""
    with atomic_file(path) as stream:
        figure.savefig(stream, format="png")
