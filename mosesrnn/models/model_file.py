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
import os
import pickle
from collections.abc import Callable
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

__all__ = ["FORMAT_VERSION", "ENCODER_DECODER", "CSLM", "ModelFileError", "file_digest", "TrainedModel",
           "save_trained_model", "read_model_file", "load_trained_model"]

FORMAT_VERSION = 2
ENCODER_DECODER, CSLM = "encoder-decoder", "cslm"
#: What each kind of model file holds (a file without ``kind`` is an encoder-decoder's), and how to name it.
_REQUIRED = {ENCODER_DECODER: ("format_version", "config", "state_dict", "direction", "text"),
             CSLM: ("format_version", "config", "state_dict", "text")}
_NAMES = {ENCODER_DECODER: "an RNN Encoder-Decoder (a translation model, from `mosesrnn train`)",
          CSLM: "a CSLM (a target language model, from `mosesrnn lm train`)"}


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


class ModelFileError(ValueError):
    """A file that cannot be used as the model asked for; the message names it and says why."""


def read_model_file(path: str, map_location="cpu", kind: str = ENCODER_DECODER) -> dict:
    """The checkpoint dictionary of a mosesrnn model file of ``kind``, migrated to the current format.

    Every way a file can fail to be one (missing, a folder, empty, truncated, text, another
    program's pickle or checkpoint, a newer format) raises :class:`ModelFileError` with one line
    ``PATH is not a mosesrnn model file: why``, and so does a model of another kind. This is the
    one place that reads model files.
    """
    def refuse(reason: str) -> ModelFileError:
        return ModelFileError(f"{path} is not a mosesrnn model file: {reason}")

    try:
        checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    except FileNotFoundError:
        raise refuse("there is no such file") from None
    except IsADirectoryError:
        raise refuse("it is a folder (model files are the best.pt or last.pt inside a model folder)") from None
    except pickle.UnpicklingError:
        if _starts_like_a_zip_or_pickle(path):
            # torch's own message suggests weights_only=False, which would run the file's code.
            raise refuse("it holds Python objects beyond tensors and plain values, and loading those would run "
                          "code from the file (do not load it with weights_only=False unless you trust whoever "
                          "made it)") from None
        raise refuse(f"it is not a PyTorch file but {_what_it_looks_like(path)}") from None
    except (RuntimeError, EOFError, OSError, ValueError):
        raise refuse(f"it is truncated or damaged ({_what_it_looks_like(path)} that PyTorch cannot read)") from None
    if not isinstance(checkpoint, dict) or "format_version" not in checkpoint:
        raise refuse("a PyTorch file, but not one that mosesrnn wrote (it has no format_version)")
    version = checkpoint["format_version"]
    while version in MIGRATIONS:
        checkpoint = MIGRATIONS[version](checkpoint)
        version = checkpoint["format_version"]
    if version != FORMAT_VERSION:
        raise ModelFileError(f"{path}: unsupported model format version {version} "
                             f"(this mosesrnn {__version__} reads up to {FORMAT_VERSION})")
    found = checkpoint.get("kind", ENCODER_DECODER)
    if found != kind:
        raise ModelFileError(f"{path} is {_NAMES.get(found, repr(found))}, not {_NAMES[kind].split(' (')[0]}")
    missing = [key for key in _REQUIRED[kind] if key not in checkpoint]
    if missing:
        raise refuse(f"it has no {', '.join(missing)}")
    return checkpoint


def _starts_like_a_zip_or_pickle(path: str) -> bool:
    with open(path, "rb") as stream:
        head = stream.read(4)
    return head.startswith(b"PK\x03\x04") or head[:1] == b"\x80"


def _what_it_looks_like(path: str) -> str:
    """A few words on a file's first bytes: empty, gzip, text (quoted) or binary."""
    with open(path, "rb") as stream:
        head = stream.read(64)
    if not head:
        return "an empty file"
    if head.startswith(b"\x1f\x8b"):
        return "gzip-compressed data"
    if head.startswith(b"PK\x03\x04"):
        return f"a zip archive of {os.path.getsize(path):,} bytes"
    try:
        text = head.decode("utf-8").split("\n")[0]
    except UnicodeDecodeError:
        return "binary data"
    return f"text starting {text[:40]!r}"


def load_weights(path: str, checkpoint: dict, build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    """The network ``build()`` makes, holding the weights of a model file's ``checkpoint`` (eval mode);
    raises ModelFileError if they do not fit it."""
    with torch.device("meta"):  # skip the random initialisation; the weights are loaded below
        model = build()
    try:
        model.load_state_dict(checkpoint["state_dict"], assign=True)
    except RuntimeError as error:
        raise ModelFileError(f"{path}: its weights do not fit its configuration ({str(error).splitlines()[0]})") \
            from None
    return model.eval()


def load_trained_model(path: str, map_location="cpu") -> TrainedModel:
    """Load a model file of any known format version; raises ModelFileError if it isn't one."""
    checkpoint = read_model_file(path, map_location)
    model = load_weights(path, checkpoint, lambda: EncoderDecoder(ModelConfig.from_dict(checkpoint["config"])))
    text = CodecPair(Codec.from_dict(checkpoint["text"]["source"]), Codec.from_dict(checkpoint["text"]["target"]))
    return TrainedModel(model, text, check_direction(checkpoint["direction"]),
                        checkpoint.get("info", {}), file_digest(path))


def file_digest(path: str) -> str:
    """A short hash of a model file's bytes, for signatures."""
    with open(path, "rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()[:12]


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
