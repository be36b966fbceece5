"""Is a system better than a baseline, beyond MERT's instability? Test BLEU over several tuning runs.

MERT is unstable (Clark et al., 2011): tuning the same system twice gives different weights and
BLEU. So a comparison takes K runs of each system and reports, beside the mean and the spread,
sacreBLEU's paired approximate randomisation (10,000 samples, its fixed seed) between the **median
runs** of the two systems (by test BLEU), and how many of the K x K **run pairs** differ in the same
direction at p < 0.05 (1,000 samples each): a difference that holds in every pair does not hang on
one lucky run.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest

__all__ = ["Comparison", "median_run", "paired_p_value", "compare_runs", "mean_std"]

#: The p-value below which a run pair counts as agreeing.
ALPHA = 0.05


@dataclass(frozen=True)
class Comparison:
    """A system's runs against a baseline's: the difference of the means, the median runs' p-value, and the
    run pairs that differ in the same direction as the means at p < :data:`ALPHA` (none when the means are
    equal)."""

    delta: float
    p_value: float
    pairs_agreeing: int
    pairs: int


def mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (None for a single value: no spread to measure)."""
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else None)


def median_run(scores: Sequence[float]) -> int:
    """The index of the median run by score (the upper median of an even number)."""
    return sorted(range(len(scores)), key=scores.__getitem__)[len(scores) // 2]


def paired_p_value(system: Sequence[str], baseline: Sequence[str], references: Sequence[str], tokenize: str,
                   samples: int = 10000) -> tuple[float, float]:
    """(BLEU difference system - baseline, p-value) of sacreBLEU's paired approximate randomisation; p = 1 for
    no difference.

    sacreBLEU (after MultEval) counts the shuffles whose difference is strictly above the observed one, so two
    identical outputs get its smallest p-value (1 / (samples + 1)): read as "significant", a difference of zero
    would claim a gain that is not there.
    """
    metric = BLEU(tokenize=tokenize, force=tokenize == "none")
    test = PairedTest([("baseline", list(baseline)), ("system", list(system))], {"BLEU": metric},
                      [list(references)], "ar", samples)
    _, scores = test()
    base, other = scores["BLEU"]
    difference = other.score - base.score
    return difference, (other.p_value if difference else 1.0)


def compare_runs(system: Sequence[Sequence[str]], system_bleu: Sequence[float], baseline: Sequence[Sequence[str]],
                 baseline_bleu: Sequence[float], references: Sequence[str], tokenize: str) -> Comparison:
    """Compare the runs (translations of the test set, and their BLEU) of a system with a baseline's."""
    delta = statistics.mean(system_bleu) - statistics.mean(baseline_bleu)
    _, p_value = paired_p_value(system[median_run(system_bleu)], baseline[median_run(baseline_bleu)], references,
                                tokenize)
    agreeing = 0
    for ours in system:
        for theirs in baseline:
            difference, p = paired_p_value(ours, theirs, references, tokenize, samples=1000)
            agreeing += p < ALPHA and difference * delta > 0  # the same direction; no difference agrees with none
    return Comparison(delta, p_value, agreeing, len(system) * len(baseline))
