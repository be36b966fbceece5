"""The report of the route (``mosesrnn tune``): ``report.json`` to trace every number, ``report.md`` to paste.

One row per stage of the route — the baseline (tuned as given), the system with the new columns, the
system's n-best lists rescored — each with its test BLEU per run, the mean and spread, the difference
to the baseline with its significance (:mod:`mosesrnn.tuning.significance`), the new weights' shares of
the L1 norm, MERT's iterations and the decoding speed. ``signatures`` pins what made the numbers:
sacreBLEU's signature, the scored tables' sidecar signatures, the rescoring features with their model
digests. ``mosesrnn mert-report WORK`` reads it back::

    {"format": "mosesrnn-tuning-report", "version": 1, "sacrebleu": "nrefs:1|case:mixed|...",
     "dev": {"source": ..., "reference": ..., "sentences": 1365}, "test": {...}, "runs": 3,
     "stages": [{"name": "baseline", "about": ..., "bleu": [44.6, ...], "hypotheses": [...],
                 "iterations": [3, ...], "weight_shares": {"TranslationModel0[4]": 0.021},
                 "sentences_per_second": 22.0, "delta": null, "p_value": null, "pairs_agreeing": null,
                 "pairs": null}, ...],
     "signatures": {"tables": {...}, "rescoring": [...], "inis": {...}}}
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field

from mosesrnn.io.compressed import atomic_output
from mosesrnn.io.json_file import read_json
from mosesrnn.tuning.significance import mean_std

from .plan import CONTROL_STAGES

__all__ = ["REPORT_JSON", "REPORT_MD", "StageResult", "RouteReport", "write_report", "read_report", "markdown"]

FORMAT, VERSION = "mosesrnn-tuning-report", 1
#: The report's files in the working folder.
REPORT_JSON, REPORT_MD = "report.json", "report.md"


@dataclass(frozen=True)
class StageResult:
    """One stage of the route over its K runs (see the module docstring); the comparison fields are None
    for the baseline itself, or without one; the control fields are None but for a rescored stage."""

    name: str
    about: str
    bleu: tuple[float, ...]
    hypotheses: tuple[str, ...]
    iterations: tuple[int, ...] = ()
    weight_shares: dict = field(default_factory=dict)
    sentences_per_second: float | None = None
    delta: float | None = None
    p_value: float | None = None
    pairs_agreeing: int | None = None
    pairs: int | None = None
    #: a rescored stage's control (the same lists re-tuned without the features) and the comparison with it
    control: str | None = None
    control_delta: float | None = None
    control_p_value: float | None = None
    control_pairs_agreeing: int | None = None
    control_pairs: int | None = None


@dataclass(frozen=True)
class RouteReport:
    """The stages of one tuning, what they were measured on, and what made them."""

    sacrebleu: str
    dev: dict
    test: dict
    runs: int
    stages: tuple[StageResult, ...]
    signatures: dict = field(default_factory=dict)


def write_report(path: str, report: RouteReport) -> None:
    """Write ``report`` as JSON (whole or not at all), the translations it names relative to its own folder, so
    that the folder reads back from anywhere, and copied elsewhere."""
    folder = os.path.dirname(os.path.abspath(path))
    stages = [{**asdict(stage), "hypotheses": [os.path.relpath(os.path.abspath(h), folder) for h in stage.hypotheses]}
              for stage in report.stages]
    record = {"format": FORMAT, "version": VERSION, **asdict(report), "stages": stages}
    with atomic_output(path) as stream:
        stream.write((json.dumps(record, indent=1) + "\n").encode("utf-8"))


def read_report(path: str) -> RouteReport:
    """Read what :func:`write_report` wrote (the translations' paths resolved against the report's folder; those
    of an older report, relative to where its tuning ran, absolute ones as they are); raises ValueError naming the
    file for anything else."""
    record = read_json(path, "a tuning report of `mosesrnn tune`")
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ValueError(f"{path}: not a tuning report of `mosesrnn tune`")
    if record.get("version") != VERSION:
        raise ValueError(f"{path}: a tuning report of version {record.get('version')} (this mosesrnn reads {VERSION})")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        stages = tuple(StageResult(**{**stage, "bleu": tuple(stage["bleu"]),
                                      "hypotheses": tuple(_resolved(folder, h) for h in stage["hypotheses"]),
                                      "iterations": tuple(stage.get("iterations", ()))}) for stage in record["stages"])
        return RouteReport(record["sacrebleu"], record["dev"], record["test"], record["runs"], stages,
                            record.get("signatures", {}))
    except (KeyError, TypeError) as error:
        raise ValueError(f"{path}: a damaged tuning report ({error})") from None


def _resolved(folder: str, path: str) -> str:
    """A translation a report names: relative to the report's folder, or (an older report) to where its tuning
    ran."""
    inside = os.path.join(folder, path)
    return path if not os.path.exists(inside) and os.path.exists(path) else inside


def _number(value: float | None, digits: int = 2, sign: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def markdown(report: RouteReport, reference: str = "baseline") -> str:
    """The report as a Markdown table, with a line on what it was measured on (Δ, p and pairs against the
    stage ``reference``)."""
    with_controls = any(stage.control for stage in report.stages)
    control_head = " Δ vs its control | p | pairs |" if with_controls else ""
    rows = [f"| stage | test BLEU (mean ± std) | runs | Δ vs {reference} | p (median runs) | pairs |{control_head} new "
            "weights (share of L1) | iterations | decoding (sent./s) |",
            "|---|---|---|---|---|---|" + ("---|---|---|" if with_controls else "") + "---|---|---|"]
    for stage in report.stages:
        mean, std = mean_std(stage.bleu)
        spread = f" ± {std:.2f}" if std is not None else " (1 run)"
        shares = ", ".join(f"{name} {share:+.3f}" for name, share in stage.weight_shares.items()) or "-"
        pairs = f"{stage.pairs_agreeing} of {stage.pairs}" if stage.pairs else "-"
        control = ""
        if with_controls:
            control_pairs = f"{stage.control_pairs_agreeing} of {stage.control_pairs}" if stage.control_pairs else "-"
            control = (f" {_number(stage.control_delta, sign=True)} | {_number(stage.control_p_value, 4)} | "
                       f"{control_pairs} |")
        rows.append(f"| {stage.name}: {stage.about} | {mean:.2f}{spread} | {', '.join(f'{b:.2f}' for b in stage.bleu)} "
                    f"| {_number(stage.delta, sign=True)} | {_number(stage.p_value, 4)} | {pairs} |{control} {shares} "
                    f"| "
                    f"{', '.join(map(str, stage.iterations)) or '-'} | {_number(stage.sentences_per_second, 1)} |")
    note = (f"\nTest BLEU on {report.test.get('sentences')} sentences ({report.test.get('source')}), sacreBLEU "
            f"{report.sacrebleu}; tuned on {report.dev.get('sentences')} dev sentences, {report.runs} MERT runs per "
            f"stage. p: paired approximate randomisation between the median runs (10,000 samples); pairs: of the run "
            f"pairs, those that differ the same way as Δ at p < 0.05.")
    if with_controls:
        note += (" A rescored stage's control is the same n-best lists re-tuned by the same MERT (seed, starting "
                 "weights) without the new features: Δ vs its control is what the features add; Δ vs "
                 f"{reference} is what the whole route adds, the second tuning pass included.")
    alone = [stage.name for stage in report.stages if CONTROL_STAGES.get(stage.name) == reference]
    if alone:
        note += (f" {', '.join(alone)}: {reference}'s n-best lists re-tuned by the same MERT without any new "
                 f"feature, so its Δ vs {reference} is what a second tuning pass alone adds.")
    return "\n".join(rows) + "\n" + note + "\n"
