"""The self-contained model file: weights, config, the two languages' codecs, direction and version.

Written with ``torch.save`` and read with ``torch.load(weights_only=True)``: besides the tensors
everything is plain lists, dicts, strings and numbers, so loading a file cannot run code. A file
records its ``format_version``; older versions are migrated when loaded (:data:`MIGRATIONS`), so
model files keep working and scoring the same across releases.

Version 2 (this one)::

    {"format_version": 2, "mosesrnn_version": str, "config": ModelConfig.to_dict(),
     "state_dict": {name: tensor}, "direction": "source-to-target" | "target-to-source",
     "text": {"source": Codec.to_dict(), "target": Codec.to_dict()}, "info": {training facts}}

Version 1 kept the encoder's and decoder's parameters at the top level (``src_embed``,
``enc_W``, ``dec_W``, ...) and plain word lists (``vocabularies``) instead of codecs.
"""
from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass

import torch

from .. import __version__
from ..direction import SOURCE_TO_TARGET, check_direction, orient
from ..files import atomic_file
from ..text.codec import Codec, CodecPair
from ..text.tokenizers import MosesWords
from ..text.vocab import VocabularyPair
from .config import ModelConfig
from .encdec import EncoderDecoder

__all__ = ["FORMAT_VERSION", "TrainedModel", "save_trained_model", "load_trained_model"]

FORMAT_VERSION = 2
_REQUIRED = ("format_version", "config", "state_dict", "direction", "text")


@dataclass
class TrainedModel:
    """A model ready to score: the network, the codecs of the table's two sides, and facts."""

    model: EncoderDecoder
    text: CodecPair  # .source is the table's source side, .target its target side
    direction: str
    info: dict
    digest: str

    @property
    def input_codec(self) -> Codec:
        """The codec of the side the encoder reads."""
        return orient(self.direction, self.text.source, self.text.target)[0]

    @property
    def output_codec(self) -> Codec:
        """The codec of the side the decoder predicts."""
        return orient(self.direction, self.text.source, self.text.target)[1]

    @property
    def vocabularies(self) -> VocabularyPair:
        """The table-side vocabularies (source, target)."""
        return VocabularyPair(self.text.source.vocabulary, self.text.target.vocabulary)


def save_trained_model(path: str, model: EncoderDecoder, text: CodecPair, direction: str = SOURCE_TO_TARGET,
                       info: dict | None = None) -> None:
    """Write one self-contained model file (atomically)."""
    checkpoint = {
        "format_version": FORMAT_VERSION,
        "mosesrnn_version": __version__,
        "config": model.config.to_dict(),
        "state_dict": model.state_dict(),
        "direction": check_direction(direction),
        "text": {"source": text.source.to_dict(), "target": text.target.to_dict()},
        "info": dict(info or {}),
    }
    with atomic_file(path) as stream:
        torch.save(checkpoint, stream)


def load_trained_model(path: str, map_location="cpu") -> TrainedModel:
    """Load a model file of any known format version; raises ValueError if it isn't one."""
    try:
        checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError:
        # torch's own message suggests weights_only=False, which would run the file's code.
        raise ValueError(f"{path}: not a mosesrnn model file: it holds Python objects beyond tensors and "
                         f"plain values, and loading those would run code from the file (do not load it "
                         f"with weights_only=False unless you trust whoever made it)") from None
    if not isinstance(checkpoint, dict) or "format_version" not in checkpoint:
        raise ValueError(f"{path}: not a mosesrnn model file")
    version = checkpoint["format_version"]
    while version in MIGRATIONS:
        checkpoint = MIGRATIONS[version](checkpoint)
        version = checkpoint["format_version"]
    if version != FORMAT_VERSION:
        raise ValueError(f"{path}: unsupported model format version {version} "
                         f"(this mosesrnn {__version__} reads up to {FORMAT_VERSION})")
    missing = [key for key in _REQUIRED if key not in checkpoint]
    if missing:
        raise ValueError(f"{path}: a model file without {', '.join(missing)}")
    with torch.device("meta"):  # skip the random initialisation; the weights are loaded below
        model = EncoderDecoder(ModelConfig.from_dict(checkpoint["config"]))
    model.load_state_dict(checkpoint["state_dict"], assign=True)
    text = CodecPair(Codec.from_dict(checkpoint["text"]["source"]), Codec.from_dict(checkpoint["text"]["target"]))
    with open(path, "rb") as stream:
        digest = hashlib.file_digest(stream, "sha256").hexdigest()[:12]
    return TrainedModel(model.eval(), text, check_direction(checkpoint["direction"]),
                        checkpoint.get("info", {}), digest)


# Version-1 parameter names -> version-2 names (the model was one flat module then).
_V1_PREFIXES = {"src_embed.": "encoder.embed.", "enc_W.": "encoder.W.", "enc_U.": "encoder.U.",
                "enc_V.": "encoder.V.", "trg_embed.": "decoder.embed.", "dec_W.": "decoder.W.",
                "dec_U.": "decoder.U.", "dec_C.": "decoder.C.", "dec_V.": "decoder.V.",
                "O_h.": "decoder.O_h.", "O_y.": "decoder.O_y.", "O_c.": "decoder.O_c.",
                "O_w.": "decoder.O_w.", "G_r.": "decoder.G_r.", "G_l.": "decoder.G_l."}


def _from_version_1(checkpoint: dict) -> dict:
    """Version 1 -> 2: nest the parameters under encoder/decoder; word lists become codecs."""
    def renamed(name: str) -> str:
        for old, new in _V1_PREFIXES.items():
            if name.startswith(old):
                return new + name[len(old):]
        raise ValueError(f"version-1 model file with an unknown parameter {name!r}")

    try:
        words = checkpoint.pop("vocabularies")
        text = {side: {"tokenizer": MosesWords().to_dict(), "vocabulary": words[side]}
                for side in ("source", "target")}
    except (KeyError, TypeError):
        raise ValueError("a version-1 model file without vocabularies") from None
    return {**checkpoint, "format_version": 2, "text": text,
            "config": {"encoder": "gru", **checkpoint["config"]},
            "state_dict": {renamed(name): tensor for name, tensor in checkpoint["state_dict"].items()}}


#: format version -> function that turns such a checkpoint into the next version's.
MIGRATIONS = {1: _from_version_1}
