"""The paper's unknown-word penalty (C14 Sec. 4.2): the number of words outside the shortlists.

It counts Moses words (factor 0) against the word shortlists, whatever tokenizer the model uses,
so its meaning does not change with the model.
"""
from __future__ import annotations

from typing import Sequence

from ..text.tokenizers import words
from ..text.vocab import VocabularyPair
from .registry import FEATURES, FeatureOptions, Pair

__all__ = ["UNK_SIDES", "UnknownWordFeature", "build"]

UNK_SIDES = ("source", "target", "both")


class UnknownWordFeature:
    """The number of source words, target words or both (``side``) outside the shortlists."""

    spec = FEATURES["unk"]

    def __init__(self, vocabularies: VocabularyPair, side: str = "both"):
        if side not in UNK_SIDES:
            raise ValueError(f"unknown-word side must be one of {', '.join(UNK_SIDES)}, not {side!r}")
        self.vocabularies, self.side = vocabularies, side

    def settings(self) -> dict:
        """The counted side and the shortlists' digest."""
        return {"side": self.side, "vocab": self.vocabularies.digest()}

    def values(self, pairs: Sequence[Pair]) -> list[float]:
        """The unknown-word count of every pair, in order."""
        count_source = self.side in ("source", "both")
        count_target = self.side in ("target", "both")
        source_vocabulary, target_vocabulary = self.vocabularies.source, self.vocabularies.target
        values, last_source, source_unknown = [], None, 0
        for pair in pairs:
            n = 0
            if count_source:
                if pair.source != last_source:  # the targets of one source come together
                    last_source = pair.source
                    source_unknown = source_vocabulary.count_unknown(words(pair.source))
                n += source_unknown
            if count_target:
                n += target_vocabulary.count_unknown(words(pair.target))
            values.append(float(n))
        return values


def build(options: FeatureOptions) -> UnknownWordFeature:
    """The feature over the model's shortlists, or those of ``--vocab`` without a model."""
    if options.model is not None:
        vocabularies = options.trained_model("unk").vocabularies
    elif options.vocab is not None:
        vocabularies = VocabularyPair.load(options.vocab)
    else:
        raise ValueError("the unk feature needs a model file (-m MODEL) or shortlists (--vocab DIR)")
    return UnknownWordFeature(vocabularies, options.unk_side)
