"""The upper envelope of a sentence's hypotheses along a line in weight space (Och, 2003, §5).

Moving the weights from ``w`` along a direction ``d`` to ``w + γ d`` gives each hypothesis with
features ``f`` the model score ``a + γ b`` with ``a = w·f`` and ``b = d·f``: a line in γ. The
decoder's 1-best at γ is the top line, so the 1-best changes only at the breakpoints of the
upper envelope of the lines. We find the envelope by walking it from γ = -∞ (the line of
smallest slope) to +∞: from the current top line, the next one is the steeper line that crosses
it first. The walk runs for all sentences at once on padded (S, n) arrays, one envelope segment
per step.

Ties are broken deterministically: among parallel lines the highest wins (equal lines: the
lowest index); where several lines cross the top line at the same γ, the steepest wins (equal
slopes: the lowest index), so three lines meeting in a point leave the middle one out.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Envelope", "Breakpoints", "upper_envelope", "upper_envelopes"]


@dataclass(frozen=True)
class Envelope:
    """One sentence's envelope: on interval ``i`` (between ``breakpoints[i-1]`` and
    ``breakpoints[i]``, with -∞ and +∞ at the ends) hypothesis ``hypotheses[i]`` is on top.

    ``breakpoints`` shape (k-1,), ascending; ``hypotheses`` shape (k,).
    """

    breakpoints: np.ndarray
    hypotheses: np.ndarray


@dataclass(frozen=True)
class Breakpoints:
    """The envelopes of S sentences, as their top lines at γ = -∞ and their changes.

    ``first`` shape (S,): column of each sentence's top line at -∞. The changes, shape (E,) each,
    are in walking order per sentence (γ ascending within a sentence): at ``gamma[e]`` the top line
    of sentence ``sentence[e]`` changes from column ``before[e]`` to column ``after[e]``.
    """

    first: np.ndarray
    sentence: np.ndarray
    gamma: np.ndarray
    before: np.ndarray
    after: np.ndarray


def _first_lines(intercepts: np.ndarray, slopes: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Per row, the top line at γ = -∞: smallest slope, then highest intercept, then lowest index."""
    min_slope = np.where(valid, slopes, np.inf).min(axis=1, keepdims=True)
    return np.where(valid & (slopes == min_slope), intercepts, -np.inf).argmax(axis=1)


def upper_envelopes(intercepts: np.ndarray, slopes: np.ndarray) -> Breakpoints:
    """Upper envelopes of S sentences' lines ``a + γ b`` at once.

    ``intercepts``, ``slopes``: shape (S, n); padding columns (sentences with fewer than n
    hypotheses) have intercept -inf. Every sentence needs at least one real line.
    """
    valid = np.isfinite(intercepts)
    first = _first_lines(intercepts, slopes, valid)
    current, position, active = first.copy(), np.full(len(first), -np.inf), np.arange(len(first))
    no_index = np.zeros(0, dtype=np.int64)
    steps: list[tuple[np.ndarray, ...]] = [(no_index, np.zeros(0), no_index, no_index)]
    while active.size:
        rows = active
        top = current[rows]
        top_a, top_b = intercepts[rows, top][:, None], slopes[rows, top][:, None]
        a, b = intercepts[rows], slopes[rows]
        steeper = valid[rows] & (b > top_b)
        with np.errstate(divide="ignore", invalid="ignore"):
            crossing = np.where(steeper, (top_a - a) / (b - top_b), np.inf)  # (s, n)
        first_crossing = crossing.min(axis=1)
        going = np.isfinite(first_crossing)
        rows, crossing, first_crossing, b = rows[going], crossing[going], first_crossing[going], b[going]
        after = np.where(crossing == first_crossing[:, None], b, -np.inf).argmax(axis=1)
        gamma = np.maximum(first_crossing, position[rows])  # rounding must not walk backwards
        steps.append((rows, gamma, current[rows], after))
        current[rows], position[rows] = after, gamma
        active = rows
    sentence, gamma, before, after = (np.concatenate(parts) for parts in zip(*steps))
    order = np.argsort(sentence, kind="stable")
    return Breakpoints(first, sentence[order], gamma[order], before[order], after[order])


def upper_envelope(intercepts: np.ndarray, slopes: np.ndarray) -> Envelope:
    """The upper envelope of one sentence's lines ``intercepts + γ slopes``, each shape (n,), n ≥ 1."""
    points = upper_envelopes(np.asarray(intercepts, dtype=np.float64)[None, :],
                             np.asarray(slopes, dtype=np.float64)[None, :])
    return Envelope(points.gamma, np.concatenate([points.first, points.after]))
