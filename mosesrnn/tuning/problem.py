"""A tuning problem: every sentence's hypotheses as feature vectors and BLEU statistics.

The hypotheses of all sentences sit sentence after sentence in flat arrays; ``offsets[s]`` is
where sentence ``s`` starts. Features are named by groups (``LM0`` with 1 value,
``TranslationModel0`` with 4, ...) so weights can be written back in moses.ini syntax.
:func:`load_nbest` builds a problem from Moses n-best lists, pooling the hypotheses of several
lists (e.g. of successive MERT iterations) and removing duplicates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..errors import MosesRNNError
from ..formats.nbest import NbestError, read_nbest
from .bleu import BleuStatistics

__all__ = ["TuningProblem", "load_nbest"]

_FIT_ROUNDS = 4


@dataclass(frozen=True)
class TuningProblem:
    """Hypotheses of S sentences, H in all, D feature values each.

    ``groups``: ``(name, size)`` per feature group, sizes summing to D. ``features`` shape (H, D);
    ``stats`` shape (H, 10), sacrebleu BLEU statistics; ``offsets`` shape (S+1,); ``totals``
    shape (H,), the decoder's model score of each hypothesis (NaN where unknown) in the list
    ``sources`` (H,) (the last of the lists that hold it).
    """

    groups: tuple[tuple[str, int], ...]
    features: np.ndarray
    stats: np.ndarray
    offsets: np.ndarray
    totals: np.ndarray
    sources: np.ndarray
    _layout: np.ndarray = field(init=False, repr=False)  # (S, n_max): row of each slot, -1 = padding

    def __post_init__(self):
        sizes = np.diff(self.offsets)
        if len(sizes) == 0 or sizes.min() < 1:
            raise MosesRNNError("every sentence needs at least one hypothesis")
        slots = np.arange(sizes.max())[None, :]
        object.__setattr__(self, "_layout", np.where(slots < sizes[:, None], self.offsets[:-1, None] + slots, -1))

    @property
    def num_sentences(self) -> int:
        """S."""
        return len(self.offsets) - 1

    @property
    def dimension(self) -> int:
        """D, the number of feature values (and weights)."""
        return self.features.shape[1]

    def padded(self, values: np.ndarray) -> np.ndarray:
        """Per-hypothesis ``values`` (H,) laid out as (S, n_max), padding -inf."""
        layout = self._layout
        return np.where(layout >= 0, values[layout], -np.inf)

    def rows(self, slots: np.ndarray, sentences: np.ndarray | None = None) -> np.ndarray:
        """Flat hypothesis rows of padded columns ``slots`` of ``sentences`` (default: 0..S-1)."""
        return self.offsets[np.arange(self.num_sentences) if sentences is None else sentences] + slots

    def best_rows(self, weights: np.ndarray) -> np.ndarray:
        """Row of each sentence's 1-best under ``weights`` (D,), shape (S,); ties: first hypothesis."""
        return self.rows(self.padded(self.features @ weights).argmax(axis=1))

    def subset(self, sentences: Sequence[int]) -> TuningProblem:
        """The problem restricted to ``sentences`` (0-based, in the order given)."""
        sentences = np.asarray(sentences, dtype=np.int64)
        rows = np.concatenate([np.arange(self.offsets[s], self.offsets[s + 1]) for s in sentences])
        sizes = self.offsets[sentences + 1] - self.offsets[sentences]
        return TuningProblem(self.groups, self.features[rows], self.stats[rows],
                             np.concatenate([[0], np.cumsum(sizes)]), self.totals[rows], self.sources[rows])

    def decoder_weights(self) -> tuple[np.ndarray, float]:
        """The weights (D,) under which the last n-best list's features give its total scores, and the
        share of its hypotheses they reproduce (to 1e-3 + 1e-4·|total|).

        A least-squares fit, repeated on the hypotheses it fits best: the totals of hypotheses with
        unknown words include Moses' UnknownWordPenalty (-100 each), which the list does not show.
        Features that are zero throughout get weight 0.
        """
        features, totals = self.features, self.totals
        candidates = (self.sources == self.sources.max()) & np.isfinite(totals)
        tolerance = 1e-3 + 1e-4 * np.abs(totals)
        rows = candidates
        for _ in range(_FIT_ROUNDS):
            weights = np.linalg.lstsq(features[rows], totals[rows], rcond=None)[0]
            error = np.abs(features @ weights - totals)
            rows = candidates & (error <= np.maximum(np.median(error[candidates]), tolerance))
        return weights, float(np.mean(error[candidates] <= tolerance[candidates]))


def load_nbest(paths: Sequence[str], bleu: BleuStatistics) -> TuningProblem:
    """Read n-best lists of the same sentences (ids 0..S-1, S = the number of references) into a problem.

    Hypotheses with the same text and features are kept once (in the place of the first). A group absent
    from a line counts as zeros (sparse features). Raises :class:`NbestError` for a malformed
    line, a group whose number of values changes, or an id beyond the references; MosesRNNError
    for a sentence without hypotheses.
    """
    groups: dict[str, tuple[int, int]] = {}  # name -> (first column, size)
    layouts: dict[tuple[str, ...], int] = {}
    sentences: list[dict[tuple[str, int, bytes], tuple[float, int]]] = [{} for _ in range(len(bleu))]
    for source, path in enumerate(paths):
        with read_nbest(path) as entries:
            for entry in entries:
                if entry.sentence_id >= len(sentences):
                    raise NbestError(path, entry.line_no, f"sentence id {entry.sentence_id}, but the references "
                                                          f"have {len(sentences)} lines (ids 0..{len(sentences) - 1})")
                for name, values in entry.features:
                    column, size = groups.setdefault(name, (sum(s for _, s in groups.values()), len(values)))
                    if size != len(values):
                        raise NbestError(path, entry.line_no, f"feature {name} has {len(values)} values here, "
                                                              f"{size} on earlier lines")
                layout = layouts.setdefault(entry.feature_names, len(layouts))
                values = np.array([v for _, group in entry.features for v in group], dtype=np.float64)
                sentences[entry.sentence_id][entry.hypothesis, layout, values.tobytes()] = (entry.total, source)
    for sentence, hypotheses in enumerate(sentences):
        if not hypotheses:
            raise MosesRNNError(f"sentence {sentence} (0-based) has no hypotheses in {', '.join(paths)}")
    columns = [np.concatenate([np.arange(groups[n][0], groups[n][0] + groups[n][1]) for n in names] or [[]])
               .astype(np.int64) for names in layouts]
    features = np.zeros((sum(map(len, sentences)), sum(size for _, size in groups.values())))
    stats, totals_sources, row = [], [], 0
    for sentence, hypotheses in enumerate(sentences):
        for _, layout, values in hypotheses:
            features[row, columns[layout]] = np.frombuffer(values, dtype=np.float64)
            row += 1
        stats.append(bleu.hypothesis_stats(sentence, [text for text, _, _ in hypotheses]))
        totals_sources.extend(hypotheses.values())
    offsets = np.concatenate([[0], np.cumsum([len(h) for h in sentences])])
    totals, sources = np.array(totals_sources).reshape(-1, 2).T
    return TuningProblem(tuple((name, size) for name, (_, size) in groups.items()), features,
                         np.concatenate(stats), offsets, totals, sources.astype(np.int64))
