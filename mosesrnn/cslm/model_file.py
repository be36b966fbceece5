"""The CSLM's self-contained model file: weights, config, its vocabulary (as a codec) and training facts.

Read and written through the one model-file floor (:mod:`mosesrnn.io.model_store`), like the
encoder-decoder's, with ``"kind": "cslm"``, so that each command refuses the other kind in one line::

    {"format_version": 2, "kind": "cslm", "mosesrnn_version": str, "config": CSLMConfig.to_dict(),
     "state_dict": {name: tensor}, "text": {"target": Codec.to_dict()}, "info": {training facts}}
"""
from __future__ import annotations

from dataclasses import dataclass

from ..io.model_store import file_digest, load_weights, read_model_file, save_file
from ..io.roles import CSLM as CSLM_KIND
from ..text.codec import Codec
from ..version import __version__
from .config import CSLMConfig
from .model import CSLM

__all__ = ["FORMAT_VERSION", "SELF_NORMALISED", "TrainedLM", "save_language_model", "load_language_model",
           "check_self_normalised"]

FORMAT_VERSION = 2
_REQUIRED = ("config", "state_dict", "text")


@dataclass
class TrainedLM:
    """A CSLM ready to score target text: the network, its codec (Moses words and the shortlist), facts."""

    model: CSLM
    codec: Codec
    info: dict
    digest: str


def save_language_model(path: str, model: CSLM, codec: Codec, info: dict | None = None) -> None:
    """Write one self-contained CSLM file (atomically)."""
    checkpoint = {"format_version": FORMAT_VERSION, "kind": CSLM_KIND, "mosesrnn_version": __version__,
                  "config": model.config.to_dict(), "state_dict": model.state_dict(),
                  "text": {"target": codec.to_dict()}, "info": dict(info or {})}
    save_file(path, checkpoint)


def load_language_model(path: str, map_location="cpu") -> TrainedLM:
    """Load a CSLM file; raises ModelFileError if it is not one (an RNN Encoder-Decoder's file included)."""
    checkpoint = read_model_file(path, CSLM_KIND, FORMAT_VERSION, required=_REQUIRED, map_location=map_location)
    model = load_weights(path, checkpoint, lambda: CSLM(CSLMConfig.from_dict(checkpoint["config"])))
    return TrainedLM(model, Codec.from_dict(checkpoint["text"]["target"]), checkpoint.get("info", {}),
                     file_digest(path))


#: How far from 0 the mean log-normaliser on held-out text may be for Moses' NeuralLM, which reads raw scores.
SELF_NORMALISED = 0.5


def check_self_normalised(trained: TrainedLM, path: str) -> None:
    """Raise ValueError unless the model's mean log Z on its validation text is within +-:data:`SELF_NORMALISED`
    of 0: Moses' NeuralLM reads the raw scores, so each word's score would be off by log Z."""
    mean = trained.info.get("log_z_mean")
    if mean is None:
        raise ValueError(f"{path}: not validated yet, so whether its scores are log-probabilities is unknown: "
                         f"train it until its first validation")
    if abs(mean) > SELF_NORMALISED:
        raise ValueError(f"{path} is not self-normalised: mean log Z {mean:+.2f} on its validation text (Moses' "
                         f"NeuralLM reads raw scores, so every word would be off by about that much; within "
                         f"+-{SELF_NORMALISED} is needed): train it with --self-norm 0.1 or more")
