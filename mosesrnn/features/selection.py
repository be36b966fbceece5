"""Which feature columns a job computes, built from the options: the model files loaded once each, by the
loader of their kind in the model registry (:data:`mosesrnn.models.MODELS`)."""
from __future__ import annotations

import logging

from ..errors import MosesRNNError
from ..models import MODEL_OPTIONS, kind_of
from .options import FeatureOptions
from .registry import FEATURES, Feature

__all__ = ["LoadedModels", "select_features"]

log = logging.getLogger("mosesrnn")

#: The settings given other than their default, by the option that gives them: refused where no column takes them.
_GIVEN = {"normalizer": ("--normalizer skip", lambda options: options.normalizer != "exact"),
          "length_normalize": ("--length-normalize", lambda options: options.length_normalize)}


class LoadedModels:
    """The model files of a :class:`FeatureOptions`, each read once (through the one model reader) onto
    the options' device."""

    def __init__(self, options: FeatureOptions):
        from ..runtime.devices import resolve_device
        self.options, self.device = options, resolve_device(options.device)
        self._loaded: dict = {}

    def get(self, feature: str, which: str = "model"):
        """The model of option ``which`` (``model``, ``reverse_model``, ``lm``, ``bilm``, ``bilm_t2s``...) that
        ``feature`` needs, as its kind's loader returns it: a
        :class:`~mosesrnn.encdec.model_file.TrainedEncoderDecoder`, a :class:`~mosesrnn.cslm.model_file.TrainedCSLM`
        or a :class:`~mosesrnn.bilm.model_file.TrainedJoint`."""
        path = getattr(self.options, which)
        if path is None:
            option = MODEL_OPTIONS[which]
            raise MosesRNNError(f"the {feature} feature needs a model file ({option.flag} {option.placeholder})")
        if which not in self._loaded:
            self._loaded[which] = kind_of(which).load(path)
        return self._loaded[which]


def select_features(options: FeatureOptions, tables: bool = False) -> list[Feature]:
    """The features of ``options`` (:meth:`FeatureOptions.names`), in order, built and ready; ``tables``:
    for a phrase table, which refuses the whole-sentence features.

    The defaults leave out ``unk`` for a subword model without word shortlists: it has no UNK
    (give ``vocab``, word shortlists, to count the words outside them).
    """
    names = options.names()
    sentence_only = [name for name in names if not FEATURES[name].tables]
    if tables and sentence_only:
        raise MosesRNNError(f"{', '.join(sentence_only)} scores whole sentences, not phrase pairs: use it on n-best "
                            f"lists (`mosesrnn nbest --lm`), or inside Moses (`mosesrnn lm export`)")
    models = LoadedModels(options)
    if options.features is None and options.model and options.vocab is None and "unk" in names:
        from .unk import has_word_shortlists
        if not has_word_shortlists(models.get("unk")):
            log.info("subword model: no unk column (no word shortlists; give --vocab DIR to count words outside them)")
            names = tuple(name for name in names if name != "unk")
    _check_settings_taken(options, names)
    return [FEATURES[name].build(options, models) for name in names]


def _check_settings_taken(options: FeatureOptions, names: tuple[str, ...]) -> None:
    """Raise MosesRNNError for a setting given (:data:`_GIVEN`) that none of the columns ``names`` takes: it would
    change nothing, silently."""
    for setting, (option, given) in _GIVEN.items():
        if given(options) and not any(setting in FEATURES[name].settings for name in names):
            takers = " and ".join(name for name, spec in FEATURES.items() if setting in spec.settings)
            raise MosesRNNError(f"{option} changes only the {takers} columns, and none is computed (columns: "
                                f"{', '.join(names) or 'none'}): leave it out, or compute one of them")
