"""Moses' escaped characters shown as text, for what people read (the labels of a plot).

Moses-tokenised text escapes ``' " & | < > [ ]`` (``&apos;``, ``&quot;``, ...); the phrases keep
their escapes everywhere else.
"""
from __future__ import annotations

import re

__all__ = ["display_text"]

_MOSES_ESCAPES = {"&apos;": "'", "&quot;": '"', "&amp;": "&", "&#124;": "|", "&lt;": "<", "&gt;": ">",
                  "&#91;": "[", "&#93;": "]"}
_ESCAPE = re.compile("|".join(map(re.escape, _MOSES_ESCAPES)))


def display_text(text: str) -> str:
    """Moses-escaped text as a reader expects it: ``l&apos; homme`` -> ``l' homme``.

    >>> display_text("c &apos;est &amp;#124; &#124;")
    "c 'est &#124; |"
    """
    return _ESCAPE.sub(lambda match: _MOSES_ESCAPES[match.group(0)], text)
