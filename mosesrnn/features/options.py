"""Which feature columns a run computes and how: one object, built by the command line, taken by the API.

``mosesrnn score`` and ``mosesrnn nbest`` build a :class:`FeatureOptions` from their options
(:mod:`mosesrnn.cli.features`), and hand it to :func:`mosesrnn.score_table` and
:func:`mosesrnn.score_nbest`, which a Python user calls with the same object::

    mosesrnn.score_table("phrase-table.gz", "scored.gz", FeatureOptions(model="model/best.pt"))

Its model files are the model registry's options (:data:`mosesrnn.models.MODEL_OPTIONS`): one field each,
written out in the registry's order (``tests/test_features.py`` keeps the two equal), declared to the run's
job in the role of its kind by :meth:`FeatureOptions.declared_paths`. A new model option is one row of the
registry and its field here; a feature with a new setting adds one field here (and its option in the CLI table).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..encdec.config import NORMALIZERS
from ..encdec.direction import DIRECTIONS
from ..errors import MosesRNNError
from ..io.roles import Role, input_folder, model_file
from ..models import ENCODER_DECODER, MODEL_OPTIONS, kind_of
from ..runtime import DEVICES, DTYPES
from .registry import FEATURES, default_features, parse_feature_names

__all__ = ["UNK_SIDES", "NORMALIZERS", "FeatureOptions"]

UNK_SIDES = ("source", "target", "both")


@dataclass(frozen=True)
class FeatureOptions:
    """The features to compute and every setting they take (see ``mosesrnn score --help``).

    The one object :func:`mosesrnn.score_table` and :func:`mosesrnn.score_nbest` take, and the one the
    commands build from their options. Its model fields (``model`` .. ``bilm_t2s_r2l``) are the model
    registry's options, in its order (:data:`~mosesrnn.models.MODEL_OPTIONS`; a test keeps the two equal).

    Attributes:
        features: the features' names in order (``"rnn,unk"`` or a sequence, stored as a tuple); None: every
            feature whose model file is given, and those that need none.
        model: a model file from ``mosesrnn train``, for the ``rnn`` feature (``-m``); its shortlists serve ``unk``.
        reverse_model: a model file trained in the other direction, for ``rnn-rev`` (``--reverse-model``).
        lm: a CSLM file from ``mosesrnn lm train``, for the ``cslm`` feature (``--lm``).
        bilm: a joint model file from ``mosesrnn bilm train``, for the ``bilm`` feature (``--bilm``).
        bilm_r2l: a joint model trained right-to-left, for ``bilm-r2l`` (``--bilm-r2l``).
        bilm_t2s: a joint model trained target-to-source, for ``bilm-t2s`` (``--bilm-t2s``).
        bilm_t2s_r2l: a joint model trained target-to-source, right-to-left, for ``bilm-t2s-r2l``
            (``--bilm-t2s-r2l``).
        vocab: a folder of word shortlists from ``mosesrnn vocab`` (unk without a model, or beside a
            subword model).
        unk_side: which words unk counts: ``source``, ``target`` or ``both``.
        direction: the direction the model must score (None: the model's).
        length_normalize: divide log p by the predicted tokens.
        normalizer: ``exact`` (log p, the default) or ``skip``: the raw score without the softmax normalizer,
            for a model trained self-normalised (``train --self-norm``; refused for another).
        device: where the models run: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        dtype: the precision of the matmuls (:data:`~mosesrnn.runtime.DTYPES`).
        batch_tokens: tokens a batch; None: the resolved device's default
            (:data:`~mosesrnn.runtime.devices.BATCH_TOKENS`: 4096 on a CPU, 32768 on a GPU).
        threads: torch's CPU threads for the job; None: torch's own count.
        compile: run the rnn columns' recurrent steps compiled (``torch.compile``; CUDA graphs on a GPU:
            :mod:`mosesrnn.encdec.compiled`); off, the values are the eager path's, byte for byte.
        labels: ``(feature, name)`` pairs renaming a feature's group in an n-best list, e.g.
            ``(("rnn", "RNN1"),)`` so that a second model's scores go beside the first's ``RNN0``.

    Raises:
        MosesRNNError: an unknown feature or choice, a count below 1, or a malformed or repeated label.
    """

    features: tuple[str, ...] | None = None
    # The model registry's options (MODEL_OPTIONS), one field each, in its order.
    model: str | None = None
    reverse_model: str | None = None
    lm: str | None = None
    bilm: str | None = None
    bilm_r2l: str | None = None
    bilm_t2s: str | None = None
    bilm_t2s_r2l: str | None = None
    # The settings.
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
        """The files these options name, by role, for the job of the run that uses them.

        Returns:
            ``(role, path)`` pairs: each model file given, in the role of its kind, and the ``vocab`` folder.
        """
        return [(model_file(kind_of(name).kind), path) for name, path in self.models().items()] + \
            ([(input_folder(), self.vocab)] if self.vocab is not None else [])

    def models(self) -> dict[str, str]:
        """The model files given.

        Returns:
            ``{field: path}`` for each model field that is not None (``model``, ``lm``, ``bilm_t2s``...:
            :data:`~mosesrnn.models.MODEL_OPTIONS`), in the registry's order.
        """
        return {name: getattr(self, name) for name in MODEL_OPTIONS if getattr(self, name) is not None}

    def names(self) -> tuple[str, ...]:
        """The features to compute.

        Returns:
            The names given, else the defaults for the model files given (unk not beside the other kinds'
            models alone: it would have no shortlists).
        """
        if self.features is not None:
            return self.features
        given = self.models()
        names = default_features(given)
        counts_words = "model" in given or self.vocab is not None
        others = any(kind_of(name).kind != ENCODER_DECODER for name in given)
        return names if counts_words else tuple(name for name in names if name != "unk" or not others)

    def label(self, feature: str) -> str | None:
        """The n-best name given to ``feature`` (``labels``), or None."""
        return dict(self.labels).get(feature)


def _is_label(text: str) -> bool:
    return text[:1].isalpha() and text[-1:].isdigit() and text.replace("_", "").isalnum()
