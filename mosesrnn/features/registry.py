"""The feature registry: every feature column mosesrnn can compute, in one table.

A feature turns a batch of phrase pairs (anything with ``.source`` and ``.target`` text, in the
table's orientation: phrase-table entries, n-best hypotheses with their source sentence) into one
float per pair. It does not format them: the output format encodes the values (a phrase table
holds ``e^v``, see :func:`mosesrnn.formats.phrase_table.table_value`; an n-best list the raw
value). Each :class:`FeatureSpec` says what the CLI, the signature, the resume check and
``moses_integration`` need to know: its help text, its default initial weight (with its sign),
the settings that change its values, and how many digits a phrase table keeps.

A feature's values are computed in two parts, ``compute(encoder(pairs))``: the encoder reads the text
(in worker processes when a table is scored with ``--workers``), ``compute`` runs the models.

This module imports no torch: ``moses-ini`` reads it, and a feature's code is imported only
when the feature is built.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Collection, Protocol, Sequence

from ..bilm.orientation import JOINT_FEATURES, Orientation
from ..encdec.pair_ids import Pair
from ..errors import MosesRNNError
from ..models import FEATURE_MODELS

__all__ = ["Pair", "Feature", "FeatureSpec", "FEATURES", "parse_feature_names", "describe", "default_features"]


class Feature(Protocol):
    """A column of values, one per phrase pair."""

    spec: "FeatureSpec"

    def settings(self) -> dict[str, Any]:
        """The value of each of ``spec.settings`` for this instance (for the signature)."""

    def values(self, pairs: Sequence[Pair]) -> list[float]:
        """One value per pair, in order: ``compute(encoder(pairs))``."""

    #: The part of :meth:`values` that reads the text: picklable and free of torch, so that worker processes
    #: run it (:mod:`mosesrnn.pipeline.workers`); its result goes to :meth:`compute`. Phrase-table features
    #: (``spec.tables``) have both; the n-best features need only :meth:`values`.
    encoder: Callable[[Sequence[Pair]], Any]

    def compute(self, encoded: Any) -> Sequence[float]:
        """The rest of :meth:`values`, in the process that holds the models: one value per encoded pair (a
        float64 array for the phrase-table features)."""

    def start(self, encoded: Any) -> Callable[[], Sequence[float]]:
        """:meth:`compute`, started (phrase-table features): on a GPU the work is queued and this returns without
        waiting; calling the result waits for the values. The scorer starts a chunk before it reads the last."""


@dataclass(frozen=True)
class FeatureSpec:
    """What is known of a feature before it is built.

    Attributes:
        name: its name in ``--features`` and in the scored table's sidecar.
        summary: one line for ``--help``.
        default_weight: its initial weight in moses.ini; the sign rewards or penalises.
        settings: the options that change its values (all recorded in the signature); not those that
            move them by rounding alone (batch size, device: shards scored on a GPU and on a CPU merge).
        table_digits: significant digits of ``e^v`` in a phrase table; None writes it exactly.
        tables: whether it scores phrase pairs (a phrase-table column); False for whole-sentence
            features (n-best lists only).
        builder: ``module:function`` that builds it from the options and the loaded models
            (:class:`~mosesrnn.features.selection.LoadedModels`) and ``builder_args``, imported lazily; the
            feature class holds its spec as ``spec = FEATURES[name]``.
        builder_args: what else the builder is given (one builder for several features: their name).
    """

    name: str
    summary: str
    default_weight: float
    settings: tuple[str, ...]
    table_digits: int | None
    builder: str
    tables: bool = True
    builder_args: tuple = ()

    @property
    def needs(self) -> str | None:
        """The :class:`~mosesrnn.features.options.FeatureOptions` field of the model file it reads (the model
        registry's option that lists it: :data:`~mosesrnn.models.FEATURE_MODELS`), or None when it needs no model
        (a vocabulary may do)."""
        return FEATURE_MODELS.get(self.name)

    def build(self, options, models) -> Feature:
        """Import the feature's module and build it from the options, the loaded models and ``builder_args``."""
        module, function = self.builder.split(":")
        return getattr(importlib.import_module(module), function)(options, models, *self.builder_args)


def _joint_spec(orientation: Orientation) -> FeatureSpec:
    """The n-best feature of a joint model of ``orientation``: ``bilm`` (the forward one), ``bilm-t2s``..."""
    flag = "--" + orientation.option.replace("_", "-")
    what = ("log p(hypothesis | source)" if orientation.direction == "source-to-target"
            else "log p(source | hypothesis)")
    return FeatureSpec(orientation.feature, f"{what} under the {orientation.describe()} joint model of {flag} "
                       f"(Devlin et al. 2014): the sum over the predicted side's words, each given 2m+1 words of the "
                       f"other side around its affiliated one and its history (n-best lists written by Moses with "
                       f"-print-alignment-info-in-n-best"
                       + (", best with -include-segmentation-in-n-best too)" if orientation == Orientation() else ")"),
                       default_weight=0.1, settings=("model", "order", "source_window"), table_digits=None,
                       builder="mosesrnn.features.bilm:build", tables=False,
                       builder_args=(orientation.feature,))


FEATURES: dict[str, FeatureSpec] = {spec.name: spec for spec in (
    FeatureSpec("rnn", "log p(target | source) under the RNN Encoder-Decoder (phrase table: its exp)",
                default_weight=0.1,
                settings=("model", "direction", "dtype", "length_normalize", "normalizer"),
                table_digits=9, builder="mosesrnn.features.rnn:build"),
    FeatureSpec("rnn-rev", "log p(the other side | the one it reads) under --reverse-model, a second model "
                "trained in the other direction (p(source | target) beside rnn's p(target | source); phrase "
                "table: its exp)",
                default_weight=0.1,
                settings=("model", "direction", "dtype", "length_normalize", "normalizer"),
                table_digits=9, builder="mosesrnn.features.rnn:build_reverse"),
    FeatureSpec("unk", "the number of words outside the model's shortlists, C14 Sec. 4.2 (phrase table: e^n)",
                default_weight=-0.1, settings=("side", "vocab"), table_digits=None,
                builder="mosesrnn.features.unk:build"),
    FeatureSpec("cslm", "log p(hypothesis) under the CSLM of --lm, a neural target language model: the sum over "
                "its words and </s> (n-best lists only)",
                default_weight=0.1, settings=("model", "order"), table_digits=None,
                builder="mosesrnn.features.cslm:build", tables=False),
    *map(_joint_spec, JOINT_FEATURES.values()),
)}


def default_features(given: Collection[str] = ()) -> tuple[str, ...]:
    """The columns computed when none are named: each whose model file is given (``given``: the options of the
    model files given, ``model``, ``lm``, ``bilm_t2s``...), and those that need none."""
    return tuple(name for name, spec in FEATURES.items() if spec.needs is None or spec.needs in given)


def parse_feature_names(text: str) -> tuple[str, ...]:
    """``"rnn,unk"`` -> ``("rnn", "unk")``; raises MosesRNNError for an unknown or repeated name."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise MosesRNNError("no feature named")
    for name in names:
        if name not in FEATURES:
            raise MosesRNNError(f"unknown feature {name!r} (choose from: {', '.join(FEATURES)})")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise MosesRNNError(f"feature {', '.join(repeated)} named twice")
    return names


def describe(feature: Feature) -> str:
    """The feature and every setting that changes its values, e.g. ``unk(side=both,vocab=1a2b)``."""
    settings = feature.settings()
    if tuple(settings) != feature.spec.settings:
        raise ValueError(f"feature {feature.spec.name} reports settings {tuple(settings)}, "
                         f"its registry entry lists {feature.spec.settings}")
    text = ",".join(f"{key}={str(value).lower() if isinstance(value, bool) else value}"
                    for key, value in settings.items())
    return f"{feature.spec.name}({text})"
