"""The encoder–decoder's self-contained model file: weights, config, the two languages' codecs, direction.

Read and written through the one model-file floor (:mod:`mosesrnn.io.model_store`: ``torch.load``
with ``weights_only=True``, one-line refusals). A file records its ``format_version``; older
versions are migrated when loaded (:data:`MIGRATIONS`), so model files keep working and scoring
the same across releases.

Version 3 (this one)::

    {"format_version": 3, "kind": "encoder-decoder", "mosesrnn_version": str,
     "config": ModelConfig.to_dict(), "state_dict": {name: tensor},
     "direction": "source-to-target" | "target-to-source",
     "text": {"source": Codec.to_dict(), "target": Codec.to_dict()}, "info": {training facts}}

Version 2 kept each architecture's own settings as flat config keys (``grconv_init_scale``,
``csm_kernels``, ...) and had no ``kind``; version 1 kept the encoder's and decoder's parameters at
the top level (``src_embed``, ``enc_W``, ``dec_W``, ...) and plain word lists (``vocabularies``)
instead of codecs.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import MosesRNNError
from ..io.model_store import ModelFileError, file_digest, load_weights, read_model_file, save_file
from ..models import ENCODER_DECODER
from ..text.codec import Codec, CodecPair
from ..text.tokenizers import MosesWords
from ..text.vocab import VocabularyPair
from ..version import __version__
from .architectures import ARCHITECTURES
from .config import ModelConfig
from .direction import SOURCE_TO_TARGET, check_direction, orient
from .model import EncoderDecoder

__all__ = ["FORMAT_VERSION", "ModelFileError", "TrainedEncoderDecoder", "save_encoder_decoder", "load_encoder_decoder"]

FORMAT_VERSION = 3
_REQUIRED = ("config", "state_dict", "direction", "text")


@dataclass
class TrainedEncoderDecoder:
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


def save_encoder_decoder(path: str, model: EncoderDecoder, text: CodecPair, direction: str = SOURCE_TO_TARGET,
                       info: dict | None = None) -> None:
    """Write one self-contained model file (atomically)."""
    checkpoint = {
        "format_version": FORMAT_VERSION,
        "kind": ENCODER_DECODER,
        "mosesrnn_version": __version__,
        "config": model.config.to_dict(),
        "state_dict": model.state_dict(),
        "direction": check_direction(direction),
        "text": {"source": text.source.to_dict(), "target": text.target.to_dict()},
        "info": dict(info or {}),
    }
    save_file(path, checkpoint)


def load_encoder_decoder(path: str, map_location="cpu") -> TrainedEncoderDecoder:
    """Load a model file of any known format version; raises ModelFileError if it isn't one."""
    checkpoint = read_model_file(path, ENCODER_DECODER, FORMAT_VERSION, MIGRATIONS, _REQUIRED, map_location)
    try:
        config = ModelConfig.from_dict(checkpoint["config"])
    except (ValueError, TypeError) as error:
        raise ModelFileError(f"{path}: its configuration cannot be read ({error})") from None
    model = load_weights(path, checkpoint, lambda: EncoderDecoder(config))
    text = CodecPair(Codec.from_dict(checkpoint["text"]["source"]), Codec.from_dict(checkpoint["text"]["target"]))
    return TrainedEncoderDecoder(model, text, check_direction(checkpoint["direction"]),
                        checkpoint.get("info", {}), file_digest(path))


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
        raise MosesRNNError(f"version-1 model file with an unknown parameter {name!r}")

    try:
        words = checkpoint.pop("vocabularies")
        text = {side: {"tokenizer": MosesWords().to_dict(), "vocabulary": words[side]}
                for side in ("source", "target")}
    except (KeyError, TypeError):
        raise MosesRNNError("a version-1 model file without vocabularies") from None
    return {**checkpoint, "format_version": 2, "text": text,
            "config": {"encoder": "gru", **checkpoint["config"]},
            "state_dict": {renamed(name): tensor for name, tensor in checkpoint["state_dict"].items()}}


def _from_version_2(checkpoint: dict) -> dict:
    """Version 2 -> 3: an architecture's own settings move from flat config keys into ``options``."""
    config = dict(checkpoint["config"])
    encoder = config.get("encoder", "gru")
    own = ARCHITECTURES[encoder].settings if encoder in ARCHITECTURES else {}
    flat = ("grconv_init_scale", "csm_kernels", "cgm_ngram", "cgm_kernels", "icgm_kernels")
    options = {name: config.pop(name) for name in flat if name in config and name in own}
    for name in flat:
        config.pop(name, None)
    return {**checkpoint, "format_version": 3, "kind": ENCODER_DECODER, "config": {**config, "options": options}}


#: format version -> function that turns such a checkpoint into the next version's.
MIGRATIONS = {1: _from_version_1, 2: _from_version_2}
