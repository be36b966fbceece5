"""Which feature columns a run computes and how: one object, built by the command line, taken by the API.

``mosesrnn score`` and ``mosesrnn nbest`` build a :class:`FeatureOptions` from their options
(:mod:`mosesrnn.cli.features`), and hand it to :func:`mosesrnn.score_table` and
:func:`mosesrnn.score_nbest`, which a Python user calls with the same object::

    mosesrnn.score_table("phrase-table.gz", "scored.gz", FeatureOptions(model="model/best.pt"))

Its model files are the model registry's options (:data:`mosesrnn.models.MODEL_OPTIONS`): one field each,
declared to the run's job in the role of its kind by :meth:`FeatureOptions.declared_paths`. A feature with
a new setting adds one field here (and its option in the CLI table).
"""
from __future__ import annotations

from dataclasses import field, make_dataclass

from ..encdec.direction import DIRECTIONS
from ..errors import MosesRNNError
from ..io.roles import Role, input_folder, model_file
from ..models import ENCODER_DECODER, MODEL_OPTIONS, kind_of
from ..runtime import DEVICES, DTYPES
from .registry import FEATURES, default_features, parse_feature_names

__all__ = ["UNK_SIDES", "NORMALIZERS", "FeatureOptions"]

UNK_SIDES = ("source", "target", "both")
#: How the rnn columns treat the softmax normaliser: exact (log p) or skip (a self-normalised model's raw score).
NORMALIZERS = ("exact", "skip")


class _FeatureOptions:
    """What :class:`FeatureOptions` does with its fields (which come from the model registry, below)."""

    def __post_init__(self):
        if self.features is not None:
            names = self.features if isinstance(self.features, str) else ",".join(self.features)
            object.__setattr__(self, "features", parse_feature_names(names))
        for name, value, choices in (("unk_side", self.unk_side, UNK_SIDES), ("device", self.device, DEVICES),
                                     ("dtype", self.dtype, DTYPES), ("direction", self.direction, DIRECTIONS),
                                     ("normalizer", self.normalizer, NORMALIZERS)):
            if value is not None and value not in choices and not (name == "device" and value.startswith("cuda:")):
                raise MosesRNNError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
        if (self.batch_tokens is not None and self.batch_tokens < 1) or (self.threads is not None and self.threads < 1):
            raise MosesRNNError("batch_tokens and threads must be positive")
        object.__setattr__(self, "labels", tuple(tuple(pair) for pair in self.labels))
        for feature, label in self.labels:
            if feature not in FEATURES:
                raise MosesRNNError(f"unknown feature {feature!r} in a label (choose from: {', '.join(FEATURES)})")
            if not _is_label(label):
                raise MosesRNNError(f"{label!r} is not an n-best feature name: letters, digits and _, ending in a "
                                    f"digit, e.g. RNN1")
        if len({feature for feature, _ in self.labels}) < len(self.labels):
            raise MosesRNNError("a feature is labelled twice")

    def declared_paths(self) -> list[tuple[Role, str]]:
        """The files these options name, by role: for the job of the run that uses them."""
        return [(model_file(kind_of(name).kind), path) for name, path in self.models().items()] + \
            ([(input_folder(), self.vocab)] if self.vocab is not None else [])

    def models(self) -> dict[str, str]:
        """The model files given, by option (``model``, ``lm``, ``bilm_t2s``...:
        :data:`~mosesrnn.models.MODEL_OPTIONS`)."""
        return {name: getattr(self, name) for name in MODEL_OPTIONS if getattr(self, name) is not None}

    def names(self) -> tuple[str, ...]:
        """The features' names: the ones given, else the defaults for the model files given (unk not
        beside the other kinds' models alone: it would have no shortlists)."""
        if self.features is not None:
            return self.features
        given = self.models()
        names = default_features(given)
        counts_words = "model" in given or self.vocab is not None
        others = any(kind_of(name).kind != ENCODER_DECODER for name in given)
        return names if counts_words else tuple(name for name in names if name != "unk" or not others)

    def label(self, feature: str) -> str | None:
        """The n-best name given to ``feature``, or None."""
        return dict(self.labels).get(feature)


_MODEL_FILES = "\n".join(f"        {option.name}: a model file for the {', '.join(option.features)} feature "
                         f"({option.flag})." for option in MODEL_OPTIONS.values())

#: FeatureOptions' fields: the features, a model file of each option of the registry, and every setting.
_FIELDS = [("features", "tuple[str, ...] | None", field(default=None)),
           *((name, "str | None", field(default=None)) for name in MODEL_OPTIONS),
           ("vocab", "str | None", field(default=None)),
           ("unk_side", "str", field(default="both")),
           ("direction", "str | None", field(default=None)),
           ("length_normalize", "bool", field(default=False)),
           ("normalizer", "str", field(default="exact")),
           ("device", "str", field(default="auto")),
           ("dtype", "str", field(default="fp32")),
           ("batch_tokens", "int | None", field(default=None)),
           ("threads", "int | None", field(default=None)),
           ("compile", "bool", field(default=False)),
           ("labels", "tuple[tuple[str, str], ...]", field(default=()))]

FeatureOptions = make_dataclass("FeatureOptions", _FIELDS, bases=(_FeatureOptions,), frozen=True, namespace={
    "__module__": __name__,
    "__doc__": f"""The features to compute and every setting they take (see ``mosesrnn score --help``); a frozen
    dataclass whose model fields are the model registry's options (:data:`~mosesrnn.models.MODEL_OPTIONS`).

    Attributes:
        features: names in order (``"rnn,unk"`` or a sequence); None: every feature whose model file is
            given, and those that need none.
{_MODEL_FILES}
        vocab: a folder of word shortlists from ``mosesrnn vocab`` (unk without a model, or beside a
            subword model).
        unk_side: which words unk counts: source, target or both.
        direction: the direction the model must score (None: the model's).
        length_normalize: divide log p by the predicted tokens.
        normalizer: ``exact`` (log p, the default) or ``skip``: the raw score without the softmax normaliser,
            for a model trained self-normalised (``train --self-norm``; refused for another).
        device, dtype, batch_tokens, threads: where and how the models run; batch_tokens None: the
            resolved device's default (:data:`~mosesrnn.runtime.devices.BATCH_TOKENS`: 4096 on a CPU, 32768
            on a GPU); threads None: torch's own count.
        compile: run the rnn columns' recurrent steps compiled (``torch.compile``; CUDA graphs on a GPU:
            :mod:`mosesrnn.encdec.compiled`); off, the values are the eager path's, byte for byte.
        labels: ``(feature, name)`` pairs renaming a feature's group in an n-best list, e.g.
            ``(("rnn", "RNN1"),)`` so that a second model's scores go beside the first's ``RNN0``.
    """})


def _is_label(text: str) -> bool:
    return text[:1].isalpha() and text[-1:].isdigit() and text.replace("_", "").isalnum()
