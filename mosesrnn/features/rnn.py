"""The RNN Encoder-Decoder's log p(target | source) as a feature column: the encoder-decoder's
:class:`~mosesrnn.encdec.scoring.PairScorer` with a registry entry."""
from __future__ import annotations

from typing import Sequence

from ..encdec.direction import SOURCE_TO_TARGET, opposite, probability
from ..encdec.model_file import TrainedModel
from ..encdec.scoring import PairScorer
from .options import FeatureOptions
from .registry import FEATURES, Pair

__all__ = ["RNNFeature", "build", "build_reverse"]


class RNNFeature(PairScorer):
    """The rnn column: log p(output side | input side) under a trained model (see
    :class:`~mosesrnn.encdec.scoring.PairScorer`); ``spec`` names the column: ``rnn``, or ``rnn-rev``
    for the second model of the other direction."""

    def __init__(self, trained: TrainedModel, *, spec=FEATURES["rnn"], **options):
        super().__init__(trained, name=spec.name, **options)
        self.spec = spec

    def values(self, pairs: Sequence[Pair]) -> list[float]:
        """log p(output side | input side) of every pair, in order (normalised if asked)."""
        return self.log_probs(pairs)


def build(options: FeatureOptions, models) -> RNNFeature:
    """The feature over ``--model``, with the scoring options."""
    return RNNFeature(models.get("rnn"), direction=options.direction, device=models.device, dtype=options.dtype,
                      batch_tokens=options.batch_tokens, length_normalize=options.length_normalize)


def build_reverse(options: FeatureOptions, models) -> RNNFeature:
    """The feature over ``--reverse-model``, which must score the direction opposite to rnn's
    (``--direction``, else the ``-m`` model's, else source-to-target): p(source | target) beside
    p(target | source), as Moses keeps both translation directions."""
    forward = options.direction or (models.get("rnn").direction if options.model else SOURCE_TO_TARGET)
    wanted = opposite(forward)
    trained = models.get("rnn-rev", "reverse_model")
    if trained.direction != wanted:
        raise ValueError(f"--reverse-model {options.reverse_model} was trained {trained.direction} (it scores "
                         f"{probability(trained.direction)}); rnn-rev needs a model trained {wanted} "
                         f"(mosesrnn train TABLE --direction {wanted})")
    return RNNFeature(trained, spec=FEATURES["rnn-rev"], direction=wanted, device=models.device,
                      dtype=options.dtype, batch_tokens=options.batch_tokens,
                      length_normalize=options.length_normalize)
