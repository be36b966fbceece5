"""The CSLM for Moses: its network as NPLM's arrays, and every check of the export in one place.

Moses' ``NeuralLM`` (a Moses built ``--with-nplm``) reads NPLM's text format
(:mod:`mosesrnn.formats.nplm`) and the raw output scores, so a model is exported only when it is
self-normalised (its mean log Z on held-out text near 0). Both of NPLM's shapes (one or two hidden
layers) are written; an NPLM without ``moses_integration/fix-nplm.sh`` misevaluates either, depending
on what its heap held (docs/cslm.md).
"""
from __future__ import annotations

from typing import Sequence

from ..errors import MosesRNNError
from ..formats.nplm import NPLM_NULL, NPLMNetwork, write_nplm_file
from ..text.vocab import PAD
from .model import CSLM
from .model_file import TrainedCSLM, load_cslm

__all__ = ["SELF_NORMALISED", "nplm_words", "cslm_network", "check_self_normalised", "export_cslm"]

#: How far from 0 the mean log-normaliser on held-out text may be where raw scores stand for log-probabilities.
SELF_NORMALISED = 0.5


def nplm_words(itos: Sequence[str]) -> list[str]:
    """The vocabulary as NPLM names it: ``<pad>`` is ``<null>``."""
    return [NPLM_NULL if word == PAD else word for word in itos]


def cslm_network(model: CSLM, itos: Sequence[str]) -> NPLMNetwork:
    """The CSLM ``model`` and its vocabulary ``itos`` as NPLM's arrays (one or two hidden layers)."""
    def array(tensor):
        return tensor.detach().double().cpu().numpy()

    words = nplm_words(itos)
    return NPLMNetwork(model.config.order, words, words, array(model.embed.weight),
                       [(array(layer.weight), array(layer.bias)) for layer in model.hidden],
                       array(model.output.weight), array(model.output.bias))


def check_self_normalised(info: dict, path: str) -> None:
    """Raise MosesRNNError unless the model's mean log Z on its validation text (``info["log_z_mean"]``) is
    within +-:data:`SELF_NORMALISED` of 0: its raw scores stand for log-probabilities (in Moses' NeuralLM and
    BilingualNPLM, and in ``score --normalizer skip``), so each word would be off by log Z. Every model family's
    check."""
    mean = info.get("log_z_mean")
    if mean is None:
        raise MosesRNNError(f"{path}: not validated yet, so whether its scores are log-probabilities is unknown: "
                            f"train it until its first validation")
    if abs(mean) > SELF_NORMALISED:
        raise MosesRNNError(f"{path} is not self-normalised: mean log Z {mean:+.2f} on its validation text (its raw "
                            f"scores would stand for log-probabilities, every word off by about that much; within "
                            f"+-{SELF_NORMALISED} is needed): train it with --self-norm 0.1 or more")


def export_cslm(model_path: str, output: str) -> TrainedCSLM:
    """Write the CSLM file ``model_path`` to ``output`` in NPLM's format for Moses' NeuralLM.

    Raises MosesRNNError for a ``.gz`` name or a model that is not self-normalised.
    Returns the exported model."""
    trained = load_cslm(model_path)
    check_self_normalised(trained.info, model_path)
    write_nplm_file(output, cslm_network(trained.model, trained.codec.vocabulary.itos))
    return trained
