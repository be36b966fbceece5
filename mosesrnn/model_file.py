"""The self-contained model file: weights, config, vocabularies, direction and version.

Stored with :func:`mosesrnn.model.save_model` and loaded with ``torch.load(weights_only=True)``:
everything besides the tensors is plain lists, dicts, strings and numbers.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from . import __version__
from .model import RNNEncoderDecoder, load_model, save_model
from .vocab import RESERVED, Vocabulary, VocabularyPair

__all__ = ["DIRECTIONS", "TrainedModel", "save_trained_model", "load_trained_model"]

#: A model reads its "source" side and predicts its "target" side of the phrase table;
#: one trained ``target-to-source`` gives p(source | target).
DIRECTIONS = ("source-to-target", "target-to-source")


@dataclass
class TrainedModel:
    """A model ready to score: the network, its shortlists (input side, output side) and facts."""

    model: RNNEncoderDecoder
    vocabularies: VocabularyPair  # .source is the table's source side, .target its target side
    direction: str
    info: dict
    digest: str

    @property
    def input_vocabulary(self) -> Vocabulary:
        """The shortlist of the side the encoder reads."""
        return self.vocabularies.source if self.direction == DIRECTIONS[0] else self.vocabularies.target

    @property
    def output_vocabulary(self) -> Vocabulary:
        """The shortlist of the side the decoder predicts."""
        return self.vocabularies.target if self.direction == DIRECTIONS[0] else self.vocabularies.source


def save_trained_model(path: str, model: RNNEncoderDecoder, vocabularies: VocabularyPair,
                       direction: str = DIRECTIONS[0], info: dict | None = None) -> None:
    """Write one self-contained model file (atomically)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
    save_model(path, model, {
        "mosesrnn_version": __version__,
        "direction": direction,
        "vocabularies": {"source": vocabularies.source.itos[len(RESERVED):],
                         "target": vocabularies.target.itos[len(RESERVED):]},
        "info": dict(info or {}),
    })


def load_trained_model(path: str, map_location="cpu") -> TrainedModel:
    """Load a file written by :func:`save_trained_model`; raises ValueError if it isn't one."""
    model, extra = load_model(path, map_location)
    try:
        vocabularies = VocabularyPair(Vocabulary(extra["vocabularies"]["source"]),
                                      Vocabulary(extra["vocabularies"]["target"]))
        direction = extra["direction"]
    except (KeyError, TypeError):
        raise ValueError(f"{path}: a model file without vocabularies or direction") from None
    with open(path, "rb") as stream:
        digest = hashlib.file_digest(stream, "sha256").hexdigest()[:12]
    return TrainedModel(model, vocabularies, direction, extra.get("info", {}), digest)
