"""Text in, text out: translation by beam search and sampling with a trained model file.

The model's own codecs turn text into ids and back, so a model file is all that is needed. Sources
are batched by length (``batch_size`` sentences each) and results come back in input order. An
empty source line gets one empty translation (an empty 1-best line; one n-best line, as Moses).

n-best lines follow Moses' format, ids 0-based sentence indices: ``id ||| hypothesis ||| RNN0= log p
||| total``, where the total is the score that ranked the list (log p, or log p per token with
length normalisation), so `mosesrnn nbest` and MERT read them as a one-feature list.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import torch

from ..runtime.precision import precision
from . import search
from .batching import pad
from .model_file import TrainedEncoderDecoder

__all__ = ["Translation", "Searcher", "nbest_line", "NBEST_FEATURE"]

NBEST_FEATURE = "RNN0"


@dataclass(frozen=True)
class Translation:
    """One hypothesis as text, with its log p(y|x) (EOS included) and ranking score."""

    text: str
    log_prob: float
    score: float
    count: int = 1  # how many samples gave it (sampling only)


def nbest_line(sentence_id: int, translation: Translation) -> str:
    """A Moses n-best line (without newline): ``0 ||| text ||| RNN0= -3.2 ||| -3.2``."""
    return (f"{sentence_id} ||| {translation.text} ||| {NBEST_FEATURE}= {translation.log_prob:.6g} "
            f"||| {translation.score:.6g}")


class Searcher:
    """Beam search, greedy search and sampling over text with one trained model."""

    def __init__(self, trained: TrainedEncoderDecoder, *, device: str = "cpu", batch_size: int = 32,
                 max_len_ratio: float = 2.0, max_len_extra: int = 10, dtype: str = "fp32"):
        self.trained, self.device, self.batch_size = trained, device, batch_size
        self.precision = precision(dtype, device)
        self.model = self.precision.prepare(trained.model)
        self.ratio, self.extra = max_len_ratio, max_len_extra

    def _batches(self, sources: Sequence[str]) -> Iterator[tuple[list[int], torch.Tensor, torch.Tensor]]:
        """(positions, src (b, S), lengths (b,)) for the non-empty sources, by length."""
        ids = [self.trained.input_codec.ids(text) for text in sources]
        order = sorted((i for i in range(len(ids)) if ids[i]), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            positions = order[start:start + self.batch_size]
            src, lengths = pad([ids[i] for i in positions])
            yield positions, src.to(self.device), lengths.to(self.device)

    def _limit(self, lengths: torch.Tensor) -> torch.Tensor:
        return search.max_lengths(lengths, self.ratio, self.extra)

    def _texts(self, hyps: Iterable[search.DecodedSequence]) -> list[Translation]:
        return [Translation(self.trained.output_codec.text(hyp.ids), hyp.log_prob, hyp.score) for hyp in hyps]

    def translate(self, sources: Sequence[str], *, beam_size: int = 10, nbest: int = 1,
                  length_normalize: bool = False, exclude_unk: bool = True) -> list[list[Translation]]:
        """The ``nbest`` best translations of each source, best first, in input order.

        A source without tokens gets one empty translation with log p 0, as Moses gives an empty
        input line one empty hypothesis: every line keeps its sentence id in an n-best list.
        """
        results: list[list[Translation]] = [[Translation("", 0.0, 0.0)] for _ in sources]
        for positions, src, lengths in self._batches(sources):
            with self.precision.autocast():
                found = search.beam_search(self.model, src, lengths, beam_size, nbest=nbest,
                                           length_normalize=length_normalize, exclude_unk=exclude_unk,
                                           limit=self._limit(lengths))
            for position, hyps in zip(positions, found):
                results[position] = self._texts(hyps)
        return results

    def greedy(self, sources: Sequence[str], *, exclude_unk: bool = True) -> list[Translation | None]:
        """Greedy translations in input order (None for an empty source)."""
        results: list[Translation | None] = [None for _ in sources]
        for positions, src, lengths in self._batches(sources):
            with self.precision.autocast():
                hyps = search.greedy(self.model, src, lengths, exclude_unk=exclude_unk, limit=self._limit(lengths))
            for position, translation in zip(positions, self._texts(hyps)):
                results[position] = translation
        return results

    def sample(self, sources: Sequence[str], num_samples: int = 50, *, top: int | None = 5, seed: int = 1,
               exclude_unk: bool = False) -> list[list[Translation]]:
        """``num_samples`` ancestral samples per source, deduplicated (``count`` = how many times
        each came) and ranked by log p, best first; the ``top`` best are kept (all with None).

        Sources are sampled one batch after another from one generator seeded with ``seed``, so
        the same inputs, seed and batch size give the same samples.
        """
        generator = torch.Generator(device=self.device).manual_seed(seed)
        results: list[list[Translation]] = [[] for _ in sources]
        for positions, src, lengths in self._batches(sources):
            with self.precision.autocast():
                drawn = search.sample(self.model, src, lengths, num_samples, generator=generator,
                                      exclude_unk=exclude_unk, limit=self._limit(lengths))
            for position, hyps in zip(positions, drawn):
                results[position] = _ranked(self._texts(hyps))[:top]
        return results


def _ranked(samples: Sequence[Translation]) -> list[Translation]:
    """Distinct samples with their counts, by log p (ties: by text, so the order is fixed)."""
    counts = collections.Counter(sample.text for sample in samples)
    distinct = {sample.text: sample for sample in samples}
    return sorted((Translation(t.text, t.log_prob, t.score, counts[t.text]) for t in distinct.values()),
                  key=lambda t: (-t.log_prob, t.text))
