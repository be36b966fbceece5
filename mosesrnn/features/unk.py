"""The paper's unknown-word penalty (C14 Sec. 4.2): the number of words outside the shortlists.

It counts Moses words (factor 0) against word shortlists, so its meaning does not change with
the model. A subword (SentencePiece) model has no word shortlist: it reads and predicts every
word, so the penalty's reason in C14 (words the RNN sees as [UNK]) is gone. With such a model the
feature needs word shortlists given separately (``--vocab DIR`` from ``mosesrnn vocab``) and
counts the words outside them; without them it is refused.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..errors import MosesRNNError
from ..text.tokenizers import MosesWords, words
from ..text.vocab import VocabularyPair
from .options import UNK_SIDES, FeatureOptions
from .registry import FEATURES, Pair

__all__ = ["UNK_SIDES", "UnknownWordCounter", "UnknownWordFeature", "has_word_shortlists", "build"]


class UnknownWordCounter:
    """The number of source words, target words or both (``side``) outside the shortlists, of each pair."""

    def __init__(self, vocabularies: VocabularyPair, side: str = "both"):
        if side not in UNK_SIDES:
            raise MosesRNNError(f"unknown-word side must be one of {', '.join(UNK_SIDES)}, not {side!r}")
        self.vocabularies, self.side = vocabularies, side

    def __call__(self, pairs: Sequence[Pair]) -> np.ndarray:
        """The unknown-word count of every pair, in order, as float64 (an array crosses between processes
        in one piece)."""
        count_source = self.side in ("source", "both")
        count_target = self.side in ("target", "both")
        source_vocabulary, target_vocabulary = self.vocabularies.source, self.vocabularies.target
        values, last_source, source_unknown = [], None, 0
        for pair in pairs:
            n = 0
            if count_source:
                if pair.source != last_source:  # the targets of one source come together
                    last_source = pair.source
                    source_unknown = source_vocabulary.count_unknown(words(pair.source))
                n += source_unknown
            if count_target:
                n += target_vocabulary.count_unknown(words(pair.target))
            values.append(n)
        return np.array(values, dtype=np.float64)


class UnknownWordFeature:
    """The unk column: :class:`UnknownWordCounter` with a registry entry. It needs no model, so its
    :attr:`encoder` gives the values and :meth:`compute` passes them on."""

    spec = FEATURES["unk"]

    def __init__(self, vocabularies: VocabularyPair, side: str = "both"):
        self.encoder = UnknownWordCounter(vocabularies, side)
        self.vocabularies, self.side = vocabularies, side

    def settings(self) -> dict:
        """The counted side and the shortlists' digest."""
        return {"side": self.side, "vocab": self.vocabularies.digest()}

    def values(self, pairs: Sequence[Pair]) -> list[float]:
        """The unknown-word count of every pair, in order."""
        return self.encoder(pairs).tolist()

    def compute(self, encoded: np.ndarray) -> np.ndarray:
        """The counts :attr:`encoder` gave."""
        return encoded

    def start(self, encoded: np.ndarray) -> Callable[[], np.ndarray]:
        """:meth:`compute`, as the features on a device start it: the counts, ready."""
        return lambda: encoded


def has_word_shortlists(trained) -> bool:
    """Whether a :class:`~mosesrnn.encdec.model_file.TrainedEncoderDecoder` reads Moses words (not subwords)."""
    return all(isinstance(codec.tokenizer, MosesWords) for codec in (trained.text.source, trained.text.target))


def _load_shortlists(directory: str) -> VocabularyPair:
    from ..text.subwords import load_vocab_dir

    vocabularies, tokenizers = load_vocab_dir(directory)
    if not all(isinstance(tokenizer, MosesWords) for tokenizer in tokenizers):
        raise MosesRNNError(f"{directory}: holds SentencePiece models; the unk feature counts words "
                            f"outside word shortlists (build them with `mosesrnn vocab` without --spm)")
    return vocabularies


def build(options: FeatureOptions, models) -> UnknownWordFeature:
    """The feature over the model's word shortlists, else those of ``--vocab`` (see the module docstring)."""
    if options.model is not None and has_word_shortlists(models.get("unk")):
        vocabularies = models.get("unk").vocabularies
    elif options.vocab is not None:
        vocabularies = _load_shortlists(options.vocab)
    elif options.model is not None:
        raise MosesRNNError(f"{options.model}: a subword model has no word shortlists for the unk feature "
                            f"(it scores every word); give word shortlists (--vocab DIR from `mosesrnn vocab`) "
                            f"or leave unk out (--features rnn)")
    else:
        raise MosesRNNError("the unk feature needs a model file (-m MODEL) or shortlists (--vocab DIR)")
    return UnknownWordFeature(vocabularies, options.unk_side)
