"""A joint model's log-probability of one side of a translation given the other, a feature of n-best lists.

The forward model (the ``bilm`` feature) gives the sum over a hypothesis' words of log p(word | its
history, the 2m+1 source words around its affiliated source word), with the exact softmax
(:mod:`mosesrnn.bilm.scoring`). The affiliation needs the hypothesis' word alignment, which Moses
writes into an n-best list with ``-print-alignment-info-in-n-best`` (its phrase table must hold word
alignments); with ``-include-segmentation-in-n-best`` too, the affiliation is searched inside each
phrase, exactly as the decoder's BilingualNPLM does.

The other directions (Devlin et al. 2014, Sec. 4; :mod:`mosesrnn.bilm.orientation`) are features of
their own, each reading the model file of its option: ``bilm-t2s`` (``--bilm-t2s``: log p(source |
hypothesis), the alignment reversed), ``bilm-r2l`` and ``bilm-t2s-r2l`` (read right to left). A model
file of another orientation than its option's is refused when the feature is built, before any work.
"""
from __future__ import annotations

import re
from typing import Sequence

from ..bilm.model_file import TrainedJoint
from ..bilm.orientation import FORWARD, JOINT_FEATURES
from ..bilm.scoring import aligned, linked, reoriented_scores, sentence_scores
from ..errors import MosesRNNError
from ..formats.nbest import NbestError
from .options import FeatureOptions
from .registry import FEATURES

__all__ = ["JointFeature", "alignment_fields", "build"]

_ALIGNMENT = re.compile(r"^\s*(\d+-\d+(\s+\d+-\d+)*)?\s*$")
_SEGMENTATION = re.compile(r"^\s*(\d+(-\d+)?=\d+(-\d+)?(\s+|$))+$")


def alignment_fields(pair) -> tuple[str, str | None]:
    """``(word alignment, segmentation or None)`` of an n-best pair's fields after the total; raises MosesRNNError
    when the list holds no word alignment."""
    extra = [field.strip() for field in getattr(pair, "extra", ())]
    segmentation = next((field for field in extra if field and _SEGMENTATION.match(field)), None)
    alignment = next((field for field in extra if field is not segmentation and _ALIGNMENT.match(field)), None)
    if alignment is None:
        raise MosesRNNError("the bilm features need each hypothesis' word alignment: decode with Moses' "
                            "-print-alignment-info-in-n-best (and -include-segmentation-in-n-best), from a phrase "
                            "table with word alignments")
    return alignment, segmentation


class JointFeature:
    """The log-probability of every n-best hypothesis (or of its source, target-to-source) under a joint model."""

    def __init__(self, model: TrainedJoint):
        self.model = model
        self.spec = FEATURES[model.orientation.feature]

    def settings(self) -> dict:
        """The model file's digest and its windows."""
        return {"model": self.model.digest, "order": self.model.order, "source_window": self.model.source_window}

    def values(self, pairs: Sequence) -> list[float]:
        """The log-probability of each hypothesis given its source (of its source given it, target-to-source),
        in order; raises NbestError naming the line of a hypothesis whose alignment fields do not fit it."""
        forward = self.model.orientation == FORWARD
        hypotheses = [_read(pair, forward) for pair in pairs]
        return sentence_scores(self.model, hypotheses) if forward else reoriented_scores(self.model, hypotheses)


def _read(pair, forward: bool):
    """An n-best pair with its alignment as the scorer of a ``forward`` model (an
    :class:`~mosesrnn.bilm.scoring.AlignedTranslation`) or of another one (:func:`~mosesrnn.bilm.scoring.linked`)
    reads it; NbestError at its line for fields that do not fit it."""
    try:
        alignment, segmentation = alignment_fields(pair)
        if forward:
            return aligned(pair.source, pair.target, alignment, segmentation)
        return linked(pair.source, pair.target, alignment)
    except ValueError as error:
        raise NbestError(pair.path, pair.line_no, str(error)) from None


def build(options: FeatureOptions, models, name: str = "bilm") -> JointFeature:
    """The feature ``name`` (``bilm``, ``bilm-t2s``...) over its option's model file; raises MosesRNNError for a model
    of another orientation."""
    wanted = JOINT_FEATURES[name]
    model = models.get(name, wanted.option)
    refusal = wanted.refusal(model.orientation, getattr(options, wanted.option))
    if refusal:
        raise MosesRNNError(refusal)
    return JointFeature(model)
