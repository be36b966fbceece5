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

from mosesrnn.errors import MosesRNNError
from mosesrnn.io.compressed import atomic_output
from mosesrnn.io.json_file import read_json
from mosesrnn.tuning.significance import mean_std

from .plan import ON_TUNING_HALF, TUNED, stage_named

__all__ = ["REPORT_JSON", "REPORT_MD", "StageResult", "RouteReport", "chosen_stage", "write_report", "read_report",
           "report_columns", "stage_cells", "column_keys", "markdown"]

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
    #: with a selection (``tune --select-on``): the stage on the dev half held out from mosesrnn's MERT — its
    #: translations of the whole dev set, BLEU on the held-out lines — compared as on the test set
    dev_bleu: tuple[float, ...] = ()
    dev_hypotheses: tuple[str, ...] = ()
    dev_delta: float | None = None
    dev_p_value: float | None = None
    dev_pairs_agreeing: int | None = None
    dev_pairs: int | None = None
    dev_control_delta: float | None = None
    dev_control_p_value: float | None = None
    dev_control_pairs_agreeing: int | None = None
    dev_control_pairs: int | None = None


@dataclass(frozen=True)
class RouteReport:
    """The stages of one tuning, what they were measured on, and what made them. ``selection`` (``tune
    --select-on``; None without): ``on`` (``half``), ``tuned_on`` and ``held_out`` (how many dev sentences each half
    has), ``chosen`` (the stage of the highest mean BLEU on the held-out half), ``moses_tuned_on`` (``tuning half``:
    Moses' MERT tuned on the tuning half too; absent from the reports before it, whose Moses MERT read the whole dev
    set)."""

    sacrebleu: str
    dev: dict
    test: dict
    runs: int
    stages: tuple[StageResult, ...]
    signatures: dict = field(default_factory=dict)
    selection: dict | None = None


def chosen_stage(report: RouteReport) -> StageResult | None:
    """The stage of ``report`` with the highest mean BLEU on the held-out dev half (the first of equals), or None
    without a selection."""
    if report.selection is None:
        return None
    return max(report.stages, key=lambda stage: mean_std(stage.dev_bleu)[0])


def write_report(path: str, report: RouteReport, relative_to: str | None = None) -> None:
    """Write ``report`` as JSON (whole or not at all), the translations it names relative to its own folder, so
    that the folder reads back from anywhere, and copied elsewhere (given ``relative_to``, relative to that folder
    instead: a report published away from its tuning, read back from where the tuning ran)."""
    folder = relative_to or os.path.dirname(os.path.abspath(path))
    stages = []
    for stage in report.stages:
        record = {**asdict(stage), "hypotheses": [_relative(h, folder) for h in stage.hypotheses],
                  "dev_hypotheses": [_relative(h, folder) for h in stage.dev_hypotheses]}
        stages.append(record if report.selection else {key: value for key, value in record.items()
                                                       if not key.startswith("dev_")})  # as before selections
    record = {"format": FORMAT, "version": VERSION, **asdict(report), "stages": stages}
    if report.selection is None:
        del record["selection"]
    with atomic_output(path) as stream:
        stream.write((json.dumps(record, indent=1) + "\n").encode("utf-8"))


def _relative(path: str, folder: str) -> str:
    return os.path.relpath(os.path.abspath(path), folder)


def read_report(path: str) -> RouteReport:
    """Read what :func:`write_report` wrote (the paths of the translations and the references resolved against the
    report's folder; those of an older report, relative to where its tuning ran, absolute ones as they are); raises
    MosesRNNError naming the file for anything else."""
    record = read_json(path, "a tuning report of `mosesrnn tune`")
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise MosesRNNError(f"{path}: not a tuning report of `mosesrnn tune`")
    if record.get("version") != VERSION:
        raise MosesRNNError(f"{path}: a tuning report of version {record.get('version')} (this mosesrnn reads "
                            f"{VERSION})")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        stages = tuple(StageResult(**{**stage, "bleu": tuple(stage["bleu"]),
                                      "hypotheses": tuple(_resolved(folder, h) for h in stage["hypotheses"]),
                                      "iterations": tuple(stage.get("iterations", ())),
                                      "dev_bleu": tuple(stage.get("dev_bleu", ())),
                                      "dev_hypotheses": tuple(_resolved(folder, h)
                                                              for h in stage.get("dev_hypotheses", ()))})
                       for stage in record["stages"])
        dev, test = ({**record[part], "reference": _resolved(folder, record[part]["reference"])}
                     for part in ("dev", "test"))
        return RouteReport(record["sacrebleu"], dev, test, record["runs"], stages, record.get("signatures", {}),
                           record.get("selection"))
    except (KeyError, TypeError) as error:
        raise MosesRNNError(f"{path}: a damaged tuning report ({error})") from None


def _resolved(folder: str, path: str) -> str:
    """A translation or reference a report names: relative to the report's folder, or (an older report) to where
    its tuning ran."""
    inside = os.path.join(folder, path)
    return path if not os.path.exists(inside) and os.path.exists(path) else inside


def _number(value: float | None, digits: int = 2, sign: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _pairs(agreeing: int | None, pairs: int | None) -> str:
    return f"{agreeing} of {pairs}" if pairs else "-"


def _bleu(bleu: tuple[float, ...]) -> tuple[str, str]:
    """The cells mean ± std and runs of BLEU per run."""
    mean, std = mean_std(bleu)
    spread = f" ± {std:.2f}" if std is not None else " (1 run)"
    return f"{mean:.2f}{spread}", ", ".join(f"{b:.2f}" for b in bleu)


def report_columns(report: RouteReport, reference: str = "baseline") -> list[tuple[str, str]]:
    """``(key, header)`` of each column of the report's table after the stage's: the test set's (``test``, ``test
    runs``, ``test Δ``, ``test p``, ``test pairs``, then with controls ``test control Δ`` ...), with a selection the
    held-out dev half's (the same keys with ``dev``), then ``shares``, ``iterations``, ``decoding``."""
    with_controls = any(stage.control for stage in report.stages)
    columns = []
    for part, heads in (("test", ("test BLEU (mean ± std)", "runs", "p (median runs)")),
                        ("dev", ("dev-half BLEU (mean ± std)", "dev-half runs", "p"))):
        if part == "dev" and report.selection is None:
            continue
        columns += [(part, heads[0]), (f"{part} runs", heads[1]), (f"{part} Δ", f"Δ vs {reference}"),
                    (f"{part} p", heads[2]), (f"{part} pairs", "pairs")]
        if with_controls:
            columns += [(f"{part} control Δ", "Δ vs its control"), (f"{part} control p", "p"),
                        (f"{part} control pairs", "pairs")]
    return columns + [("shares", "new weights (share of L1)"), ("iterations", "iterations"),
                      ("decoding", "decoding (sent./s)")]


def stage_cells(stage: StageResult) -> dict[str, str]:
    """Each cell of ``stage``'s row of the report's table, by the keys of :func:`report_columns`, as the report
    writes it (2 decimals for BLEU and Δ, 4 for p, ``A of B`` run pairs, ``-`` where there is nothing)."""
    cells = {"shares": ", ".join(f"{name} {share:+.3f}" for name, share in stage.weight_shares.items()) or "-",
             "iterations": ", ".join(map(str, stage.iterations)) or "-",
             "decoding": _number(stage.sentences_per_second, 1)}
    for part, bleu, compared in (
            ("test", stage.bleu, ((stage.delta, stage.p_value, stage.pairs_agreeing, stage.pairs),
                                  (stage.control_delta, stage.control_p_value, stage.control_pairs_agreeing,
                                   stage.control_pairs))),
            ("dev", stage.dev_bleu, ((stage.dev_delta, stage.dev_p_value, stage.dev_pairs_agreeing, stage.dev_pairs),
                                     (stage.dev_control_delta, stage.dev_control_p_value,
                                      stage.dev_control_pairs_agreeing, stage.dev_control_pairs)))):
        if bleu:
            cells[part], cells[f"{part} runs"] = _bleu(bleu)
        for prefix, (delta, p_value, agreeing, pairs) in zip((f"{part} ", f"{part} control "), compared):
            cells.update({f"{prefix}Δ": _number(delta, sign=True), f"{prefix}p": _number(p_value, 4),
                          f"{prefix}pairs": _pairs(agreeing, pairs)})
    return cells


def column_keys(headers: list[str]) -> list[str | None]:
    """The key (:func:`report_columns`) of each header of a table copied from a report's, some columns left out,
    read left to right as the report writes them: ``Δ``, ``p`` and ``pairs`` belong to the BLEU column before them
    (test or dev half) and to the last ``Δ vs`` (the reference stage, or ``its control``). None: the stage's column,
    or a header no report writes."""
    keys, part, against = [], "test", ""
    for header in (header.strip().lower() for header in headers):
        key = None
        if header.startswith("dev-half"):
            part, against = "dev", ""
            key = "dev runs" if header == "dev-half runs" else "dev" if "mean" in header else None
        elif header in ("test bleu (mean ± std)", "runs"):
            part, against = "test", ""
            key = "test" if "mean" in header else "test runs"
        elif header.startswith("δ vs "):
            against = "control " if header == "δ vs its control" else ""
            key = f"{part} {against}Δ"
        elif header == "pairs":
            key = f"{part} {against}pairs"
        elif header in ("p", "p (median runs)"):
            key = f"{part} {against}p"
        else:
            key = {"new weights (share of l1)": "shares", "iterations": "iterations",
                   "decoding (sent./s)": "decoding"}.get(header)
        keys.append(key)
    return keys


def markdown(report: RouteReport, reference: str = "baseline") -> str:
    """The report as a Markdown table, with a line on what it was measured on (Δ, p and pairs against the
    stage ``reference``); with a selection (``tune --select-on``), the dev-half columns and, first, the headline:
    the stage chosen on the held-out dev half, with its test BLEU."""
    with_controls = any(stage.control for stage in report.stages)
    selecting = report.selection is not None
    columns = report_columns(report, reference)
    rows = ["| stage | " + " | ".join(header for _, header in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for stage in report.stages:
        cells = stage_cells(stage)
        rows.append(f"| {stage.name}: {stage.about} | " + " | ".join(cells[key] for key, _ in columns) + " |")
    note = (f"\nTest BLEU on {report.test.get('sentences')} sentences ({report.test.get('source')}), sacreBLEU "
            f"{report.sacrebleu}; tuned on {_tuned_on(report)}, {report.runs} MERT runs per "
            f"stage. p: paired approximate randomisation between the median runs (10,000 samples); pairs: of the run "
            f"pairs, those that differ the same way as Δ at p < 0.05.")
    if with_controls:
        note += (" A rescored stage's control is the same n-best lists re-tuned by the same MERT (seed, starting "
                 "weights) without the new features: Δ vs its control is what the features add; Δ vs "
                 f"{reference} is what the whole route adds, the second tuning pass included.")
    alone = [stage.name for stage in report.stages
             if stage_named(stage.name).retuned and stage_named(stage.name).system == reference]
    if alone:
        note += (f" {', '.join(alone)}: {reference}'s n-best lists re-tuned by the same MERT without any new "
                 f"feature, so its Δ vs {reference} is what a second tuning pass alone adds.")
    if selecting:
        return _headline(report, reference) + "\n" + "\n".join(rows) + "\n" + note + _selection_note(report) + "\n"
    return "\n".join(rows) + "\n" + note + "\n"


def _headline(report: RouteReport, reference: str) -> str:
    """The stage chosen on the held-out dev half, and its test BLEU: what the report claims."""
    chosen = chosen_stage(report)
    mean, std = mean_std(chosen.dev_bleu)
    test_mean, test_std = mean_std(chosen.bleu)
    spread, test_spread = (f" ± {value:.2f}" if value is not None else "" for value in (std, test_std))
    against = (f", {_number(chosen.delta, sign=True)} vs {reference} (p {_number(chosen.p_value, 4)}, "
               f"{chosen.pairs_agreeing} of {chosen.pairs} run pairs)" if chosen.pairs else "")
    return (f"**Chosen on the held-out dev half: {chosen.name}** ({chosen.about}): dev-half BLEU {mean:.2f}{spread} "
            f"on {report.selection['held_out']} sentences, the highest of the {len(report.stages)} stages; its test "
            f"BLEU {test_mean:.2f}{test_spread}{against}.\n")


def _tuned_on(report: RouteReport) -> str:
    """The dev sentences the report's MERTs tuned on, in words: all of them, or the tuning half's."""
    if report.selection and report.selection.get("moses_tuned_on") == ON_TUNING_HALF:
        return f"the {report.selection['tuned_on']} dev sentences at odd lines (of {report.dev.get('sentences')})"
    return f"{report.dev.get('sentences')} dev sentences"


def _selection_note(report: RouteReport) -> str:
    selection = report.selection
    moses_tuned = ", ".join(stage.name for stage in report.stages if stage_named(stage.name).kind == TUNED)
    measured = (f"the dev-half columns measure every stage on the other {selection['held_out']} (even lines), held out "
                f"from that tuning, with the same test, and the stage of the highest mean there is chosen.")
    if selection.get("moses_tuned_on") == ON_TUNING_HALF:
        return (f" Dev half (--select-on {selection['on']}): every MERT, mert-moses.pl's for {moses_tuned} and "
                f"mosesrnn's for every rescored stage and control, tuned on the {selection['tuned_on']} dev sentences "
                f"at odd lines (1st, 3rd, ...); {measured}")
    return (f" Dev half (--select-on {selection['on']}): mosesrnn's MERT tuned every rescored stage and control on "
            f"the {selection['tuned_on']} dev sentences at odd lines (1st, 3rd, ...); {measured} {moses_tuned}: tuned "
            f"by mert-moses.pl on the whole dev set, so their dev-half BLEU is on sentences their weights saw.")
