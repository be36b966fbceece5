"""Feature columns appended to a phrase table's scores field.

Moses reads every score ``x`` as ``max(ln(x), -100)``, so a column meant to be seen as the value
``v`` is written as ``e^v``. Each feature is a small object with a ``name`` (as used in
``--features``), a ``describe()`` for the run's signature, and ``compute(entries)`` returning one
formatted value per entry.
"""
from __future__ import annotations

import math
from typing import Protocol, Sequence

from .phrase_table import PhraseEntry, words
from .vocab import VocabularyPair

__all__ = ["Feature", "UnknownWordFeature", "moses_exp", "UNK_SIDES"]

UNK_SIDES = ("source", "target", "both")


class Feature(Protocol):
    """A column of values appended to each line of a phrase table."""

    name: str

    def describe(self) -> str:
        """The feature and its settings, for the signature, e.g. ``unk(side=both)``."""

    def compute(self, entries: Sequence[PhraseEntry]) -> list[str]:
        """One formatted value per entry, in order."""


def moses_exp(value: float, digits: int | None = None) -> str:
    """Format ``e^value`` so that Moses' ``ln()`` gives back ``value``.

    ``digits=None`` writes the shortest exact representation of the double (for integer counts,
    which Moses must see exactly); otherwise ``digits`` significant digits. Values below
    ``e^-745`` underflow to ``0``, which Moses floors to -100 like any value below ``e^-100``.
    """
    result = math.exp(value)
    return repr(result) if digits is None else f"{result:.{digits}g}"


class UnknownWordFeature:
    """The paper's unknown-word penalty (§4.2): the number of words outside the shortlists.

    ``side`` counts the source words, the target words or both; the column holds ``e^n``.
    """

    name = "unk"

    def __init__(self, vocabularies: VocabularyPair, side: str = "both"):
        if side not in UNK_SIDES:
            raise ValueError(f"unknown-word side must be one of {', '.join(UNK_SIDES)}, not {side!r}")
        self.vocabularies, self.side = vocabularies, side
        self._cache: dict[int, str] = {}

    def describe(self) -> str:
        return f"unk(side={self.side},vocab={self.vocabularies.digest()})"

    def compute(self, entries: Sequence[PhraseEntry]) -> list[str]:
        count_source = self.side in ("source", "both")
        count_target = self.side in ("target", "both")
        source_vocabulary, target_vocabulary = self.vocabularies.source, self.vocabularies.target
        values, last_source, source_unknown = [], None, 0
        for entry in entries:
            n = 0
            if count_source:
                if entry.fields[0] != last_source:  # the targets of one source come together
                    last_source = entry.fields[0]
                    source_unknown = source_vocabulary.count_unknown(words(entry.source))
                n += source_unknown
            if count_target:
                n += target_vocabulary.count_unknown(words(entry.target))
            if n not in self._cache:
                self._cache[n] = moses_exp(n)
            values.append(self._cache[n])
        return values
