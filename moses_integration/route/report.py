"""The route's report, measured from the files its stages left: every stage's test BLEU per run, the
comparison with the baseline (or another stage) and its significance, the new weights' shares of the L1
norm, MERT's iterations, the decoding speed, and the signatures of what made them. The file it is
written to, and its Markdown table, are :mod:`.report_file`.
"""
from __future__ import annotations

import os
from dataclasses import replace

from mosesrnn.errors import MosesRNNError
from mosesrnn.formats.moses_ini import parse_ini, phrase_tables, read_ini_text, read_weights
from mosesrnn.formats.sidecar import SidecarError, read_sidecar, sidecar_path
from mosesrnn.formats.text_file import read_lines
from mosesrnn.io.declared import declare_input
from mosesrnn.io.json_file import read_json
from mosesrnn.models import DECODER_FEATURES
from mosesrnn.tuning.bleu import file_bleu
from mosesrnn.tuning.significance import Comparison, compare_runs

from ..mert_moses import decoding_speed, iterations
from .plan import (
    BASELINE,
    ON_TUNING_HALF,
    RETUNING_STAGES,
    SYSTEM,
    TUNED,
    RoutePlan,
    Stage,
    StageFiles,
    dev_halves,
    stage_files,
    stage_named,
)
from .report_file import RouteReport, StageResult, chosen_stage

__all__ = ["build_report", "compare_with", "compare_with_controls"]


def build_report(plan: RoutePlan) -> RouteReport:
    """Measure every stage's runs on the test set: BLEU, the comparison with the baseline, the new weights'
    shares, MERT's iterations, the decoding speed; and what made them (signatures)."""
    references = read_lines(plan.test_ref)
    tuned_on, held_out = dev_halves(len(read_lines(plan.dev_ref))) if plan.selecting() else ([], [])
    stages, signature = [], ""
    measured = []  # each system, then its control and (when rescored) its rescored stage
    for name, _ in plan.systems():
        measured.append(stage_named(name))
        for stage in RETUNING_STAGES.values():
            if stage.rescored and stage.system == name and plan.retunes(name):
                measured.append(stage_named(stage.control))
                if plan.rescoring_of(name):
                    measured.append(stage)
    for stage in measured:
        name, tuned = stage.name, stage.kind == TUNED
        runs = [stage_files(plan, stage.system, k) for k in range(1, plan.runs + 1)]
        hypotheses = [stage.test_hyp(files) for files in runs]
        scores = [file_bleu(path, plan.test_ref, plan.tokenize) for path in hypotheses]
        signature = scores[0][1]
        dev_hypotheses = [stage.dev_hyp(files) for files in runs] if held_out else []
        shares = _rescored_shares(runs) if stage.rescored else {} if stage.retuned else _column_shares(plan, name, runs)
        speeds = [decoding_speed(files.test_hyp + ".log") for files in runs] if tuned else []
        stages.append(StageResult(
            name=name, about=_about(plan, stage), bleu=tuple(score for score, _ in scores),
            hypotheses=tuple(hypotheses),
            iterations=tuple(iterations(files.mert_dir) if tuned else 1 for files in runs),
            weight_shares=shares,
            sentences_per_second=sum(speeds) / len(speeds) if speeds and None not in speeds else None,
            control=stage.control, dev_hypotheses=tuple(dev_hypotheses),
            dev_bleu=tuple(file_bleu(path, plan.dev_ref, plan.tokenize, held_out)[0] for path in dev_hypotheses)))
    dev = {"source": os.path.abspath(plan.dev_src), "reference": os.path.abspath(plan.dev_ref),
           "sentences": len(read_lines(plan.dev_src))}
    selection = {"on": plan.select_on, "tuned_on": len(tuned_on), "held_out": len(held_out),
                 "moses_tuned_on": ON_TUNING_HALF} if held_out else None
    report = RouteReport(signature, dev,
                          {"source": os.path.abspath(plan.test_src), "reference": os.path.abspath(plan.test_ref),
                           "sentences": len(references)}, plan.runs, tuple(stages), _signatures(plan), selection)
    report = compare_with_controls(report, plan.tokenize)
    report = compare_with(report, BASELINE, plan.tokenize) if plan.baseline else report
    if selection is not None:
        report = replace(report, selection={**selection, "chosen": chosen_stage(report).name})
    return report


def compare_with_controls(report: RouteReport, tokenize: str = "none") -> RouteReport:
    """``report`` with every stage that has a control compared with it: what its features add beyond a second
    tuning pass (the difference of the means, the median runs' p-value, the run pairs), on the test set and, with a
    selection, on the held-out dev half."""
    by_name = {stage.name: stage for stage in report.stages}
    texts = _Texts(report)
    stages = []
    for stage in report.stages:
        control = by_name.get(stage.control) if stage.control else None
        if control is not None:
            test, dev = texts.compare(stage, control, tokenize)
            stage = replace(stage, control_delta=test.delta, control_p_value=test.p_value,
                            control_pairs_agreeing=test.pairs_agreeing, control_pairs=test.pairs)
            if dev is not None:
                stage = replace(stage, dev_control_delta=dev.delta, dev_control_p_value=dev.p_value,
                                dev_control_pairs_agreeing=dev.pairs_agreeing, dev_control_pairs=dev.pairs)
        stages.append(stage)
    return replace(report, stages=tuple(stages))


def compare_with(report: RouteReport, reference_stage: str, tokenize: str = "none") -> RouteReport:
    """``report`` with every other stage compared with ``reference_stage`` (the baseline, or e.g. the full
    system against its pruned ones): the difference of the means, the median runs' p-value, the run pairs; on the
    test set and, with a selection, on the held-out dev half."""
    by_name = {stage.name: stage for stage in report.stages}
    if reference_stage not in by_name:
        raise MosesRNNError(f"no stage {reference_stage!r} in the report (its stages: {', '.join(by_name)})")
    reference = by_name[reference_stage]
    texts = _Texts(report)
    stages = []
    for stage in report.stages:
        if stage.name == reference_stage:
            stages.append(replace(stage, delta=None, p_value=None, pairs_agreeing=None, pairs=None, dev_delta=None,
                                  dev_p_value=None, dev_pairs_agreeing=None, dev_pairs=None))
            continue
        test, dev = texts.compare(stage, reference, tokenize)
        stage = replace(stage, delta=test.delta, p_value=test.p_value, pairs_agreeing=test.pairs_agreeing,
                        pairs=test.pairs)
        if dev is not None:
            stage = replace(stage, dev_delta=dev.delta, dev_p_value=dev.p_value, dev_pairs_agreeing=dev.pairs_agreeing,
                            dev_pairs=dev.pairs)
        stages.append(stage)
    return replace(report, stages=tuple(stages))


class _Texts:
    """The translations a report names and their references, read once: the test set's, and (with a selection)
    the held-out dev half's lines."""

    def __init__(self, report: RouteReport):
        self.held_out = dev_halves(report.dev["sentences"])[1] if report.selection else None
        # the references and translations the report names (in the tuning's folder, or moved with it)
        declare_input(report.test["reference"])
        for stage in report.stages:
            for path in stage.hypotheses + (stage.dev_hypotheses if self.held_out else ()):
                declare_input(path)
        self.references = read_lines(report.test["reference"])
        if self.held_out is not None:
            declare_input(report.dev["reference"])
            self.dev_references = self._held(report.dev["reference"])
        self._read: dict[str, list[str]] = {}

    def _held(self, path: str) -> list[str]:
        lines = read_lines(path)
        return [lines[at] for at in self.held_out]

    def _texts(self, paths: tuple[str, ...], held: bool) -> list[list[str]]:
        for path in paths:
            if (path, held) not in self._read:
                self._read[path, held] = self._held(path) if held else read_lines(path)
        return [self._read[path, held] for path in paths]

    def compare(self, stage: StageResult, other: StageResult, tokenize: str) -> tuple[Comparison, Comparison | None]:
        """``stage`` against ``other``: on the test set, and on the held-out dev half (None without a selection)."""
        test = compare_runs(self._texts(stage.hypotheses, False), stage.bleu, self._texts(other.hypotheses, False),
                            other.bleu, self.references, tokenize)
        if self.held_out is None:
            return test, None
        dev = compare_runs(self._texts(stage.dev_hypotheses, True), stage.dev_bleu,
                           self._texts(other.dev_hypotheses, True), other.dev_bleu, self.dev_references, tokenize)
        return test, dev


def _about(plan: RoutePlan, stage: Stage) -> str:
    name = stage.name
    if name == BASELINE:
        return f"{os.path.basename(plan.baseline)} as given"
    if stage.rescored:
        features = ",".join(plan.rescoring_of(stage.system).names())
        return f"{stage.system}'s {plan.lists()} rescored with {features}"
    if stage.retuned:
        return f"{stage.system}'s {plan.lists()} re-tuned by the same MERT, no new feature (the control)"
    ini = dict(plan.systems())[name]
    columns = list(_new_columns(plan, ini).values())
    return os.path.basename(ini) + (f" with {', '.join(columns)}" if columns else "")


def _new_columns(plan: RoutePlan, ini: str) -> dict[tuple[str, int], str]:
    """The weights a system's ``ini`` adds, ``{(feature, index): label}``: those the baseline lacks (without one,
    the scored tables' appended columns, a NeuralLM and a BilingualNPLM); labelled by the tables' sidecars (``rnn``,
    ``unk``), ``cslm`` for a NeuralLM, ``bilm`` for a BilingualNPLM (the joint model in the decoder), else
    ``Feature[index]``."""
    system = read_weights(ini)
    labels = {}
    for table in phrase_tables(_ini_lines(ini), ini):
        columns, size = _appended_columns(table.path), len(system.get(table.name, ()))
        labels.update({(table.name, size - len(columns) + offset): column for offset, column in enumerate(columns)})
    for feature in DECODER_FEATURES.values():  # cslm for a NeuralLM, bilm for a BilingualNPLM
        labels.update({(name, 0): feature.name for name in system if name.startswith(feature.moses_feature)})
    if plan.baseline:
        base = read_weights(plan.baseline)
        keys = [(name, index) for name, values in system.items() for index in range(len(base.get(name, ())),
                                                                                     len(values))]
    else:
        keys = list(labels)
    return {key: labels.get(key, f"{key[0]}[{key[1]}]") for key in keys}


def _ini_lines(ini: str):
    return parse_ini(read_ini_text(ini))


def _table_sidecar(path: str | None):
    """The sidecar of a table a moses.ini names (a binarized one: of its text table), if it has one."""
    if not path or "$" in path:
        return None
    for candidate in (path, path + ".gz"):
        declare_input(sidecar_path(candidate))  # a file the declared moses.ini names
        try:
            sidecar = read_sidecar(candidate)
        except SidecarError:
            return None
        if sidecar is not None:
            return sidecar
    return None


def _appended_columns(path: str | None) -> tuple[str, ...]:
    sidecar = _table_sidecar(path)
    return sidecar.appended_columns if sidecar else ()


def _column_shares(plan: RoutePlan, name: str, runs: list[StageFiles]) -> dict:
    """The new columns' mean weight over the runs, each as a share of the tuned weights' L1 norm."""
    if name == BASELINE:
        return {}
    return _mean_shares([read_weights(files.tuned_ini) for files in runs],
                        {label: key for key, label in _new_columns(plan, dict(plan.systems())[name]).items()})


def _rescored_shares(runs: list[StageFiles]) -> dict:
    """The rescoring groups' mean weight over the runs, each as a share of the L1 norm of all weights."""
    record = _rescored_features(runs[0].prefix + ".rescored.features.json")
    return _mean_shares([read_weights(files.weights) for files in runs],
                        {label: (label, 0) for label in record["labels"]})


def _rescored_features(path: str) -> dict:
    """The record of the rescoring's features that its stage wrote (``features``, ``labels``); raises MosesRNNError
    naming the file for one that is damaged."""
    record = read_json(path, "the record of the rescoring's features")
    if not (isinstance(record, dict) and all(isinstance(record.get(key), list) for key in ("features", "labels"))):
        raise MosesRNNError(f"{path}: not the record of the rescoring's features (no lists of features and labels)")
    return record


def _mean_shares(tuned: list[dict], wanted: dict) -> dict:
    shares = {}
    for label, (name, index) in wanted.items():
        values = []
        for weights in tuned:
            total = sum(abs(w) for group in weights.values() for w in group)
            values.append(weights[name][index] / total if name in weights and total else 0.0)
        shares[label] = sum(values) / len(values)
    return shares


def _signatures(plan: RoutePlan) -> dict:
    tables = {}
    for _, ini in plan.systems():
        for table in phrase_tables(_ini_lines(ini), ini):
            sidecar = _table_sidecar(table.path)
            if sidecar is not None:
                tables[table.path] = sidecar.signature
    rescoring = []
    for system in (SYSTEM, BASELINE):
        features = stage_files(plan, system, 1).prefix + ".rescored.features.json"
        if plan.rescoring_of(system) and os.path.isfile(features):
            rescoring += [feature for feature in _rescored_features(features)["features"] if feature not in rescoring]
    return {"tables": tables, "rescoring": rescoring,
            "inis": {name: os.path.abspath(ini) for name, ini in plan.systems()}}
