"""The CSLM's log-probability of a whole translation, a feature of n-best lists (C14 Sec. 5.1.1).

The value of a hypothesis is its sentence log-probability under the CSLM: the sum over its words
and ``</s>`` of log p(word | the n-1 before it), the sentence padded with ``<s>`` as Moses pads it
(:mod:`mosesrnn.cslm.scoring`), with the exact softmax. The source sentence plays no part.
"""
from __future__ import annotations

from typing import Sequence

from ..cslm.model_file import TrainedCSLM
from ..cslm.scoring import sentence_scores
from .options import FeatureOptions
from .registry import FEATURES, Pair

__all__ = ["CSLMFeature", "build"]


class CSLMFeature:
    """log p(target) of every pair's target sentence under a CSLM."""

    spec = FEATURES["cslm"]

    def __init__(self, trained: TrainedCSLM):
        self.trained = trained

    def settings(self) -> dict:
        """The model file's digest and its order."""
        return {"model": self.trained.digest, "order": self.trained.model.config.order}

    def values(self, pairs: Sequence[Pair]) -> list[float]:
        """The sentence log-probability of each pair's target, in order."""
        return sentence_scores(self.trained, [pair.target for pair in pairs])


def build(options: FeatureOptions, models) -> CSLMFeature:
    """The feature over ``--lm``."""
    return CSLMFeature(models.get("cslm", "lm"))
