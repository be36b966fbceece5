"""The model registry: every kind of model file mosesrnn trains and reads, one row each.

A row (:class:`ModelKind`) is what the rest of mosesrnn knows of a model family: the ``kind`` its files
record and the words that name it, the function that loads one (``module:function``, imported when a model
is loaded), how ``mosesrnn perplexity`` measures one (:class:`Perplexity`), what else may refuse a file of the
kind for an option, whether its features read each hypothesis' word alignment, and the options that name its
files (:class:`ModelOption`): a field of :class:`~mosesrnn.features.options.FeatureOptions`, its flags, the
n-best features that read it and its help; and, for a family that goes inside Moses' decoder, the feature
``moses-ini`` adds (:class:`DecoderFeature`).

From the rows come the kinds the input/output floor names (:data:`MODEL_KINDS`), the roles the files of
``FeatureOptions``' model fields are declared with (the fields themselves are written out there, one an
option, in the rows' order: ``tests/test_features.py`` keeps the two equal), the loading
(:class:`~mosesrnn.features.selection.LoadedModels`), the kinds ``tune`` checks before it starts
(:mod:`moses_integration.route.checks`), the model options of ``score``, ``nbest`` and ``tune``
(:func:`mosesrnn.cli.features.model_options`), what ``perplexity`` reads and prints, and of the families inside
the decoder (:data:`DECODER_FEATURES`) ``moses-ini``'s options, what
:func:`~moses_integration.ini_update.update_moses_ini` adds and the tuning
report's labels: a new family is its folder, one row here and its fields of ``FeatureOptions``.

Plain data that imports nothing of mosesrnn, on the lowest floor, so that every floor reads it (sacrebleu's ``METRICS``
table, with CTranslate2's loaders by name).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["ENCODER_DECODER", "CSLM", "JOINT", "ModelOption", "DecoderFeature", "HeldOutText", "Perplexity",
           "ModelKind", "MODELS", "MODEL_KINDS", "MODEL_OPTIONS", "DECODER_FEATURES", "FEATURE_MODELS", "kind_of",
           "resolve"]

#: The kinds of model file (the ``kind`` a model file records).
ENCODER_DECODER, CSLM, JOINT = "encoder-decoder", "cslm", "bilm"


@dataclass(frozen=True)
class ModelOption:
    """An option that names a model file of its row's kind.

    Attributes:
        name: its :class:`~mosesrnn.features.options.FeatureOptions` field (``model``, ``lm``, ``bilm_t2s``...).
        flags: its command-line flags, the short one first (``-m``, ``--model``).
        features: the features that read its model (``rnn``; ``cslm``; ``bilm-t2s``).
        help: its help in ``score`` and ``nbest``.
        rescoring_help: its help in ``tune`` (None: ``help``).
        placeholder: what a message names its value (``-m MODEL``, ``--lm CSLM``).
    """

    name: str
    flags: tuple[str, ...]
    features: tuple[str, ...]
    help: str
    rescoring_help: str | None = None
    placeholder: str = "MODEL"

    @property
    def flag(self) -> str:
        """The flag messages name it by (``-m``, ``--reverse-model``)."""
        return self.flags[0]


@dataclass(frozen=True)
class DecoderFeature:
    """How a family's model goes inside Moses' decoder, as an NPLM feature that ``moses-ini`` adds.

    Attributes:
        name: its options of ``moses-ini`` (``--cslm`` and ``--cslm-weight``) and the label of its weight in the
            tuning report (``cslm``).
        moses_feature: the Moses feature it adds (``NeuralLM``, ``BilingualNPLM``); its weights are those of the
            features whose name starts so.
        adds: ``module:function(text, ini, path, weight, absolute) -> (text, line)``: the moses.ini ``text``
            (read from ``ini``) with the feature reading the NPLM file ``path`` (``absolute``: its paths made
            absolute), and what was added, whose ``message(shown)`` says so (a module of
            ``moses_integration``, imported when it is called).
        help: the help of its ``moses-ini`` option.
        companions: the files its export writes beside the NPLM file (suffixes), read with it.
    """

    name: str
    moses_feature: str
    adds: str
    help: str
    companions: tuple[str, ...] = ()

    @property
    def weight_help(self) -> str:
        """The help of its weight option."""
        return f"The {self.moses_feature} feature's initial weight (tune it with `mosesrnn tune`)."


@dataclass(frozen=True)
class HeldOutText:
    """What ``mosesrnn perplexity`` measures a model on, as its command line gives it.

    Attributes:
        inputs: its INPUTS (files), as many as the kind's :attr:`Perplexity.counts` allow.
        encoding: their encoding.
        limit: the first lines (or a table's unique pairs) measured; None: all.
        seed: the seed of a shuffled control, where the kind measures one.
        device: where a model that runs on a device is measured (``auto``, ``cpu``, ``cuda:0``).
    """

    inputs: tuple[str, ...]
    encoding: str = "utf-8"
    limit: int | None = None
    seed: int = 1
    device: str = "auto"


@dataclass(frozen=True)
class Perplexity:
    """How ``mosesrnn perplexity`` measures a model of the kind on held-out text.

    Attributes:
        measure: ``module:function(path, held_out) -> Iterator[str]``: the lines it prints for the model file
            ``path`` and a :class:`HeldOutText` (a module of the family, imported when it is called).
        counts: the numbers of INPUTS it reads; empty: any number, each measured alone.
        reads: what it reads, in words: the usage error for another number of INPUTS.
    """

    measure: str
    counts: tuple[int, ...] = ()
    reads: str = ""


@dataclass(frozen=True)
class ModelKind:
    """A kind of model file and the options that name one (see the module docstring).

    Attributes:
        kind: what its files record as their ``kind``.
        holds: what such a file holds, in words (``a CSLM (a target language model, from `mosesrnn lm train`)``).
        loader: ``module:function`` reading a file of the kind (``function(path)``), imported when it is called.
        options: the options that name its files, in the order the commands offer them.
        perplexity: how ``mosesrnn perplexity`` measures one on held-out text (:class:`Perplexity`).
        check: ``module:function(path, option) -> str | None``: one line refusing a file of the kind for an
            option (a joint model of another orientation than its option's), or None; checked before ``tune``
            starts. None: a file of the kind fits every option of it.
        reads_alignments: its features read each hypothesis' word alignment (the n-best lists must hold it).
        decoder: how its model goes inside Moses' decoder (:class:`DecoderFeature`), or None: only as columns
            or n-best features.
    """

    kind: str
    holds: str
    loader: str
    options: tuple[ModelOption, ...]
    perplexity: Perplexity
    check: str | None = None
    reads_alignments: bool = False
    decoder: DecoderFeature | None = None

    def load(self, path: str):
        """Read a model file of this kind with its loader (its module imported now).

        Args:
            path: the model file.

        Returns:
            What the loader returns: the family's ``Trained<Family>`` object.

        Raises:
            ModelFileError: ``path`` is not a model file of this kind, saying why (a
                :class:`~mosesrnn.errors.MosesRNNError`).
        """
        return resolve(self.loader)(path)

    def refusal(self, path: str, option: str) -> str | None:
        """Whether a file of this kind fits an option of it (:attr:`check`).

        Args:
            path: the model file.
            option: the option that names it (a FeatureOptions field: ``bilm_t2s``).

        Returns:
            One line refusing the file for the option (a joint model of another orientation), or None.
        """
        return resolve(self.check)(path, option) if self.check else None


def resolve(target: str):
    """The object a ``module:name`` string of the registry names, its module imported now."""
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


_JOINT_OTHER = "a joint model of another direction, Devlin et al. 2014 Sec. 4"

#: Every kind of model file, in the order of its features' columns.
MODELS: dict[str, ModelKind] = {row.kind: row for row in (
    ModelKind(ENCODER_DECODER, "an RNN Encoder-Decoder (a translation model, from `mosesrnn train`)",
              "mosesrnn.encdec.model_file:load_encoder_decoder", (
                  ModelOption("model", ("-m", "--model"), ("rnn",),
                              "A model file from `mosesrnn train` (for the rnn feature; its shortlists serve unk).",
                              "An RNN Encoder-Decoder file for the rnn rescoring feature (a sentence-level model), or "
                              "whose shortlists serve unk."),
                  ModelOption("reverse_model", ("--reverse-model",), ("rnn-rev",),
                              "A second model, trained in the other direction (`train --direction "
                              "target-to-source`), for the rnn-rev feature: both directions in one pass.",
                              "A model of the other direction, for rnn-rev.")),
              Perplexity("mosesrnn.analysis.perplexity:held_out_lines", (1, 2),
                         "give SRC TRG (two files) or one phrase table")),
    ModelKind(CSLM, "a CSLM (a target language model, from `mosesrnn lm train`)",
              "mosesrnn.cslm.model_file:load_cslm", (
                  ModelOption("lm", ("--lm",), ("cslm",),
                              "A CSLM file from `mosesrnn lm train`, for the cslm feature (the hypothesis' "
                              "log-probability under a neural target language model).",
                              "A CSLM file (`mosesrnn lm train`) for the cslm rescoring feature.", "CSLM"),),
              Perplexity("mosesrnn.cslm.scoring:held_out_lines"),
              decoder=DecoderFeature(
                  "cslm", "NeuralLM", "moses_integration.neural_lm:with_neural_lm",
                  "Add the CSLM inside the decoder: a NeuralLM feature (Moses built --with-nplm) reading this NPLM "
                  "file from `mosesrnn lm export`, its order read from the file, and its weight.")),
    ModelKind(JOINT, "a joint model (source and target, for Moses' BilingualNPLM, from `mosesrnn bilm train`)",
              "mosesrnn.bilm.model_file:load_joint", (
                  ModelOption("bilm", ("--bilm",), ("bilm",),
                              "A joint model file from `mosesrnn bilm train`, for the bilm feature (the hypothesis' "
                              "log-probability given the source; the list must hold Moses' word alignment).",
                              "A joint model file (`mosesrnn bilm train`) for the bilm rescoring feature; the n-best "
                              "lists are then decoded with their word alignments (the phrase tables must hold them: "
                              "checked before any work)."),
                  ModelOption("bilm_r2l", ("--bilm-r2l",), ("bilm-r2l",),
                              "A joint model file from `mosesrnn bilm train`, trained source-to-target, right-to-left "
                              f"(`bilm train --right-to-left`), for the bilm-r2l feature ({_JOINT_OTHER})."),
                  ModelOption("bilm_t2s", ("--bilm-t2s",), ("bilm-t2s",),
                              "A joint model file from `mosesrnn bilm train`, trained target-to-source, left-to-right "
                              "(`bilm train --direction target-to-source`), for the bilm-t2s feature "
                              f"({_JOINT_OTHER})."),
                  ModelOption("bilm_t2s_r2l", ("--bilm-t2s-r2l",), ("bilm-t2s-r2l",),
                              "A joint model file from `mosesrnn bilm train`, trained target-to-source, right-to-left "
                              "(`bilm train --direction target-to-source --right-to-left`), for the bilm-t2s-r2l "
                              f"feature ({_JOINT_OTHER}).")),
              Perplexity("mosesrnn.bilm.scoring:held_out_lines", (3,),
                         "a joint model measures SRC TRG ALIGNMENT (three files: a word-aligned corpus)"),
              check="mosesrnn.bilm.model_file:orientation_refusal", reads_alignments=True,
              decoder=DecoderFeature(
                  "bilm", "BilingualNPLM", "moses_integration.bilingual_lm:with_bilingual_lm",
                  "Add the joint model inside the decoder: a BilingualNPLM feature (Moses built --with-nplm) reading "
                  "this file from `mosesrnn bilm export`, its windows and vocabularies from the files beside it.",
                  companions=(".target", ".source", ".json"))),
)}

#: What the files of each kind hold, in words (for messages naming a file's kind).
MODEL_KINDS: dict[str, str] = {kind: row.holds for kind, row in MODELS.items()}
#: Every model option by its name (the FeatureOptions field), in the rows' order.
MODEL_OPTIONS: dict[str, ModelOption] = {option.name: option for row in MODELS.values() for option in row.options}
#: The families that go inside Moses' decoder, by their DecoderFeature's name (``cslm``, ``bilm``), in the rows' order.
DECODER_FEATURES: dict[str, DecoderFeature] = {row.decoder.name: row.decoder for row in MODELS.values()
                                               if row.decoder is not None}
#: The model option each feature reads (features that read none, like unk, are not here).
FEATURE_MODELS: dict[str, str] = {feature: option.name for option in MODEL_OPTIONS.values()
                                  for feature in option.features}


def kind_of(option: str) -> ModelKind:
    """The row of the kind of model file an option names.

    Args:
        option: a model option's name, a FeatureOptions field (``model``, ``lm``, ``bilm_t2s``...).

    Returns:
        Its :class:`ModelKind`.

    Raises:
        StopIteration: ``option`` is no model option (a programmer's mistake: the names come from
            :data:`MODEL_OPTIONS`).
    """
    return next(row for row in MODELS.values() if any(o.name == option for o in row.options))
