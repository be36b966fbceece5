"""Every encoder–decoder architecture mosesrnn builds, in one table: the one place a new encoder is registered.

An :class:`Architecture` names its encoder and the decoder that encoder feeds (``module:Class``,
imported when a model is built, so that ``--help`` and this table need no torch), says in one
line what it is, and owns its settings: their defaults and bounds, kept in a model config's
``options``. ``mosesrnn train --encoder NAME`` offers every entry; the trainer, scorer, search
and model file never ask which one they have.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from ..errors import MosesRNNError

__all__ = ["Setting", "Architecture", "ARCHITECTURES", "architecture"]


@dataclass(frozen=True)
class Setting:
    """One setting of an architecture: its default, its lower bound (``above``: strictly), its meaning."""

    default: float | int
    minimum: float | int
    meaning: str
    above: bool = False

    def check(self, name: str, value) -> None:
        """Raise MosesRNNError if ``value`` is out of bounds."""
        numeric = (int, float) if isinstance(self.default, float) else (int,)
        if isinstance(value, bool) or not isinstance(value, numeric):
            raise MosesRNNError(f"{name} must be a {'number' if len(numeric) == 2 else 'whole number'}, got {value!r}")
        if value < self.minimum or (self.above and value == self.minimum):
            bound = f"above {self.minimum}" if self.above else f"at least {self.minimum}"
            raise MosesRNNError(f"{name} must be {bound}, got {value}")


@dataclass(frozen=True)
class Architecture:
    """An encoder and the decoder it feeds, with the settings of its own (see the module docstring)."""

    name: str
    summary: str
    encoder: str
    decoder: str
    settings: dict[str, Setting] = field(default_factory=dict)
    #: whether it uses the C14 output layer's sizes (embed_dim, maxout_units, output_rank); the RCTMs use
    #: one size q = hidden_dim for word vectors and hidden layers
    c14_sizes: bool = True

    def options(self, given: dict) -> dict:
        """``given`` completed with the defaults, each checked; raises MosesRNNError for an unknown name."""
        unknown = sorted(set(given) - set(self.settings))
        if unknown:
            known = ", ".join(self.settings) or "none"
            raise MosesRNNError(f"the {self.name} encoder has no setting {', '.join(unknown)} (its settings: {known})")
        options = {name: given.get(name, setting.default) for name, setting in self.settings.items()}
        for name, value in options.items():
            self.settings[name].check(name, value)
        return options

    def build_encoder(self, config):
        """A fresh encoder of ``config`` (a :class:`~mosesrnn.encdec.config.ModelConfig`)."""
        return _load(self.encoder)(config)

    def build_decoder(self, config):
        """A fresh decoder of ``config``."""
        return _load(self.decoder)(config)


def _load(target: str):
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


_C14 = "mosesrnn.encdec.decoder:C14Decoder"

ARCHITECTURES: dict[str, Architecture] = {a.name: a for a in (
    Architecture("gru", "C14's gated RNN encoder (Sec. 2.3) and decoder (App. A)",
                 "mosesrnn.encdec.encoders:GRUEncoder", _C14),
    Architecture("grconv", "the gated recursive convolution of Cho et al. (2014b, Sec. 2.2), C14 decoder",
                 "mosesrnn.encdec.encoders:GrConvEncoder", _C14,
                 {"grconv_init_scale": Setting(0.4, 0.0, "spectral radius of the orthogonal W^l, W^r "
                                                         "(2014b, Sec. 5.2)", above=True)}),
    Architecture("rnn", "a plain tanh RNN encoder, C14 decoder", "mosesrnn.encdec.encoders:RNNEncoder", _C14),
    Architecture("rctm1", "Kalchbrenner & Blunsom (2013) RCTM I: convolutional sentence model and a recurrent "
                 "language-model decoder", "mosesrnn.encdec.encoders:CSMEncoder",
                 "mosesrnn.encdec.rctm:RCTM1Decoder",
                 {"csm_kernels": Setting(15, 2, "r of the CSM: kernels K^2..K^r and L^2..L^r (KB13 Sec. 5.1.2)")},
                 c14_sizes=False),
    Architecture("rctm2", "Kalchbrenner & Blunsom (2013) RCTM II: convolutional n-gram model and an inverse CGM "
                 "decoder", "mosesrnn.encdec.encoders:CGMEncoder", "mosesrnn.encdec.rctm:RCTM2Decoder",
                 {"cgm_ngram": Setting(4, 1, "n of the convolutional n-gram model (KB13 Sec. 4)"),
                  "cgm_kernels": Setting(7, 2, "r of the CGM (KB13 Sec. 5.1.2)"),
                  "icgm_kernels": Setting(9, 2, "s of the inverse CGM: kernels J^2..J^s, H^2..H^s (KB13 Sec. 5.1.2)")},
                 c14_sizes=False),
    Architecture("attention", "Bahdanau, Cho & Bengio (2015) RNNsearch: a bidirectional GRU encoder's annotations, "
                 "read at every step of a GRU decoder through a learned alignment (attention)",
                 "mosesrnn.encdec.attention:BiGRUEncoder", "mosesrnn.encdec.attention:AttentionDecoder",
                 {"attention_dim": Setting(0, 0, "n' of the alignment model e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j) "
                                                 "(BCB15 App. A.1.2); 0: hidden_dim, the paper's n' = n")}),
)}


def architecture(name: str) -> Architecture:
    """The architecture called ``name``; raises MosesRNNError naming the known ones."""
    if name not in ARCHITECTURES:
        raise MosesRNNError(f"unknown encoder {name!r} (known: {', '.join(ARCHITECTURES)})")
    return ARCHITECTURES[name]
