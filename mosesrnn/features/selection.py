"""Which feature columns a job computes: the ones named, or the defaults for the given model files."""
from __future__ import annotations

import logging
from typing import Sequence

from .registry import FEATURES, Feature, FeatureOptions, build_features, default_features, parse_feature_names

__all__ = ["feature_names", "select_features"]

log = logging.getLogger("mosesrnn")


def feature_names(features: str | Sequence[str] | None, options: FeatureOptions) -> tuple[str, ...]:
    """The names in ``features`` (``"rnn,unk"`` or a list), checked; None: the defaults, every feature whose
    model file is given and those that need none (``unk`` not beside a CSLM alone: it would have no
    shortlists). Raises ValueError for an unknown or repeated name."""
    if features is None:
        names = default_features(options.model is not None, options.reverse_model is not None, options.lm is not None)
        counts_words = options.model is not None or options.vocab is not None
        return names if counts_words else tuple(name for name in names if name != "unk" or not options.lm)
    return parse_feature_names(features if isinstance(features, str) else ",".join(features))


def select_features(features: str | Sequence[str] | None, options: FeatureOptions,
                    tables: bool = False) -> list[Feature]:
    """The feature objects of :func:`feature_names`, in order, built from ``options``; ``tables``: for a
    phrase table, which refuses the whole-sentence features.

    The defaults leave out ``unk`` for a subword model without word shortlists: it has no UNK
    (give ``vocab``, word shortlists, to count the words outside them).
    """
    names = feature_names(features, options)
    sentence_only = [name for name in names if not FEATURES[name].tables]
    if tables and sentence_only:
        raise ValueError(f"{', '.join(sentence_only)} scores whole sentences, not phrase pairs: use it on n-best "
                         f"lists (`mosesrnn nbest --lm`), or inside Moses (`mosesrnn lm export`)")
    if features is None and options.model and options.vocab is None and "unk" in names:
        from .unk import has_word_shortlists
        if not has_word_shortlists(options.trained_model("unk")):
            log.info("subword model: no unk column (no word shortlists; give --vocab DIR to count words outside them)")
            names = tuple(name for name in names if name != "unk")
    return build_features(names, options)
