"""The target phrases the RNN ranks highest among a phrase table's candidates, beside the translation
model's ranking (C14 Table 2).

For chosen source phrases (given, or drawn at random among those with at least ``min_words``
words, as C14 did with "4 or more"), every candidate target in the table is scored by the RNN
(log p(target | source), as `mosesrnn score` computes it) and the ``k`` best by each ranker are
listed. The translation model's column is the direct phrase probability p(target | source),
Moses' third score (index 2; C14's p(f | e), their f being the target). Ties: by text.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..encdec.model_file import TrainedEncoderDecoder
from ..encdec.scoring import PairScorer
from ..errors import MosesRNNError
from ..formats.phrase_table import PhraseEntry, score_column, source_groups
from ..text.tokenizers import words
from .report import TM_COLUMN

__all__ = ["Candidate", "TopTargets", "choose_groups", "rank_candidates", "tsv_lines", "text_report"]


@dataclass(frozen=True)
class Candidate:
    """One target of a source phrase, with the table's and the RNN's scores of it."""

    target: str
    tm: float  # the table's p(target | source) column
    rnn: float  # RNN log p(target | source)


@dataclass(frozen=True)
class TopTargets:
    """A source phrase's ``k`` best targets by each ranker, among its ``candidates`` in the table."""

    source: str
    candidates: int
    by_tm: list[Candidate]
    by_rnn: list[Candidate]


def choose_groups(path: str, *, sources: Sequence[str] | None = None, count: int = 10, min_words: int = 4,
                  min_candidates: int = 1, seed: int = 1, encoding: str = "utf-8",
                  tm_column: int = TM_COLUMN) -> list[list[PhraseEntry]]:
    """The table's line groups of ``sources`` (in that order), or of ``count`` sources drawn
    uniformly (reservoir sampling, seeded) among those with ``min_words`` words or more and
    ``min_candidates`` targets or more. Raises PhraseTableError if the table has no ``tm_column``."""
    with source_groups(path, encoding) as table:
        groups: Iterable[list[PhraseEntry]] = _checked(table, path, tm_column)
        if sources is not None:
            wanted = {source: None for source in sources}
            for group in groups:
                if group[0].source in wanted:
                    wanted[group[0].source] = group
            missing = [source for source, group in wanted.items() if group is None]
            if missing:
                raise MosesRNNError(f"{path}: no lines for the source phrase(s) {', '.join(map(repr, missing))}")
            return list(wanted.values())
        rng, chosen, seen = random.Random(seed), [], 0
        for group in groups:
            if len(words(group[0].source)) < min_words or len(group) < min_candidates:
                continue
            seen += 1
            if len(chosen) < count:
                chosen.append(group)
            elif (slot := rng.randrange(seen)) < count:
                chosen[slot] = group
        return sorted(chosen, key=lambda group: group[0].line_no)


def _checked(groups: Iterable[list[PhraseEntry]], path: str, tm_column: int) -> Iterable[list[PhraseEntry]]:
    """The groups, after checking that the first line has the column ``tm_column``."""
    for number, group in enumerate(groups):
        if number == 0:
            score_column(path, group[0], tm_column, "--tm-column")
        yield group


def rank_candidates(trained: TrainedEncoderDecoder, groups: Sequence[list[PhraseEntry]], k: int = 3,
                    tm_column: int = TM_COLUMN, device: str = "cpu") -> list[TopTargets]:
    """Each group's ``k`` best targets by the table's column and by the RNN."""
    values = iter(PairScorer(trained, device=device).log_probs([entry for group in groups for entry in group]))
    rankings = []
    for group in groups:
        candidates = [Candidate(entry.target, entry.scores[tm_column], next(values)) for entry in group]
        rankings.append(TopTargets(group[0].source, len(candidates),
                                sorted(candidates, key=lambda c: (-c.tm, c.target))[:k],
                                sorted(candidates, key=lambda c: (-c.rnn, c.target))[:k]))
    return rankings


def tsv_lines(rankings: Sequence[TopTargets]) -> list[str]:
    """``source, ranker, rank, target, tm_p, rnn_log_p`` rows with a header."""
    rows = ["source\tranker\trank\ttarget\ttm_p\trnn_log_p"]
    for ranking in rankings:
        for ranker, listed in (("tm", ranking.by_tm), ("rnn", ranking.by_rnn)):
            rows += [f"{ranking.source}\t{ranker}\t{rank}\t{c.target}\t{c.tm:.6g}\t{c.rnn:.4f}"
                     for rank, c in enumerate(listed, 1)]
    return rows


def text_report(rankings: Sequence[TopTargets]) -> str:
    """A readable report: per source, the two top-k lists side by side."""
    out = []
    for ranking in rankings:
        out.append(f"{ranking.source}   ({ranking.candidates} candidates in the table)")
        width = max((len(c.target) for c in ranking.by_tm), default=0)
        out.append(f"  {'translation model p(t|s)':<{width + 11}}  RNN log p(t|s)")
        for tm, rnn in zip(ranking.by_tm, ranking.by_rnn):
            out.append(f"  {tm.tm:9.4f}  {tm.target:<{width}}  {rnn.rnn:9.3f}  {rnn.target}")
        out.append("")
    return "\n".join(out)
