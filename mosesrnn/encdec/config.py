"""Model configuration: the architecture, sizes and initialisation, and how each preset trains.

Defaults follow Cho et al. (2014), Sec. 4.1.1 and Appendix A: a GRU encoder, 1000 hidden units,
rank-100 word embeddings, 500 maxout units pooling 2 inputs each, a rank-100 output matrix and a
15,000-word shortlist per language. The reserved token ids (PAD, UNK, EOS) are the vocabulary's
(:mod:`mosesrnn.text.vocab`); every vocabulary size here counts them.
"""

from dataclasses import asdict, dataclass, field, fields

from ..errors import MosesRNNError
from ..text.vocab import EOS_ID, PAD_ID, RESERVED, UNK_ID
from .architectures import architecture

__all__ = ["PAD_ID", "UNK_ID", "EOS_ID", "NUM_RESERVED_IDS", "PRESETS", "OPTIMIZERS", "RECIPES", "PLAIN_RECIPE",
           "ModelConfig", "preset_shortlist", "model_config", "NORMALIZERS"]

NUM_RESERVED_IDS = len(RESERVED)

#: How a scorer treats the softmax normaliser (``score --normalizer``, ``FeatureOptions.normalizer``): ``exact``
#: computes log Z at every position (log p); ``skip`` leaves it out and reads the target's raw score
#: g_y . s + b_y (a self-normalised model's log p, give or take its log Z). The one definition.
NORMALIZERS = ("exact", "skip")

PRESETS = {
    # The paper's sizes (Sec. 4.1.1); the shortlist is 15,000 words per side.
    "paper": dict(embed_dim=100, hidden_dim=1000, maxout_units=500, output_rank=100, shortlist=15000),
    # Small enough to train in minutes on a couple of CPU cores.
    "small": dict(embed_dim=64, hidden_dim=256, maxout_units=128, output_rank=64, shortlist=8000),
}


#: Optimizers and their default learning rates. Adadelta (rho 0.95, eps 1e-6) is the paper's (Sec. 4.1.1).
OPTIMIZERS = {"adadelta": 1.0, "adam": 3e-3}
#: Each preset's training recipe; an option given overrides its part. `paper`: the paper's Adadelta on random
#: minibatches. `small`: Adam at 1e-2 with 300 updates of warm-up and a linear decay to 0 at the end of the run
#: (--max-time or --max-updates; a constant rate without either), pairs bucketed by length in windows of 20
#: minibatches, the softmax bias started at the targets' log unigram distribution (docs/performance.md).
RECIPES = {
    "paper": dict(optimizer="adadelta"),
    "small": dict(optimizer="adam", learning_rate=1e-2, warmup=300, lr_decay="linear", bucket_window=20,
                  output_bias="unigram"),
}
#: What a recipe leaves out: no warm-up, decay or bucketing, the bias at 0, the optimizer's own rate.
PLAIN_RECIPE = dict(optimizer="adadelta", warmup=0, lr_decay="none", bucket_window=0, output_bias="zero")


@dataclass(frozen=True)
class ModelConfig:
    """The encoder, sizes and initialisation of an RNN Encoder-Decoder.

    Attributes:
        src_vocab_size: source vocabulary size, reserved ids included.
        trg_vocab_size: target vocabulary size K, reserved ids included.
        embed_dim: word embedding size E (the paper's rank-100 input matrices).
        hidden_dim: GRU hidden units H in the encoder and in the decoder.
        maxout_units: maxout units of the output layer; each pools 2 inputs.
        output_rank: inner size of the output matrix G = G_l G_r.
        init_std: standard deviation of the Gaussian for non-recurrent weights.
        recurrent_init_scale: scale of the orthogonal recurrent matrices
            (see `mosesrnn.encdec.model.EncoderDecoder.reset_parameters`).
        encoder: the architecture (a key of :data:`~mosesrnn.encdec.architectures.ARCHITECTURES`): "gru" is
            the paper's (C14, Sec. 2.3); "grconv" the gated recursive convolution of Cho et al. (2014b,
            Sec. 2.2); "rnn" plain tanh units; these three feed the C14 decoder. "rctm1" and "rctm2" are
            the models of Kalchbrenner & Blunsom (2013, Secs. 3-4) with their own recurrent-LM decoders;
            they use one size q = hidden_dim for word vectors and hidden layers and ignore embed_dim,
            maxout_units and output_rank. "attention" is Bahdanau et al. (2015): a bidirectional GRU and a
            decoder that attends over its annotations (:mod:`mosesrnn.encdec.attention`), with C14's sizes.
        options: the architecture's own settings (its ``settings``: e.g. grConv's ``grconv_init_scale``),
            completed with their defaults.
    """

    src_vocab_size: int
    trg_vocab_size: int
    embed_dim: int = 100
    hidden_dim: int = 1000
    maxout_units: int = 500
    output_rank: int = 100
    init_std: float = 0.01
    recurrent_init_scale: float = 1.0
    encoder: str = "gru"
    options: dict = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "options", architecture(self.encoder).options(dict(self.options)))
        for name in ("src_vocab_size", "trg_vocab_size"):
            if getattr(self, name) < NUM_RESERVED_IDS:
                raise MosesRNNError(f"{name} must be at least {NUM_RESERVED_IDS} (the reserved ids), "
                                    f"got {getattr(self, name)}")
        for name in ("embed_dim", "hidden_dim", "maxout_units", "output_rank"):
            if getattr(self, name) < 1:
                raise MosesRNNError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("init_std", "recurrent_init_scale"):
            if not getattr(self, name) > 0:
                raise MosesRNNError(f"{name} must be positive, got {getattr(self, name)}")

    def to_dict(self) -> dict:
        """Return the configuration as a plain dict (for checkpoints and logs)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "ModelConfig":
        """Build a configuration from `to_dict` output; unknown keys raise MosesRNNError."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise MosesRNNError(f"unknown model config keys: {', '.join(unknown)}")
        missing = sorted(n for n in ("src_vocab_size", "trg_vocab_size") if n not in values)
        if missing:
            raise MosesRNNError(f"missing model config keys: {', '.join(missing)}")
        return cls(**values)


def _preset(preset: str) -> dict:
    if preset not in PRESETS:
        raise MosesRNNError(f"unknown preset {preset!r}; choose one of: {', '.join(sorted(PRESETS))}")
    return PRESETS[preset]


def preset_shortlist(preset: str) -> int:
    """Return the shortlist size (words per language, reserved ids excluded) of a preset."""
    return _preset(preset)["shortlist"]


def model_config(preset: str, src_vocab_size: int, trg_vocab_size: int, **overrides) -> ModelConfig:
    """Return the ModelConfig of `preset` with the given vocabulary sizes and overrides.

    Raises MosesRNNError for an unknown preset or an override that is not a ModelConfig field.
    """
    values = {k: v for k, v in _preset(preset).items() if k != "shortlist"}
    known = {f.name for f in fields(ModelConfig)} - {"src_vocab_size", "trg_vocab_size"}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise MosesRNNError(f"unknown model config keys: {', '.join(unknown)}")
    values.update(overrides)
    return ModelConfig(src_vocab_size=src_vocab_size, trg_vocab_size=trg_vocab_size, **values)
