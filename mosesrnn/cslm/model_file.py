"""The CSLM's self-contained model file: weights, config, its vocabulary (as a codec) and training facts.

Read and written through the one model-file floor (:mod:`mosesrnn.io.model_store`), like the
encoder-decoder's, with ``"kind": "cslm"``, so that each command refuses the other kind in one line::

    {"format_version": 2, "kind": "cslm", "mosesrnn_version": str, "config": CSLMConfig.to_dict(),
     "state_dict": {name: tensor}, "text": {"target": Codec.to_dict()}, "info": {training facts}}
"""
from __future__ import annotations

from dataclasses import dataclass

from ..io.model_store import file_digest, load_weights, read_model_file, save_file
from ..models import CSLM as CSLM_KIND
from ..text.codec import Codec
from ..version import __version__
from .config import CSLMConfig
from .model import CSLM

__all__ = ["FORMAT_VERSION", "TrainedCSLM", "save_cslm", "load_cslm"]

FORMAT_VERSION = 2
_REQUIRED = ("config", "state_dict", "text")


@dataclass
class TrainedCSLM:
    """A CSLM ready to score target text: the network, its codec (Moses words and the shortlist), facts."""

    model: CSLM
    codec: Codec
    info: dict
    digest: str


def save_cslm(path: str, model: CSLM, codec: Codec, info: dict | None = None) -> None:
    """Write one self-contained CSLM file (atomically)."""
    checkpoint = {"format_version": FORMAT_VERSION, "kind": CSLM_KIND, "mosesrnn_version": __version__,
                  "config": model.config.to_dict(), "state_dict": model.state_dict(),
                  "text": {"target": codec.to_dict()}, "info": dict(info or {})}
    save_file(path, checkpoint)


def load_cslm(path: str, map_location="cpu") -> TrainedCSLM:
    """Load a CSLM file; raises ModelFileError if it is not one (an RNN Encoder-Decoder's file included)."""
    checkpoint = read_model_file(path, CSLM_KIND, FORMAT_VERSION, required=_REQUIRED, map_location=map_location)
    model = load_weights(path, checkpoint, lambda: CSLM(CSLMConfig.from_dict(checkpoint["config"])))
    return TrainedCSLM(model, Codec.from_dict(checkpoint["text"]["target"]), checkpoint.get("info", {}),
                     file_digest(path))
