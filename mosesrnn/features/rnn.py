"""The RNN Encoder-Decoder's log p(target | source) as a feature column: the encoder-decoder's
:class:`~mosesrnn.encdec.scoring.PairScorer` with a registry entry.

``normalizer="skip"`` writes the raw score without the softmax normaliser (several times faster); it is
built only for a model trained self-normalised (``train --self-norm``) whose mean log Z on its validation
pairs is within the CSLM's bound (:func:`~mosesrnn.cslm.export.check_self_normalised`).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..encdec.direction import SOURCE_TO_TARGET, opposite, probability
from ..encdec.model_file import TrainedEncoderDecoder
from ..encdec.scoring import PairScorer
from ..errors import MosesRNNError
from ..runtime.devices import default_batch_tokens
from .options import FeatureOptions
from .registry import FEATURES, Pair

__all__ = ["RNNFeature", "build", "build_reverse", "check_compiles", "check_skip_normalizer"]


class RNNFeature(PairScorer):
    """The rnn column: log p(output side | input side) under a trained model (see
    :class:`~mosesrnn.encdec.scoring.PairScorer`); ``spec`` names the column: ``rnn``, or ``rnn-rev``
    for the second model of the other direction."""

    def __init__(self, trained: TrainedEncoderDecoder, *, spec=FEATURES["rnn"], **options):
        super().__init__(trained, name=spec.name, **options)
        self.spec = spec

    def values(self, pairs: Sequence[Pair]) -> list[float]:
        """log p(output side | input side) of every pair, in order (normalised if asked; the raw score
        with ``normalizer="skip"``)."""
        return self.log_probs(pairs)

    def compute(self, encoded) -> np.ndarray:
        """:meth:`values` of pairs already in ids (by :attr:`encoder`, maybe in a worker process), as float64."""
        return self.score(encoded)

    def start(self, encoded) -> Callable[[], np.ndarray]:
        """:meth:`compute`, started (on a GPU, queued without waiting: :meth:`launch`); call the result for the
        values."""
        return self.launch(encoded).values


def check_skip_normalizer(trained: TrainedEncoderDecoder, path: str) -> None:
    """Raise MosesRNNError unless the model file ``path`` was trained self-normalised and its mean log Z on its
    validation pairs is near 0: skipping the normaliser would otherwise move every score by log Z a position."""
    if not trained.info.get("self_norm"):
        raise MosesRNNError(f"{path} was not trained self-normalised, so --normalizer skip would write its raw scores "
                            f"off by log Z at every position: train it with `mosesrnn train --self-norm 0.1`, or score "
                            f"with --normalizer exact")
    from ..cslm.export import check_self_normalised  # the CSLM's bound: one definition for both
    check_self_normalised(trained.info, path)


def check_compiles(trained: TrainedEncoderDecoder, path: str) -> None:
    """Raise MosesRNNError unless the model file ``path`` has a recurrent step that ``--compile`` compiles (the gru
    encoder's, C14's decoder's): otherwise it would score eagerly, the option doing nothing."""
    model = trained.model
    if not any(getattr(part, "compiles_steps", False) for part in (model.encoder, model.decoder)):
        raise MosesRNNError(f"--compile compiles the recurrent steps of the gru encoder and of C14's decoder, but "
                            f"{path} is a model of --encoder {model.config.encoder}, which has neither: it would "
                            f"score eagerly; leave --compile out")


def _feature(options: FeatureOptions, trained: TrainedEncoderDecoder, path: str, **settings) -> RNNFeature:
    """A column of ``trained`` (the model file ``path``) with the scoring options and ``settings`` (its spec,
    direction and device)."""
    if options.normalizer == "skip":
        check_skip_normalizer(trained, path)
    if options.compile:
        check_compiles(trained, path)
    batch_tokens = options.batch_tokens or default_batch_tokens(settings["device"])
    return RNNFeature(trained, dtype=options.dtype, batch_tokens=batch_tokens,
                      length_normalize=options.length_normalize, normalizer=options.normalizer,
                      compile=options.compile, **settings)


def build(options: FeatureOptions, models) -> RNNFeature:
    """The feature over ``--model``, with the scoring options."""
    return _feature(options, models.get("rnn"), options.model, direction=options.direction, device=models.device)


def build_reverse(options: FeatureOptions, models) -> RNNFeature:
    """The feature over ``--reverse-model``, which must score the direction opposite to rnn's
    (``--direction``, else the ``-m`` model's, else source-to-target): p(source | target) beside
    p(target | source), as Moses keeps both translation directions."""
    forward = options.direction or (models.get("rnn").direction if options.model else SOURCE_TO_TARGET)
    wanted = opposite(forward)
    trained = models.get("rnn-rev", "reverse_model")
    if trained.direction != wanted:
        raise MosesRNNError(f"--reverse-model {options.reverse_model} was trained {trained.direction} (it scores "
                            f"{probability(trained.direction)}); rnn-rev needs a model trained {wanted} "
                            f"(mosesrnn train TABLE --direction {wanted})")
    return _feature(options, trained, options.reverse_model, spec=FEATURES["rnn-rev"], direction=wanted,
                    device=models.device)
