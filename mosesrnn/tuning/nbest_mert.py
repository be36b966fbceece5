"""Our MERT on n-best list files (``mosesrnn mert``): read them, choose the initial weights, tune, report BLEU
before and after."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from sacrebleu.metrics.bleu import BLEUScore

from ..errors import MosesRNNError
from ..formats.moses_ini import read_weights
from ..formats.text_file import read_lines
from .bleu import BleuStatistics
from .mert import MertOptions, mert, normalise
from .problem import TuningProblem, load_nbest
from .vectors import weights_vector

__all__ = ["NbestMertResult", "read_references", "starting_weights", "mert_nbest_files"]


@dataclass(frozen=True)
class NbestMertResult:
    """What :func:`mert_nbest_files` found: feature groups, tuned weights (D,), the initial weights (D,)
    and where they came from, sacrebleu's signature and 1-best BLEU before and after, the problem size."""

    groups: tuple[tuple[str, int], ...]
    weights: np.ndarray
    initial: np.ndarray
    initial_source: str
    signature: str
    before: BLEUScore
    after: BLEUScore
    sentences: int
    hypotheses: int
    line_searches: int


def read_references(paths: Sequence[str]) -> list[list[str]]:
    """One list of lines per reference file; raises MosesRNNError if one is empty or their line counts differ,
    and FileLineError (file:line) for text that is not UTF-8."""
    streams = [read_lines(path) for path in paths]
    for path, lines in zip(paths, streams):
        if not lines:
            raise MosesRNNError(f"{path}: no reference sentences (the file is empty)")
    if len({len(lines) for lines in streams}) > 1:
        raise MosesRNNError("the reference files have different numbers of lines: "
                            + ", ".join(f"{path} {len(lines)}" for path, lines in zip(paths, streams)))
    return streams


def starting_weights(problem: TuningProblem, init: str | None) -> tuple[np.ndarray, str]:
    """The start point (D,): the ``[weight]`` lines of ``init`` (a moses.ini or weights file; groups it
    lacks get 0), else the weights that reproduce the last n-best list's totals (the decoder's weights).
    Returns the weights and a sentence saying where they came from."""
    if init is not None:
        named = read_weights(init)
        if not named:
            raise MosesRNNError(f"{init}: no 'Name= v1 v2 ...' weight lines")
        weights, missing = weights_vector(problem.groups, named)
        note = f" ({', '.join(missing)} not there: weight 0)" if missing else ""
        return weights, f"from {init}{note}"
    weights, share = problem.decoder_weights()
    return weights, f"the decoder's, fitted to the totals of the last n-best list ({share:.1%} of hypotheses exact)"


def mert_nbest_files(nbest: Sequence[str], references: Sequence[str], init: str | None = None, tokenize: str = "none",
                     options: MertOptions = MertOptions(), sentences: Sequence[int] | None = None) -> NbestMertResult:
    """Run MERT on the pooled n-best lists ``nbest`` of the sentences of ``references`` (one or more files); given
    ``sentences`` (0-based), on those sentences alone (the rest of the lists and references held out)."""
    bleu = BleuStatistics(read_references(references), tokenize=tokenize)
    problem = load_nbest(nbest, bleu)
    if sentences is not None:
        problem = problem.subset(sentences)
    start, source = starting_weights(problem, init)
    result = mert(problem, bleu.scores, start, options)

    def one_best_bleu(weights: np.ndarray) -> BLEUScore:
        return bleu.score(problem.stats[problem.best_rows(weights)].sum(axis=0))

    return NbestMertResult(problem.groups, result.weights, normalise(start), source, bleu.signature,
                        one_best_bleu(start), one_best_bleu(result.weights), problem.num_sentences,
                        len(problem.features), result.line_searches)
