"""Rerank an n-best list: the hypothesis with the highest weighted feature sum, per sentence."""
from __future__ import annotations

from typing import Iterator, Mapping, Sequence

from ..formats.nbest import NbestError, group_by_sentence, read_nbest
from ..io.readers import reader

__all__ = ["rerank"]


@reader
def rerank(path: str, weights: Mapping[str, Sequence[float]]) -> Iterator[str]:
    """The 1-best hypothesis text of each sentence of the n-best list ``path``, sentence ids 0, 1, 2, ..., as a
    :class:`~mosesrnn.io.readers.Reader` (``with rerank(path, weights) as texts:``).

    A feature group without a weight counts 0; ties go to the hypothesis listed first (the
    decoder's order). Raises :class:`NbestError` for a sentence id skipped (no hypotheses), a
    group whose number of values differs from its weights, or weights that name none of the
    list's features (every hypothesis would score 0, and the first would win silently).
    """
    expected = 0
    with read_nbest(path) as nbest:
        for sentence_id, entries in group_by_sentence(nbest):
            if expected == 0 and not set(weights) & set(entries[0].feature_names):
                raise NbestError(path, entries[0].line_no,
                                 f"none of the weights ({', '.join(weights)}) names a feature of the list "
                                 f"({', '.join(entries[0].feature_names)})")
            if sentence_id != expected:
                raise NbestError(path, entries[0].line_no, f"sentence {expected} has no hypotheses "
                                                           f"(the list goes from {expected - 1} to {sentence_id})")
            best_score, best_text = None, None
            for entry in entries:
                score = 0.0
                for name, values in entry.features:
                    group = weights.get(name, ())
                    if group and len(group) != len(values):
                        raise NbestError(path, entry.line_no, f"feature {name} has {len(values)} values, "
                                                              f"but {len(group)} weights")
                    score += sum(w * v for w, v in zip(group, values))
                if best_score is None or score > best_score:
                    best_score, best_text = score, entry.hypothesis
            yield best_text
            expected += 1
