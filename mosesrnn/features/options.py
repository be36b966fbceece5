"""Which feature columns a run computes and how: one object, built by the command line, taken by the API.

``mosesrnn score`` and ``mosesrnn nbest`` build a :class:`FeatureOptions` from their options
(:mod:`mosesrnn.cli.features`), and hand it to :func:`mosesrnn.score_table` and
:func:`mosesrnn.score_nbest`, which a Python user calls with the same object::

    mosesrnn.score_table("phrase-table.gz", "scored.gz", FeatureOptions(model="model/best.pt"))

A feature with a new setting adds one field here (and its option in the CLI table); the model
files it names are declared to the run's job by :meth:`FeatureOptions.declared_paths`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..bilm.orientation import JOINT_FEATURES
from ..encdec.direction import DIRECTIONS
from ..io.roles import CSLM, ENCODER_DECODER, JOINT, Role, input_folder, model_file
from ..runtime import DEVICES, DTYPES
from .registry import FEATURES, default_features, parse_feature_names

__all__ = ["UNK_SIDES", "NORMALIZERS", "FeatureOptions"]

UNK_SIDES = ("source", "target", "both")
#: How the rnn columns treat the softmax normaliser: exact (log p) or skip (a self-normalised model's raw score).
NORMALIZERS = ("exact", "skip")


@dataclass(frozen=True)
class FeatureOptions:
    """The features to compute and every setting they take (see ``mosesrnn score --help``).

    Attributes:
        features: names in order (``"rnn,unk"`` or a sequence); None: every feature whose model file is
            given, and those that need none.
        model: an RNN Encoder-Decoder file (the rnn feature; its shortlists serve unk).
        reverse_model: a second one trained in the other direction (the rnn-rev feature).
        lm: a CSLM file (the cslm feature, n-best lists only).
        bilm: a joint model file (the bilm feature, n-best lists written with Moses' word alignment).
        bilm_t2s, bilm_r2l, bilm_t2s_r2l: joint model files of the other directions, each for its feature
            (bilm-t2s: target-to-source; bilm-r2l: right-to-left; bilm-t2s-r2l: both), as trained by
            ``bilm train --direction target-to-source`` and/or ``--right-to-left``.
        vocab: a folder of word shortlists from ``mosesrnn vocab`` (unk without a model, or beside a
            subword model).
        unk_side: which words unk counts: source, target or both.
        direction: the direction the model must score (None: the model's).
        length_normalize: divide log p by the predicted tokens.
        normalizer: ``exact`` (log p, the default) or ``skip``: the raw score without the softmax normaliser,
            for a model trained self-normalised (``train --self-norm``; refused for another).
        device, dtype, batch_tokens, threads: where and how the models run; batch_tokens None: the
            resolved device's default (:data:`~mosesrnn.runtime.devices.BATCH_TOKENS`: 4096 on a CPU, 32768
            on a GPU).
        compile: run the rnn columns' recurrent steps compiled (``torch.compile``; CUDA graphs on a GPU:
            :mod:`mosesrnn.encdec.compiled`); off, the values are the eager path's, byte for byte.
        labels: ``(feature, name)`` pairs renaming a feature's group in an n-best list, e.g.
            ``(("rnn", "RNN1"),)`` so that a second model's scores go beside the first's ``RNN0``.
    """

    features: tuple[str, ...] | None = None
    model: str | None = None
    reverse_model: str | None = None
    lm: str | None = None
    bilm: str | None = None
    bilm_t2s: str | None = None
    bilm_r2l: str | None = None
    bilm_t2s_r2l: str | None = None
    vocab: str | None = None
    unk_side: str = "both"
    direction: str | None = None
    length_normalize: bool = False
    normalizer: str = "exact"
    device: str = "auto"
    dtype: str = "fp32"
    batch_tokens: int | None = None
    threads: int | None = None
    compile: bool = False
    labels: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        if self.features is not None:
            names = self.features if isinstance(self.features, str) else ",".join(self.features)
            object.__setattr__(self, "features", parse_feature_names(names))
        for name, value, choices in (("unk_side", self.unk_side, UNK_SIDES), ("device", self.device, DEVICES),
                                     ("dtype", self.dtype, DTYPES), ("direction", self.direction, DIRECTIONS),
                                     ("normalizer", self.normalizer, NORMALIZERS)):
            if value is not None and value not in choices and not (name == "device" and value.startswith("cuda:")):
                raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
        if (self.batch_tokens is not None and self.batch_tokens < 1) or (self.threads is not None and self.threads < 1):
            raise ValueError("batch_tokens and threads must be positive")
        object.__setattr__(self, "labels", tuple(tuple(pair) for pair in self.labels))
        for feature, label in self.labels:
            if feature not in FEATURES:
                raise ValueError(f"unknown feature {feature!r} in a label (choose from: {', '.join(FEATURES)})")
            if not _is_label(label):
                raise ValueError(f"{label!r} is not an n-best feature name: letters, digits and _, ending in a "
                                 f"digit, e.g. RNN1")
        if len({feature for feature, _ in self.labels}) < len(self.labels):
            raise ValueError("a feature is labelled twice")

    def declared_paths(self) -> list[tuple[Role, str]]:
        """The files these options name, by role: for the job of the run that uses them."""
        return [(role, path) for role, path in ((model_file(ENCODER_DECODER), self.model),
                                                (model_file(ENCODER_DECODER), self.reverse_model),
                                                (model_file(CSLM), self.lm),
                                                *((model_file(JOINT), path) for path in self.joint_models().values()),
                                                (input_folder(), self.vocab))
                if path is not None]

    def joint_models(self) -> dict[str, str]:
        """The joint model files given, by option (``bilm``, ``bilm_t2s``...)."""
        return {o.option: getattr(self, o.option) for o in JOINT_FEATURES.values() if getattr(self, o.option)}

    def names(self) -> tuple[str, ...]:
        """The features' names: the ones given, else the defaults for the model files given (unk not
        beside a CSLM alone: it would have no shortlists)."""
        if self.features is not None:
            return self.features
        names = default_features(self.model is not None, self.reverse_model is not None, self.lm is not None,
                                 self.joint_models())
        counts_words = self.model is not None or self.vocab is not None
        return names if counts_words else tuple(name for name in names
                                                if name != "unk" or not (self.lm or self.joint_models()))

    def label(self, feature: str) -> str | None:
        """The n-best name given to ``feature``, or None."""
        return dict(self.labels).get(feature)


def _is_label(text: str) -> bool:
    return text[:1].isalpha() and text[-1:].isdigit() and text.replace("_", "").isalnum()
