"""Every figure of a published report or choice, recomputed from the translations committed beside it.

sacreBLEU gives each translation's statistics per sentence (read once per file and set of lines); corpus BLEU is
sacreBLEU's own. The paired approximate randomisation is sacreBLEU's (its fixed seed, its shuffles, its strict
count) with the shuffled scores computed at once by :func:`mosesrnn.tuning.bleu.bleu_scores` instead of one at a time
(a shuffle within 1e-7 of the observed difference is scored by sacreBLEU itself, so ties count as sacreBLEU counts
them): the same p-values, ~50 times sooner. ``tests/test_docs.py`` checks that it equals
:func:`mosesrnn.tuning.significance.compare_runs`.
"""
from __future__ import annotations

import os
import re
import statistics
from dataclasses import replace
from functools import lru_cache

import numpy as np
from sacrebleu.metrics.bleu import BLEU

from moses_integration.route.plan import dev_halves
from moses_integration.route.report_file import RouteReport, StageResult
from mosesrnn.formats.text_file import read_lines
from mosesrnn.tuning.bleu import bleu_scores
from mosesrnn.tuning.significance import ALPHA, Comparison, median_run

SEED = int(os.environ.get("SACREBLEU_SEED", "12345"))


@lru_cache(maxsize=None)
def _metric(tokenize: str) -> BLEU:
    return BLEU(tokenize=tokenize, force=True)


def _stamp(path: str) -> tuple[str, int, int]:
    """A file's path, time and size: a file changed is read again."""
    status = os.stat(path)
    return path, status.st_mtime_ns, status.st_size


@lru_cache(maxsize=None)
def _lines(stamp: tuple[str, int, int]) -> tuple[str, ...]:
    return tuple(read_lines(stamp[0]))


def sentence_stats(hypothesis: str, reference: str, tokenize: str, held_out: bool = False) -> np.ndarray:
    """sacreBLEU's statistics of each line of ``hypothesis`` against ``reference``, shape (lines, 10); with
    ``held_out``, of the held-out dev half's lines alone (computed once per file, as long as it is unchanged)."""
    return _sentence_stats(_stamp(hypothesis), _stamp(reference), tokenize, held_out)


@lru_cache(maxsize=None)
def _sentence_stats(hypothesis: tuple, reference: tuple, tokenize: str, held_out: bool) -> np.ndarray:
    hyps, refs = _lines(hypothesis), _lines(reference)
    assert len(hyps) == len(refs), f"{hypothesis[0]} has {len(hyps)} lines, {reference[0]} {len(refs)}"
    if held_out:
        lines = dev_halves(len(refs))[1]
        hyps, refs = [hyps[at] for at in lines], [refs[at] for at in lines]
    return np.array(_metric(tokenize)._extract_corpus_statistics(list(hyps), [list(refs)]), dtype=np.int64)


def corpus_bleu(stats: np.ndarray, tokenize: str) -> float:
    """sacreBLEU's corpus BLEU of per-sentence statistics."""
    return _metric(tokenize)._compute_score_from_stats([int(value) for value in stats.sum(axis=0)]).score


@lru_cache(maxsize=4)
def _shuffles(samples: int, sentences: int) -> np.ndarray:
    """sacreBLEU's shuffles: True where a sentence keeps its system, shape (samples, sentences)."""
    return np.random.default_rng(SEED).integers(2, size=(samples, sentences), dtype=bool).astype(np.float64)


def paired_p_value(system: np.ndarray, baseline: np.ndarray, tokenize: str, samples: int = 10000
                   ) -> tuple[float, float]:
    """(BLEU difference, p-value) as :func:`mosesrnn.tuning.significance.paired_p_value` gives them, from the
    per-sentence statistics of the two systems."""
    base, other = corpus_bleu(baseline, tokenize), corpus_bleu(system, tokenize)
    difference, observed = other - base, abs(base - other)
    if not difference:
        return difference, 1.0
    keep = _shuffles(samples, len(system))
    total = (baseline.sum(axis=0) + system.sum(axis=0)).astype(np.float64)
    shuffled_a = keep @ (baseline - system).astype(np.float64) + system.sum(axis=0)  # keep: baseline's sentence
    shuffled_b = total - shuffled_a
    metric = _metric(tokenize)
    spread = np.abs(bleu_scores(shuffled_a, metric.smooth_method, metric.smooth_value)
                    - bleu_scores(shuffled_b, metric.smooth_method, metric.smooth_value))
    for at in np.flatnonzero(np.abs(spread - observed) < 1e-7):  # a tie: counted as sacreBLEU counts it
        a, b = ([int(round(value)) for value in row] for row in (shuffled_a[at], shuffled_b[at]))
        spread[at] = abs(metric._compute_score_from_stats(a).score - metric._compute_score_from_stats(b).score)
    return difference, (int(np.sum(spread > observed)) + 1) / (samples + 1)


def compare_runs(system: list[np.ndarray], system_bleu: list[float], baseline: list[np.ndarray],
                 baseline_bleu: list[float], tokenize: str) -> Comparison:
    """:func:`mosesrnn.tuning.significance.compare_runs`, from the runs' per-sentence statistics."""
    delta = statistics.mean(system_bleu) - statistics.mean(baseline_bleu)
    _, p_value = paired_p_value(system[median_run(system_bleu)], baseline[median_run(baseline_bleu)], tokenize)
    agreeing = 0
    for ours in system:
        for theirs in baseline:
            difference, p = paired_p_value(ours, theirs, tokenize, samples=1000)
            agreeing += p < ALPHA and difference * delta > 0
    return Comparison(delta, p_value, agreeing, len(system) * len(baseline))


def tokenisation(report: RouteReport) -> str:
    """The tokenizer of the report's sacreBLEU signature (``tok:none``)."""
    return re.search(r"tok:([^|]+)", report.sacrebleu)[1]


class Runs:
    """The runs of a report's stages, their statistics on test and on the held-out dev half."""

    def __init__(self, report: RouteReport):
        self.report, self.tokenize = report, tokenisation(report)

    def test(self, paths: tuple[str, ...]) -> list[np.ndarray]:
        """The statistics of each test translation of ``paths``."""
        return [sentence_stats(path, self.report.test["reference"], self.tokenize) for path in paths]

    def dev(self, paths: tuple[str, ...]) -> list[np.ndarray]:
        """The statistics of each dev translation of ``paths`` on the held-out half."""
        return [sentence_stats(path, self.report.dev["reference"], self.tokenize, True) for path in paths]


def recomputed(report: RouteReport) -> RouteReport:
    """``report`` with every figure recomputed from its translations: BLEU per run, on test and the held-out dev
    half, and the comparisons with the baseline and with each stage's control."""
    runs = Runs(report)
    stages = []
    for stage in report.stages:
        stage = replace(stage, bleu=tuple(corpus_bleu(s, runs.tokenize) for s in runs.test(stage.hypotheses)),
                        dev_bleu=tuple(corpus_bleu(s, runs.tokenize) for s in runs.dev(stage.dev_hypotheses)))
        stages.append(stage)
    by_name = {stage.name: stage for stage in stages}
    baseline = by_name.get("baseline")
    for at, stage in enumerate(stages):
        changes = {}
        for prefix, other in (("", baseline if stage is not baseline else None),
                              ("control_", by_name.get(stage.control) if stage.control else None)):
            if other is None:
                continue
            changes.update(_fields(prefix, compare(runs, stage, other, "test")))
            if report.selection is not None:
                changes.update(_fields("dev_" + prefix, compare(runs, stage, other, "dev")))
        stages[at] = replace(stage, **changes)
    return replace(report, stages=tuple(stages))


def compare(runs: Runs, stage: StageResult, other: StageResult, part: str) -> Comparison:
    """``stage`` against ``other`` on ``part`` (``test``, or ``dev``: the held-out half)."""
    if part == "test":
        return compare_runs(runs.test(stage.hypotheses), list(stage.bleu), runs.test(other.hypotheses),
                            list(other.bleu), runs.tokenize)
    return compare_runs(runs.dev(stage.dev_hypotheses), list(stage.dev_bleu), runs.dev(other.dev_hypotheses),
                        list(other.dev_bleu), runs.tokenize)


def _fields(prefix: str, comparison: Comparison) -> dict:
    return {f"{prefix}delta": comparison.delta, f"{prefix}p_value": comparison.p_value,
            f"{prefix}pairs_agreeing": comparison.pairs_agreeing, f"{prefix}pairs": comparison.pairs}


FIGURES = ("bleu", "dev_bleu", "delta", "p_value", "pairs_agreeing", "pairs", "control_delta", "control_p_value",
           "control_pairs_agreeing", "control_pairs", "dev_delta", "dev_p_value", "dev_pairs_agreeing", "dev_pairs",
           "dev_control_delta", "dev_control_p_value", "dev_control_pairs_agreeing", "dev_control_pairs")


def report_differences(report: RouteReport) -> list[str]:
    """Each figure of ``report`` that its translations do not give again (to 1e-9), as ``stage.field: a != b``."""
    again = recomputed(report)
    problems = []
    for stage, redone in zip(report.stages, again.stages):
        for name in FIGURES:
            given, found = getattr(stage, name), getattr(redone, name)
            if not _same(given, found):
                problems.append(f"{stage.name}.{name}: {given!r} in the report, {found!r} from its translations")
    return problems


def _same(given, found) -> bool:
    if isinstance(given, (tuple, list)) or isinstance(found, (tuple, list)):
        return len(given) == len(found) and all(_same(a, b) for a, b in zip(given, found))
    if given is None or found is None:
        return given is found
    return abs(given - found) <= 1e-9
