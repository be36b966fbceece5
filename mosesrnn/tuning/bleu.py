"""BLEU sufficient statistics from sacrebleu, and corpus BLEU of many candidate statistics at once.

A hypothesis' statistics are sacrebleu's own vector ``[hyp_len, ref_len, correct_1..4,
total_1..4]`` (``BLEU._compute_segment_statistics``), computed once per hypothesis; corpus BLEU
is a function of their sum. The line search needs the corpus BLEU of thousands of candidate sums
at once, so :meth:`BleuStatistics.scores` evaluates sacrebleu's ``BLEU.compute_bleu`` formula
(brevity penalty, smoothing, the zero-match rule) with numpy over a batch of sums; the tests check
it against sacrebleu to 1e-9. Reported scores come from sacrebleu itself (:meth:`BleuStatistics.score`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from sacrebleu.metrics.bleu import BLEU, BLEUScore

from ..errors import MosesRNNError
from ..formats.text_file import read_lines

__all__ = ["BleuStatistics", "bleu_scores", "file_bleu"]


def bleu_scores(stats: np.ndarray, smooth_method: str = "exp", smooth_value: float | None = None) -> np.ndarray:
    """Corpus BLEU (0-100) of each row of ``stats``, shape (K, 2 + 2N) → (K,).

    Equals ``BLEU.compute_bleu`` of sacrebleu (without effective order) for every smoothing method.
    """
    stats = np.asarray(stats, dtype=np.float64)
    order = (stats.shape[1] - 2) // 2
    sys_len, ref_len = stats[:, 0], stats[:, 1]
    correct, total = stats[:, 2:2 + order].copy(), stats[:, 2 + order:].copy()
    any_match = correct.sum(axis=1) > 0
    if smooth_value is None:
        smooth_value = BLEU.SMOOTH_DEFAULTS[smooth_method]
    if smooth_method == "add-k":
        correct[:, 1:] += smooth_value
        total[:, 1:] += smooth_value
    zero = correct == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = 100.0 * correct / total
        if smooth_method == "exp":  # 100 / (2^k total) for the k-th order without a match
            precision = np.where(zero, 100.0 / (2.0 ** np.cumsum(zero, axis=1) * total), precision)
        elif smooth_method == "floor":
            precision = np.where(zero, 100.0 * smooth_value / total, precision)
        else:
            precision = np.where(zero, 0.0, precision)
        # sacrebleu stops at the first order with no n-grams: that and all later precisions are 0
        precision = np.where(np.cumsum(total == 0, axis=1) > 0, 0.0, precision)
        brevity = np.where(sys_len < ref_len, np.exp(1.0 - ref_len / sys_len), 1.0)
        brevity = np.where((sys_len < ref_len) & (sys_len <= 0), 0.0, brevity)
        log_mean = np.log(precision).mean(axis=1)
    bleu = np.where(np.all(precision > 0, axis=1), brevity * np.exp(log_mean), 0.0)
    return np.where(any_match, bleu, 0.0)


class BleuStatistics:
    """sacrebleu BLEU against fixed references, for many hypotheses per sentence.

    ``references`` are one or more reference streams, each one line per sentence (as sacrebleu's
    ``corpus_score`` takes them). ``tokenize='none'`` because Moses output is already tokenised.
    """

    def __init__(self, references: Sequence[Sequence[str]], tokenize: str = "none", lowercase: bool = False,
                 smooth_method: str = "exp"):
        self.metric = BLEU(tokenize=tokenize, lowercase=lowercase, smooth_method=smooth_method, force=True)
        self._references = self.metric._cache_references(references)  # also sets the signature's nrefs

    def __len__(self) -> int:
        return len(self._references)

    @property
    def signature(self) -> str:
        """sacrebleu's signature, e.g. ``nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:2.6.0``."""
        return str(self.metric.get_signature())

    def hypothesis_stats(self, sentence: int, hypotheses: Sequence[str]) -> np.ndarray:
        """Statistics of each hypothesis of sentence ``sentence`` (0-based), shape (len(hypotheses), 10)."""
        metric, reference = self.metric, self._references[sentence]
        cache: dict[str, list[int]] = {}
        rows = []
        for hypothesis in hypotheses:
            if hypothesis not in cache:
                cache[hypothesis] = metric._compute_segment_statistics(metric._preprocess_segment(hypothesis),
                                                                       reference)
            rows.append(cache[hypothesis])
        return np.array(rows, dtype=np.int64).reshape(len(rows), 2 + 2 * metric.max_ngram_order)

    def scores(self, stats: np.ndarray) -> np.ndarray:
        """Corpus BLEU of each row of summed statistics, shape (K, 10) → (K,)."""
        return bleu_scores(stats, self.metric.smooth_method, self.metric.smooth_value)

    def score(self, stats: np.ndarray) -> BLEUScore:
        """sacrebleu's score of one vector of summed statistics, shape (10,)."""
        return self.metric._compute_score_from_stats([int(value) for value in stats])


def file_bleu(hypothesis: str, reference: str, tokenize: str = "13a",
              lines: Sequence[int] | None = None) -> tuple[float, str]:
    """sacreBLEU of a hypothesis file against one reference file, and its signature (``none``: the text is
    tokenised already, on purpose); given ``lines`` (0-based indices), of those lines alone. Raises MosesRNNError when
    their line counts differ."""
    hyps, refs = read_lines(hypothesis), read_lines(reference)
    if len(hyps) != len(refs):
        raise MosesRNNError(f"{hypothesis} has {len(hyps)} lines but {reference} has {len(refs)}")
    if lines is not None:
        hyps, refs = [hyps[at] for at in lines], [refs[at] for at in lines]
    metric = BLEU(tokenize=tokenize, force=tokenize == "none")
    return metric.corpus_score(hyps, [refs]).score, str(metric.get_signature())
