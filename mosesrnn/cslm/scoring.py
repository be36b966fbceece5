"""Sentences scored by a CSLM the way Moses' NeuralLM scores a finished translation.

Moses (``moses/LM/Implementation.cpp``, phrase-based decoding) scores every target word once with
its n-1 predecessors as context — across phrase boundaries too, the words before the sentence
filled with ``<s>`` — and ``</s>`` after the last word; phrase-internal n-grams of a phrase's first
n-2 words are only estimates for the search and are replaced once the context is known. Each
value is NPLM's output score (natural log), floored at -100 (``FloorScore``). So a hypothesis'
``NeuralLM0=`` value is the sum over its words and ``</s>`` of the score given the n-1 tokens
before it, with n-1 ``<s>`` in front: what :func:`sentence_scores` computes (``normalized=False``);
``normalized=True`` gives the exact log-probabilities instead (the softmax's), for rescoring.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

from ..errors import MosesRNNError
from ..formats.phrase_table import MOSES_FLOOR
from ..formats.text_file import text_lines
from ..models import HeldOutText
from ..text.vocab import UNK_ID
from .data import BOS, ngrams
from .model import CSLM
from .model_file import TrainedCSLM, load_cslm

__all__ = ["position_scores", "sentence_scores", "NgramStats", "ngram_stats", "text_stats", "held_out_lines"]



@torch.inference_mode()
def position_scores(model: CSLM, data, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(score, log Z) of every example of ``data`` (its ``contexts()`` and ``targets()``: n-grams, or a joint
    model's examples), float64 arrays (N,).

    Each distinct context goes through the network once (log Z and every word's score depend on the
    context alone): the hypotheses of an n-best list share most of their contexts.
    """
    contexts = data.contexts()  # (N, n-1)
    targets = data.targets().astype(np.int64)
    distinct, which = np.unique(contexts, axis=0, return_inverse=True)
    which = which.reshape(-1)
    by_context = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[by_context], np.arange(0, len(distinct) + batch_size, batch_size))
    scores, log_z = np.empty(len(data)), np.empty(len(data))
    device = next(model.parameters()).device
    for batch, start in enumerate(range(0, len(distinct), batch_size)):
        output = model(torch.from_numpy(distinct[start:start + batch_size].astype(np.int64)).to(device))  # (b, V)
        index = by_context[bounds[batch]:bounds[batch + 1]]
        rows = torch.from_numpy(which[index] - start).to(device)
        scores[index] = output[rows, torch.from_numpy(targets[index]).to(device)].double().cpu().numpy()
        log_z[index] = output.logsumexp(1)[rows].double().cpu().numpy()
    return scores, log_z


def sentence_scores(trained: TrainedCSLM, sentences: Sequence[str], normalized: bool = True,
                    batch_size: int = 1024) -> list[float]:
    """The natural-log score of each sentence (Moses words): the sum over its words and ``</s>``.

    ``normalized``: log p(word | context); else the raw score floored at -100 per word, the value of
    Moses' NeuralLM feature for a self-normalised model.
    """
    vocabulary, order = trained.codec.vocabulary, trained.model.config.order
    data = ngrams((trained.codec.ids(text) for text in sentences), order, vocabulary.stoi[BOS])
    scores, log_z = position_scores(trained.model, data, batch_size)
    per_token = scores - log_z if normalized else np.maximum(scores, MOSES_FLOOR)
    ends = np.cumsum([len(trained.codec.ids(text)) + 1 for text in sentences])
    return [float(total) for total in np.add.reduceat(per_token, np.r_[0, ends[:-1]])] if len(sentences) else []


@dataclass(frozen=True)
class NgramStats:
    """What a CSLM makes of held-out text: NLL per token, perplexity, and its self-normalisation."""

    tokens: int
    nll: float  # mean -log p per token (words and </s>), nats
    unk_share: float  # share of the predicted tokens that are <unk>
    nll_known: float  # the same over the tokens that are not <unk>
    log_z_mean: float
    log_z_std: float

    @property
    def perplexity(self) -> float:
        """exp(NLL per token), <unk> predicted as a word class (as KenLM's "including OOVs")."""
        return math.exp(self.nll)

    @property
    def perplexity_known(self) -> float:
        """Perplexity over the tokens inside the shortlist (as KenLM's "excluding OOVs")."""
        return math.exp(self.nll_known)


def ngram_stats(model: CSLM, data, batch_size: int = 1024, unknown: int = UNK_ID) -> NgramStats:
    """:class:`NgramStats` of the examples of ``data`` (see :func:`position_scores`); ``unknown``: the id
    of ``<unk>`` among the predicted words."""
    scores, log_z = position_scores(model, data, batch_size)
    nll = log_z - scores
    known = data.targets() != unknown
    return NgramStats(len(data), float(nll.mean()), float(1 - known.mean()),
                      float(nll[known].mean()) if known.any() else math.nan, float(log_z.mean()), float(log_z.std()))


def text_stats(trained: TrainedCSLM, sentences: Sequence[str], path: str = "the text") -> NgramStats:
    """:class:`NgramStats` of tokenised sentences (blank ones skipped); raises MosesRNNError when there are none."""
    sentences = [text for text in sentences if text.strip()]
    if not sentences:
        raise MosesRNNError(f"{path}: no sentences to measure (it is empty, or holds blank lines only)")
    data = ngrams((trained.codec.ids(text) for text in sentences), trained.model.config.order,
                  trained.codec.vocabulary.stoi[BOS])
    return ngram_stats(trained.model, data)


def held_out_lines(path: str, held_out: HeldOutText) -> Iterator[str]:
    """``mosesrnn perplexity`` of a CSLM file: each tokenised text's perplexity (words and ``</s>``) and how
    self-normalised the model is there (the registry's measure for the kind; measured on the CPU).

    Args:
        path: the CSLM file.
        held_out: the texts, and how many of each one's lines to read.

    Yields:
        One line per text, as each is measured.

    Raises:
        MosesRNNError: an unreadable text or model file, or a text with no token.
    """
    trained = load_cslm(path)
    for text in held_out.inputs:
        with text_lines(text, held_out.encoding) as lines:
            sentences = [sentence for _, sentence in itertools.islice(lines, held_out.limit)]
        stats = text_stats(trained, sentences, text)
        yield (f"{text}: {sum(1 for sentence in sentences if sentence.strip())} sentences, {stats.tokens} tokens "
               f"(</s> included), {stats.unk_share:.2%} <unk>: perplexity {stats.perplexity:.2f} (<unk> as a word), "
               f"{stats.perplexity_known:.2f} over the shortlist's words; log Z {stats.log_z_mean:+.3f} ± "
               f"{stats.log_z_std:.3f}")
