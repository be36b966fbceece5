"""Translations scored by a joint model the way Moses' ``BilingualNPLM`` scores them.

Moses (``moses/LM/BilingualLM.cpp``, phrase-based decoding) scores every target word of every
phrase once: its ``order - 1`` predecessors (across phrases; ``<s>`` before the sentence) and the
``2m + 1`` source words around its affiliated source word. The affiliation is searched *inside the
phrase*: the word's own links, else the nearest linked word of the same phrase, right first; the
middle link (the lower one of an even count). No ``</s>`` is scored. Each value is NPLM's raw
output score (natural log), floored at -100, and the feature is their sum: :func:`sentence_scores`
with ``normalized=False``. ``normalized=True`` gives exact log-probabilities, for rescoring.

A hypothesis of an n-best list carries what this needs when Moses writes it with
``-include-segmentation-in-n-best`` (``0-1=0-2 2=3``: each phrase's source and target spans) and
``-print-alignment-info-in-n-best`` (``0-0 1-2``: the word links, absolute positions).

The other directions (target-to-source, right-to-left: :mod:`mosesrnn.bilm.orientation`) never run in
the decoder, so there is no decoder to follow: :func:`reoriented_scores` sums the model over exactly
the n-grams training cuts from the pair reoriented (the affiliation searched over the sentence, and
the predicted side's ``</s>`` included), from the hypothesis' word alignment.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from ..cslm.scoring import NgramStats, ngram_stats, position_scores
from ..errors import MosesRNNError
from ..formats.phrase_table import MOSES_FLOOR
from ..models import HeldOutText
from ..text.tokenizers import words
from .data import BOS, EOS, ExampleSet, affiliations, aligned_sentences, examples, read_alignment, window_examples
from .model_file import TrainedJoint, load_joint

__all__ = ["AlignedTranslation", "parse_segmentation", "translation_affiliations", "sentence_scores", "aligned",
           "linked", "reoriented_scores", "corpus_stats", "held_out_lines"]


@dataclass(frozen=True)
class AlignedTranslation:
    """A source sentence, a translation of it, and each target word's affiliated source position."""

    source: Sequence[str]
    target: Sequence[str]
    affiliated: Sequence[int]


def parse_segmentation(text: str) -> list[tuple[int, int]]:
    """The target spans ``(first, last)`` of a Moses segmentation field (``0-1=0-2 2=3``), in order."""
    spans = []
    for part in text.split():
        _, equals, target = part.partition("=")
        first, _, last = target.partition("-")
        if not equals or not first.isdigit() or (last and not last.isdigit()):
            raise MosesRNNError(f"{part!r} is not a Moses segment (SOURCE=TARGET, e.g. 0-1=0-2)")
        spans.append((int(first), int(last or first)))
    return spans


def translation_affiliations(source_len: int, target_len: int, alignment: str, segmentation: str | None = None
                             ) -> list[int]:
    """Each target word's affiliated source position, from Moses' word alignment of a translation, searched
    inside each phrase as the decoder does when the ``segmentation`` is given, else over the sentence.

    Raises MosesRNNError for malformed fields, or a phrase without any link (Moses refuses those too)."""
    links = read_alignment(alignment, source_len, target_len)
    spans = parse_segmentation(segmentation) if segmentation else [(0, target_len - 1)]
    if spans and (spans[0][0] != 0 or spans[-1][1] != target_len - 1):
        raise MosesRNNError(f"the segmentation {segmentation!r} does not cover the {target_len} target words")
    found: list[int] = []
    for first, last in spans:
        inside = affiliations(links[first:last + 1])
        if inside and inside[0] is None:
            raise MosesRNNError(f"target words {first}-{last} have no alignment link: BilingualNPLM needs a phrase "
                                f"table with word alignments")
        found.extend(inside)
    return found


def translation_examples(model: TrainedJoint, translations: Sequence[AlignedTranslation]) -> ExampleSet:
    """The n-grams Moses queries for each target word of each translation (no ``</s>``)."""
    vocabulary = model.vocabulary
    bos = (vocabulary.source_ids([BOS])[0], vocabulary.target_ids([BOS])[0])
    eos_source = vocabulary.source_ids([EOS])[0]
    width = 2 * model.source_window + 1 + model.order
    blocks = [window_examples(vocabulary.source_ids(t.source), vocabulary.target_ids(t.target), t.affiliated,
                              model.source_window, model.order, bos, eos_source)
              for t in translations if len(t.target)]
    grams = np.concatenate(blocks) if blocks else np.zeros((0, width), dtype=np.int32)
    return ExampleSet(grams, len(grams))


def sentence_scores(model: TrainedJoint, translations: Sequence[AlignedTranslation], normalized: bool = True,
                    batch_size: int = 1024) -> list[float]:
    """The natural-log score of each translation: the sum over its words.

    ``normalized``: log p(word | source window, history); else the raw score floored at -100 per word, the
    value of Moses' BilingualNPLM feature for a self-normalised model."""
    return _sums(model, translation_examples(model, translations), [len(t.target) for t in translations],
                 normalized, batch_size)


def reoriented_scores(model: TrainedJoint,
                      pairs: Sequence[tuple[Sequence[str], Sequence[str], Sequence[Sequence[int]]]],
                      batch_size: int = 1024) -> list[float]:
    """log p of the side a model predicts, for each ``(source words, target words, source positions linked to
    each target word)``: the sum over the n-grams of the pair reoriented for the model (its
    :class:`~mosesrnn.bilm.orientation.Orientation`), as training cuts them (``</s>`` included); 0 for a
    pair without a link (no n-gram)."""
    oriented = [model.orientation.apply(*pair) for pair in pairs]
    data = examples(oriented, model.vocabulary, model.source_window, model.order)
    return _sums(model, data, [len(predicted) + 1 if any(links) else 0 for _, predicted, links in oriented], True,
                 batch_size)


def _sums(model: TrainedJoint, data: ExampleSet, lengths: Sequence[int], normalized: bool, batch_size: int
          ) -> list[float]:
    """The sum of each consecutive run of ``lengths`` n-grams of ``data`` (0 for an empty one)."""
    if not len(data):
        return [0.0] * len(lengths)
    scores, log_z = position_scores(model.network, data, batch_size)
    per_word = scores - log_z if normalized else np.maximum(scores, MOSES_FLOOR)
    ends = np.cumsum(lengths)
    totals = np.add.reduceat(np.r_[per_word, 0.0], np.r_[0, ends[:-1]])
    return [float(total) if length else 0.0 for length, total in zip(lengths, totals)]


def aligned(source: str, target: str, alignment: str, segmentation: str | None = None) -> AlignedTranslation:
    """An :class:`AlignedTranslation` from the text of a source sentence, a translation and Moses' fields."""
    source_words, target_words = words(source.strip()), words(target.strip())
    return AlignedTranslation(source_words, target_words,
                              translation_affiliations(len(source_words), len(target_words), alignment, segmentation)
                              if target_words else [])


def linked(source: str, target: str, alignment: str) -> tuple[list[str], list[str], list[list[int]]]:
    """``(source words, target words, source positions linked to each target word)`` of a translation and Moses'
    word alignment of it; raises MosesRNNError for a link outside the pair, or words without any link."""
    source_words, target_words = words(source.strip()), words(target.strip())
    links = read_alignment(alignment, len(source_words), len(target_words))
    if source_words and target_words and not any(links):
        raise MosesRNNError("the translation has no alignment link: the joint model needs a phrase table with word "
                            "alignments")
    return source_words, target_words, links


def corpus_stats(model: TrainedJoint, source: str, target: str, alignment: str, encoding: str = "utf-8",
                 limit: int | None = None) -> NgramStats:
    """What the joint model makes of a held-out word-aligned corpus (its first ``limit`` sentence pairs, when
    given), reoriented for the model: NLL per token (words and ``</s>``, as in training), perplexity, ``<unk>``
    share and log Z (:class:`~mosesrnn.cslm.scoring.NgramStats`).

    Raises MosesRNNError for a corpus whose pairs mostly have no alignment link (:func:`aligned_sentences`)."""
    with aligned_sentences(source, target, alignment, encoding, limit, model.orientation) as pairs:
        data = examples(pairs, model.vocabulary, model.source_window, model.order)
    return ngram_stats(model.network, data, unknown=model.vocabulary.target_ids(["<unk>"])[0])


def held_out_lines(path: str, held_out: HeldOutText) -> Iterator[str]:
    """``mosesrnn perplexity`` of a joint model file: the target words' perplexity on a word-aligned corpus SRC TRG
    ALIGNMENT, and log Z (the registry's measure for the kind; measured on the CPU).

    Args:
        path: the joint model file.
        held_out: SRC TRG ALIGNMENT, and how many of their lines to read.

    Yields:
        One line.

    Raises:
        MosesRNNError: an unreadable file, or a corpus whose pairs mostly have no alignment link.
    """
    stats = corpus_stats(load_joint(path), *held_out.inputs, encoding=held_out.encoding, limit=held_out.limit)
    yield (f"{held_out.inputs[1]}: {stats.tokens} tokens (words and </s>): perplexity {stats.perplexity:.2f} per "
           f"token ({100 * stats.unk_share:.1f}% <unk>; {stats.perplexity_known:.2f} over the others), log Z "
           f"{stats.log_z_mean:+.3f} ± {stats.log_z_std:.3f}")
