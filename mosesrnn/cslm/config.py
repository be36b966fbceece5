"""The CSLM's shape: its config and presets (no torch here, so that the command line starts fast).

Presets: ``paper`` is C14's (Sec. 5.1.1: 7-gram, 512-dim embeddings, hidden layers of 1536 and 1024
units, 15,000 words); ``moses`` the one-hidden-layer shape that NPLM evaluates right when Moses
loads it (see :mod:`mosesrnn.formats.nplm`); ``small`` one that trains in minutes on a CPU.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from ..errors import MosesRNNError

__all__ = ["MAX_ORDER", "LM_PRESETS", "LM_RECIPES", "LM_PLAIN_RECIPE", "CSLMConfig", "lm_config"]

#: The longest n-gram Moses' language-model features hold (moses/TypeDef.h: MAX_NGRAM_SIZE).
MAX_ORDER = 20

LM_PRESETS = {
    # C14 Sec. 5.1.1: 7-gram, 512-dim embeddings, two rectified layers of 1536 and 1024 units, 15k words.
    "paper": dict(order=7, embed_dim=512, hidden_dims=(1536, 1024), shortlist=15000),
    # One hidden layer (NPLM's num_hidden 0 form, as Moses' own NPLM scripts write it): fast in the decoder.
    "moses": dict(order=7, embed_dim=192, hidden_dims=(512,), shortlist=15000),
    # Trains in minutes on a CPU.
    "small": dict(order=5, embed_dim=64, hidden_dims=(256,), shortlist=8000),
}

#: How each preset trains (``mosesrnn lm train`` options; an option given overrides its part); see
#: docs/cslm.md for the measurements. A decay runs to the end of --max-time or --max-updates.
LM_PLAIN_RECIPE = dict(batch_size=128, learning_rate=1e-3, warmup=0, lr_decay="none", dropout=0.0,
                       estimator="softmax", noise_samples=100, output_bias="uniform")
LM_RECIPES = {
    "paper": dict(LM_PLAIN_RECIPE),
    # NCE (k = 500 unigram noise words shared by a minibatch of 512): 5.8x the n-grams/s of the full softmax on
    # one CPU core (docs/performance.md), at least as good per n-gram, and self-normalised by itself; dropout 0.3
    # for the many epochs that buys; Adam 2e-3, 100 updates of warm-up, a linear decay to 0 at the end of --max-time.
    "moses": dict(batch_size=512, learning_rate=2e-3, warmup=100, lr_decay="linear", dropout=0.3,
                  estimator="nce", noise_samples=500, output_bias="unigram"),
    "small": dict(LM_PLAIN_RECIPE),
}


@dataclass(frozen=True)
class CSLMConfig:
    """The shape of a CSLM.

    Attributes:
        vocab_size: V, the shortlist with the reserved tokens (<pad>/<null>, <unk>, </s>, <s>).
        order: n; the model reads n-1 words of context.
        embed_dim: E, the size of each context word's embedding.
        hidden_dims: the rectified hidden layers' sizes, first to last.
        init_range: weights start uniform in [-init_range, init_range] (C14: 0.01).
        self_norm: alpha of the (log Z)^2 penalty added to the loss (Devlin et al. 2014: 0.1).
        input_vocab_size: rows of the input embeddings when the inputs are another vocabulary than the
            output's (a joint model reads target and source words); None: ``vocab_size``.
    """

    vocab_size: int
    order: int = 7
    embed_dim: int = 512
    hidden_dims: tuple[int, ...] = (1536, 1024)
    init_range: float = 0.01
    self_norm: float = 0.1
    input_vocab_size: int | None = None

    def __post_init__(self):
        if not 2 <= self.order <= MAX_ORDER:
            raise MosesRNNError(f"the order must be between 2 and {MAX_ORDER} (the longest n-gram Moses' language "
                                f"models hold), not {self.order}")
        if not self.hidden_dims or min(self.hidden_dims) < 1 or self.embed_dim < 1:
            raise MosesRNNError("a CSLM needs at least one hidden layer and positive sizes")
        if self.vocab_size < 5 or not self.init_range > 0 or self.self_norm < 0:
            raise MosesRNNError("vocab_size must hold the reserved tokens and a word; init_range > 0; self_norm >= 0")
        object.__setattr__(self, "hidden_dims", tuple(self.hidden_dims))

    def to_dict(self) -> dict:
        """Plain values for the model file (``input_vocab_size`` only where it differs: a CSLM's file is as before)."""
        values = {**asdict(self), "hidden_dims": list(self.hidden_dims)}
        if self.input_vocab_size is None:
            del values["input_vocab_size"]
        return values

    @classmethod
    def from_dict(cls, values: dict) -> "CSLMConfig":
        """Rebuild from :meth:`to_dict`; unknown keys raise MosesRNNError."""
        unknown = sorted(set(values) - {f.name for f in fields(cls)})
        if unknown:
            raise MosesRNNError(f"unknown CSLM config keys: {', '.join(unknown)}")
        return cls(**{**values, "hidden_dims": tuple(values.get("hidden_dims", ()))})


def lm_config(preset: str, vocab_size: int, **overrides) -> CSLMConfig:
    """The config of ``preset`` for a vocabulary of ``vocab_size`` (reserved tokens included)."""
    if preset not in LM_PRESETS:
        raise MosesRNNError(f"unknown preset {preset!r}; choose one of: {', '.join(LM_PRESETS)}")
    values = {k: v for k, v in LM_PRESETS[preset].items() if k != "shortlist"}
    return CSLMConfig(vocab_size=vocab_size, **{**values, **{k: v for k, v in overrides.items() if v is not None}})
