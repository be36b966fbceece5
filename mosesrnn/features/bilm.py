"""The joint model's log-probability of a translation given its source, a feature of n-best lists.

The value of a hypothesis is the sum over its words of log p(word | its history, the 2m+1 source
words around its affiliated source word) under the joint model, with the exact softmax
(:mod:`mosesrnn.bilm.scoring`). The affiliation needs the hypothesis' word alignment, which Moses
writes into an n-best list with ``-print-alignment-info-in-n-best`` (its phrase table must hold word
alignments); with ``-include-segmentation-in-n-best`` too, the affiliation is searched inside each
phrase, exactly as the decoder's BilingualNPLM does.
"""
from __future__ import annotations

import re
from typing import Sequence

from ..bilm.model_file import JointModel
from ..bilm.scoring import AlignedTranslation, aligned, sentence_scores
from ..formats.nbest import NbestError
from .options import FeatureOptions
from .registry import FEATURES

__all__ = ["JointFeature", "alignment_fields", "build"]

_ALIGNMENT = re.compile(r"^\s*(\d+-\d+(\s+\d+-\d+)*)?\s*$")
_SEGMENTATION = re.compile(r"^\s*(\d+(-\d+)?=\d+(-\d+)?(\s+|$))+$")


def alignment_fields(pair) -> tuple[str, str | None]:
    """``(word alignment, segmentation or None)`` of an n-best pair's fields after the total; raises ValueError
    when the list holds no word alignment."""
    extra = [field.strip() for field in getattr(pair, "extra", ())]
    segmentation = next((field for field in extra if field and _SEGMENTATION.match(field)), None)
    alignment = next((field for field in extra if field is not segmentation and _ALIGNMENT.match(field)), None)
    if alignment is None:
        raise ValueError("the bilm feature needs each hypothesis' word alignment: decode with Moses' "
                         "-print-alignment-info-in-n-best (and -include-segmentation-in-n-best), from a phrase table "
                         "with word alignments")
    return alignment, segmentation


class JointFeature:
    """log p(target | source) of every n-best hypothesis under a joint model."""

    spec = FEATURES["bilm"]

    def __init__(self, model: JointModel):
        self.model = model

    def settings(self) -> dict:
        """The model file's digest and its windows."""
        return {"model": self.model.digest, "order": self.model.order, "source_window": self.model.source_window}

    def values(self, pairs: Sequence) -> list[float]:
        """The log-probability of each hypothesis given its source, in order; raises NbestError naming the line
        of a hypothesis whose alignment fields do not fit it."""
        return sentence_scores(self.model, [_aligned(pair) for pair in pairs])


def _aligned(pair) -> AlignedTranslation:
    """The hypothesis of an n-best pair with its words' affiliations, or NbestError at its line."""
    try:
        return aligned(pair.source, pair.target, *alignment_fields(pair))
    except ValueError as error:
        raise NbestError(pair.path, pair.line_no, str(error)) from None


def build(options: FeatureOptions, models) -> JointFeature:
    """The feature over ``--bilm``."""
    return JointFeature(models.get("bilm", "bilm"))
