"""Minimum error rate training: Och's (2003) exact line search over fixed n-best lists.

Along a direction ``d`` from a point ``w`` each sentence's 1-best is piecewise constant in γ
(:mod:`.envelope`). Merging all sentences' breakpoints and sweeping γ from -∞ to +∞, adding
the BLEU statistics difference of each 1-best change, gives the corpus BLEU on every interval
exactly; the line search moves to the best interval (staying put if the point is already in
one, else to its midpoint, or 1 past the last breakpoint for an unbounded interval).

The search, like Moses' ``mert``: from each start point, line-search every coordinate direction
plus ``random_directions`` random ones, move along the best, and repeat until no direction
improves BLEU. The first start point is the initial weights, the others (``restarts`` of them)
random, uniform in ``bounds`` per weight, all drawn from one ``numpy.random.Generator(seed)``.
Weights are kept, and returned, normalised to L1 norm 1, as Moses' ``mert`` writes them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .envelope import upper_envelopes
from .problem import TuningProblem

__all__ = ["MertOptions", "MertResult", "LineOptimum", "line_search", "evaluate", "normalise", "mert"]

#: Corpus BLEU of each row of summed statistics, (K, 10) → (K,); e.g. ``BleuStatistics.scores``.
Metric = Callable[[np.ndarray], np.ndarray]

_IMPROVEMENT = 1e-9  # BLEU points; smaller gains are rounding, not progress


@dataclass(frozen=True)
class MertOptions:
    """Search settings: random restarts, random directions per pass, seed, bounds of random start points."""

    restarts: int = 20
    random_directions: int = 3
    seed: int = 1
    bounds: tuple[np.ndarray | float, np.ndarray | float] = (-1.0, 1.0)
    max_passes: int = 100


@dataclass(frozen=True)
class MertResult:
    """The best weights (D,) (L1 norm 1), their BLEU, the initial weights' BLEU, each start's final
    BLEU (the initial point first) and the number of line searches run."""

    weights: np.ndarray
    score: float
    initial_score: float
    start_scores: tuple[float, ...]
    line_searches: int


@dataclass(frozen=True)
class LineOptimum:
    """The step ``gamma`` along the direction and the corpus BLEU at ``w + gamma d``."""

    gamma: float
    score: float


def normalise(weights: np.ndarray) -> np.ndarray:
    """``weights`` scaled to L1 norm 1 (the ranking of hypotheses does not change)."""
    norm = np.abs(weights).sum()
    return weights / norm if norm > 0 else weights


def evaluate(problem: TuningProblem, metric: Metric, weights: np.ndarray) -> float:
    """Corpus BLEU of the 1-best hypotheses under ``weights`` (D,)."""
    return float(metric(problem.stats[problem.best_rows(weights)].sum(axis=0)[None, :])[0])


def line_search(problem: TuningProblem, metric: Metric, point: np.ndarray, direction: np.ndarray) -> LineOptimum:
    """The γ maximising corpus BLEU at ``point + γ direction`` (both shape (D,)), found exactly."""
    points = upper_envelopes(problem.padded(problem.features @ point), problem.padded(problem.features @ direction))
    order = np.argsort(points.gamma, kind="stable")
    gamma, sentence = points.gamma[order], points.sentence[order]
    stats = problem.stats
    change = stats[problem.rows(points.after[order], sentence)] - stats[problem.rows(points.before[order], sentence)]
    sums = stats[problem.rows(points.first)].sum(axis=0) + np.concatenate([np.zeros((1, stats.shape[1]), np.int64),
                                                                            np.cumsum(change, axis=0)])  # (E+1, 10)
    lower, upper = np.concatenate([[-np.inf], gamma]), np.concatenate([gamma, [np.inf]])
    real = lower < upper  # equal breakpoints leave empty intervals
    lower, upper, scores = lower[real], upper[real], metric(sums[real])
    best = np.flatnonzero(scores == scores.max())
    low, high = lower[best], upper[best]
    with np.errstate(invalid="ignore"):  # -inf + inf in the branch not taken
        candidates = np.where(np.isfinite(low) & np.isfinite(high), (low + high) / 2,
                              np.where(np.isfinite(low), low + 1.0, high - 1.0))
    candidates[(low < 0) & (high > 0)] = 0.0
    choice = np.argmin(np.abs(candidates))
    return LineOptimum(float(candidates[choice]), float(scores[best[choice]]))


def _climb(problem: TuningProblem, metric: Metric, start: np.ndarray, rng: np.random.Generator,
           options: MertOptions) -> tuple[np.ndarray, float, int]:
    """Hill-climb from ``start`` (D,) by line searches; returns the point, its BLEU and the searches run."""
    point, dimension = normalise(start), problem.dimension
    score, searches = evaluate(problem, metric, point), 0
    for _ in range(options.max_passes):
        random = rng.normal(size=(options.random_directions, dimension))
        directions = np.concatenate([np.eye(dimension), random / np.abs(random).sum(axis=1, keepdims=True)])
        best_score, best_point = score, None
        for direction in directions:
            optimum = line_search(problem, metric, point, direction)
            searches += 1
            if optimum.score > best_score + _IMPROVEMENT:
                best_score, best_point = optimum.score, point + optimum.gamma * direction
        if best_point is None or not np.abs(best_point).sum() > 0:
            break
        point = normalise(best_point)
        score = evaluate(problem, metric, point)
    return point, score, searches


def mert(problem: TuningProblem, metric: Metric, initial: np.ndarray, options: MertOptions = MertOptions()
         ) -> MertResult:
    """Tune weights (D,) on ``problem`` from ``initial`` (D,) plus ``options.restarts`` random starts."""
    rng = np.random.default_rng(options.seed)
    low, high = options.bounds
    starts = [np.asarray(initial, dtype=np.float64)]
    starts += [rng.uniform(low, high, size=problem.dimension) for _ in range(options.restarts)]
    best_point, best_score, scores, searches = None, -np.inf, [], 0
    for start in starts:
        point, score, count = _climb(problem, metric, start, rng, options)
        scores.append(score)
        searches += count
        if score > best_score:
            best_point, best_score = point, score
    return MertResult(best_point, best_score, evaluate(problem, metric, normalise(starts[0])), tuple(scores), searches)
