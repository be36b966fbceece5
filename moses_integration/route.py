"""The route that pays, in one call: Moses MERT with the new columns, the n-best lists rescored, a report
with its significance.

For each of K runs, and for each system (the baseline when given, then the system with the new
columns), the stages are:

1. ``mert``: mert-moses.pl tunes the moses.ini on the dev set (``SYSTEM-runK/``, its log beside it);
2. ``test``: the tuned ini decodes the test set (``SYSTEM-runK.test.hyp``), and, when the system is
   rescored, writes the test set's n-best list in the same pass (``SYSTEM-runK.test.nbest``);
3. with rescoring features (``mosesrnn nbest``'s: ``unk``, the CSLM, a sentence-level model...), for
   the system (and, with ``baseline_rescoring``, for the baseline: Table 1's +CSLM row): ``dev n-best``
   decodes the dev set's n-best list with the tuned ini; ``features`` adds the features to both lists
   (:func:`mosesrnn.score_nbest`); ``mert n-best`` tunes every weight on the dev list with mosesrnn's
   MERT, starting from the tuned ini's weights; ``rerank`` picks the test translations
   (``SYSTEM-runK.rescored.test.hyp``).

Every stage writes its files whole or not at all and is skipped when they exist, so the same call
continues a tuning stopped at any point (a crash, Ctrl-C): a finished decode is never redone, and a
MERT run stopped after an iteration continues from it (mert-moses.pl's ``--continue``). The plan
(``plan.json``) records what the tuning is of; a call with other inputs or options refuses the
folder. Then :func:`build_report` measures every stage on the test set
(:mod:`mosesrnn.formats.tuning_report`).
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass, field
from typing import Callable

from mosesrnn.features.options import FeatureOptions
from mosesrnn.formats.moses_ini import parse_ini, read_ini_text, read_weights, weights_text
from mosesrnn.formats.sidecar import SidecarError, read_sidecar, sidecar_path
from mosesrnn.formats.text_file import read_lines
from mosesrnn.formats.tuning_report import StageResult, TuningReport, markdown, write_report
from mosesrnn.io.atomic import atomic_file
from mosesrnn.io.compressed import atomic_output, read_bytes
from mosesrnn.io.declared import declare_input
from mosesrnn.tuning.bleu import file_bleu
from mosesrnn.tuning.significance import compare_runs

from .mert_moses import (
    MertSettings,
    MosesTools,
    check_ini_loads,
    decode,
    decoding_speed,
    iterations,
    relative_paths,
    run_mert,
)
from .moses_ini import phrase_tables
from .tools import format_command

__all__ = ["RoutePlan", "StageFiles", "plan_problems", "run_route", "build_report", "rescore_run", "stage_files",
           "compare_with", "dry_run"]

PLAN = "plan.json"
BASELINE, SYSTEM, RESCORED, BASELINE_RESCORED = "baseline", "system", "rescored", "baseline-rescored"
_RESCORED_STAGES = {RESCORED: SYSTEM, BASELINE_RESCORED: BASELINE}  # a rescored stage -> the system it rescores


@dataclass(frozen=True)
class RoutePlan:
    """What to tune and how (see the module docstring). ``rescoring`` None: no rescoring stage for the system;
    ``baseline_rescoring`` None: none for the baseline."""

    dev_src: str
    dev_ref: str
    ini: str
    test_src: str
    test_ref: str
    work_dir: str
    runs: int = 3
    baseline: str | None = None
    rescoring: FeatureOptions | None = None
    nbest_size: int = 100
    mert: MertSettings = field(default_factory=MertSettings)
    tokenize: str = "none"
    others: tuple[tuple[str, str], ...] = ()
    baseline_rescoring: FeatureOptions | None = None

    def __post_init__(self):
        if self.baseline_rescoring and not self.baseline:
            raise ValueError("rescoring the baseline needs a baseline")
        names = [name for name, _ in self.others]
        taken = {BASELINE, SYSTEM, *_RESCORED_STAGES}
        bad = [name for name in names if name in taken or not name.replace("-", "").replace(".", "").replace(
            "+", "").replace("_", "").isalnum()]
        if bad or len(set(names)) < len(names):
            raise ValueError(f"other systems need distinct names of letters, digits and - . + _ (not baseline, system "
                             f"or rescored): {', '.join(bad) or 'a name given twice'}")

    def systems(self) -> list[tuple[str, str]]:
        """``(name, moses.ini)`` of each system tuned: the baseline first, the system, then the others."""
        return ([(BASELINE, self.baseline)] if self.baseline else []) + [(SYSTEM, self.ini)] + list(self.others)

    def rescoring_of(self, system: str) -> FeatureOptions | None:
        """The features ``system``'s n-best lists are rescored with, or None."""
        return {SYSTEM: self.rescoring, BASELINE: self.baseline_rescoring}.get(system)

    def record(self) -> dict:
        """What a continued tuning must share with the one it continues: the inputs (absolute, with their sizes)
        and every option that changes a number."""
        files = {name: _file_record(getattr(self, name)) for name in ("dev_src", "dev_ref", "ini", "test_src",
                                                                       "test_ref", "baseline")}
        record = {"files": files, "runs": self.runs, "rescoring": _rescoring_record(self.rescoring),
                  "nbest_size": self.nbest_size, "mert": asdict(self.mert), "tokenize": self.tokenize,
                  "others": {name: _file_record(ini) for name, ini in self.others}}
        if self.baseline_rescoring:  # absent otherwise, so that the tunings before it continue
            record["baseline_rescoring"] = _rescoring_record(self.baseline_rescoring)
        return record


def _rescoring_record(options: FeatureOptions | None) -> dict | None:
    if options is None:
        return None
    record = {key: value for key, value in asdict(options).items() if key not in ("device", "threads")}
    for key in ("model", "reverse_model", "lm", "vocab"):
        record[key] = _file_record(record[key])
    return record


def _file_record(path: str | None):
    if path is None:
        return None
    return [os.path.abspath(path), os.path.getsize(path) if os.path.isfile(path) else None]


@dataclass(frozen=True)
class StageFiles:
    """Where one run of one system keeps its files (see the module docstring)."""

    prefix: str

    @property
    def mert_dir(self) -> str:
        return self.prefix

    @property
    def tuned_ini(self) -> str:
        return os.path.join(self.prefix, "moses.ini")

    @property
    def test_hyp(self) -> str:
        return self.prefix + ".test.hyp"

    @property
    def test_nbest(self) -> str:
        return self.prefix + ".test.nbest"

    @property
    def dev_hyp(self) -> str:
        return self.prefix + ".dev.hyp"

    @property
    def dev_nbest(self) -> str:
        return self.prefix + ".dev.nbest"

    @property
    def dev_rescored(self) -> str:
        return self.prefix + ".dev.nbest.rescored.gz"

    @property
    def test_rescored(self) -> str:
        return self.prefix + ".test.nbest.rescored.gz"

    @property
    def weights(self) -> str:
        return self.prefix + ".rescored.weights"

    @property
    def rescored_hyp(self) -> str:
        return self.prefix + ".rescored.test.hyp"


def stage_files(plan: RoutePlan, system: str, run: int) -> StageFiles:
    """The files of run ``run`` of ``system`` in the plan's working folder."""
    return StageFiles(os.path.join(plan.work_dir, f"{system}-run{run}"))


# -- before anything runs ----------------------------------------------------------------------------


def plan_problems(plan: RoutePlan, tools_missing: list[str]) -> list[str]:
    """Everything that stops the tuning before it starts, the user's files first, then the machine's programs."""
    problems = []
    for path in (plan.dev_src, plan.dev_ref, plan.ini, plan.baseline, plan.test_src, plan.test_ref):
        if path is not None and os.path.isfile(path) and os.path.getsize(path) == 0:
            problems.append(f"{path} is empty")
    for ini in filter(None, (plan.ini, plan.baseline)):
        relative = relative_paths(ini) if os.path.isfile(ini) and os.path.getsize(ini) else []
        problems += [f"{where} is relative, but mert-moses.pl decodes inside its working directory: use an absolute "
                     f"path" for where in relative]
        if relative:
            problems.append(f"to make every path of {ini} absolute: mosesrnn moses-ini {ini} --absolute-paths "
                            "--relative-to DIR -o NEW.ini, DIR being where they are relative to")
    for source, reference in ((plan.dev_src, plan.dev_ref), (plan.test_src, plan.test_ref)):
        if all(os.path.isfile(path) and os.path.getsize(path) for path in (source, reference)):
            lines = (len(read_lines(source)), len(read_lines(reference)))
            if lines[0] != lines[1]:
                problems.append(f"{source} has {lines[0]} lines but {reference} has {lines[1]}")
    problems += _plan_record_problems(plan)
    return problems + tools_missing


def _plan_record_problems(plan: RoutePlan) -> list[str]:
    path = os.path.join(plan.work_dir, PLAN)
    if not os.path.exists(path):
        leftovers = [name for name in os.listdir(plan.work_dir) if not name.startswith(".")] \
            if os.path.isdir(plan.work_dir) else []
        return [f"{plan.work_dir} holds files of something else ({', '.join(sorted(leftovers)[:3])}...): tune into "
                f"a fresh folder"] if leftovers else []
    try:
        saved = json.loads(read_bytes(path).decode("utf-8"))
    except ValueError:
        return [f"{path} is damaged: tune into a fresh folder"]
    current = json.loads(json.dumps(plan.record()))
    differing = sorted(key for key in set(saved) | set(current) if saved.get(key) != current.get(key))
    if differing:
        return [f"{plan.work_dir} holds a tuning of other {', '.join(differing)} ({path}): continue it with the "
                f"command that started it, or tune into a fresh folder"]
    return []


# -- the stages ---------------------------------------------------------------------------------------


def run_route(plan: RoutePlan, tools: MosesTools, log: Callable[[str], None]) -> TuningReport:
    """Run (or continue) every stage of the plan, then measure and write the report (``report.json``,
    ``report.md`` in the working folder); returns it."""
    for _, ini in plan.systems():
        check_ini_loads(tools, ini)
    with atomic_output(os.path.join(plan.work_dir, PLAN)) as stream:
        stream.write((json.dumps(plan.record(), indent=1) + "\n").encode("utf-8"))
    for system, ini in plan.systems():
        for run in range(1, plan.runs + 1):
            _run_system(plan, tools, system, ini, run, log)
    report = build_report(plan)
    write_report(os.path.join(plan.work_dir, "report.json"), report)
    with atomic_output(os.path.join(plan.work_dir, "report.md")) as stream:
        stream.write(markdown(report).encode("utf-8"))
    return report


def _run_system(plan: RoutePlan, tools: MosesTools, system: str, ini: str, run: int,
                log: Callable[[str], None]) -> None:
    files = stage_files(plan, system, run)
    where = f"{system} run {run}/{plan.runs}"
    rescoring = plan.rescoring_of(system)
    rescore = rescoring is not None
    if not os.path.isfile(files.tuned_ini):
        with _iterations_watch(files.mert_dir, lambda k: log(f"{where}: mert-moses.pl, iteration {k}")):
            run_mert(tools, plan.mert, plan.dev_src, plan.dev_ref, ini, files.mert_dir,
                     lambda message: log(f"{where}: {message}"))
    if not os.path.isfile(files.test_hyp) or (rescore and not os.path.isfile(files.test_nbest)):
        log(f"{where}: decoding the test set" + (f" ({plan.nbest_size}-best lists)" if rescore else ""))
        decode(tools, files.tuned_ini, plan.mert.threads, plan.test_src, files.test_hyp,
               files.test_nbest if rescore else None, plan.nbest_size)
    if not rescore:
        return
    if not os.path.isfile(files.dev_nbest):
        log(f"{where}: decoding the dev set's {plan.nbest_size}-best lists")
        decode(tools, files.tuned_ini, plan.mert.threads, plan.dev_src, files.dev_hyp, files.dev_nbest,
               plan.nbest_size)
    rescore_run(plan, rescoring, files, run, lambda message: log(f"{where}: {message}"))


def rescore_run(plan: RoutePlan, rescoring: FeatureOptions, files: StageFiles, run: int,
                log: Callable[[str], None]) -> None:
    """The rescoring stages of one run on its dev and test n-best lists (``files.dev_nbest``,
    ``files.test_nbest``): add the features of ``rescoring``, tune with mosesrnn's MERT from
    ``files.tuned_ini`` (seed ``run``), rerank the test list. Each stage is skipped when its file exists."""
    from mosesrnn.api import score_nbest
    from mosesrnn.tuning.mert import MertOptions
    from mosesrnn.tuning.rerank import rerank
    from mosesrnn.tuning.tune import tune_files
    from mosesrnn.tuning.vectors import named_weights
    for listing, source, rescored in ((files.dev_nbest, plan.dev_src, files.dev_rescored),
                                      (files.test_nbest, plan.test_src, files.test_rescored)):
        if not os.path.isfile(rescored):
            log(f"adding {','.join(rescoring.names())} to {listing}")
            summary = score_nbest(listing, source, rescored, rescoring)
            _remember_features(files, summary.features, summary.labels)
    if not os.path.isfile(files.weights):
        log(f"mosesrnn mert on {files.dev_rescored}, from the weights of {files.tuned_ini}")
        report = tune_files([files.dev_rescored], [plan.dev_ref], files.tuned_ini, plan.tokenize,
                            MertOptions(seed=run))
        with atomic_file(files.weights) as stream:
            stream.write(weights_text(named_weights(report.groups, report.weights)).encode("utf-8"))
    if not os.path.isfile(files.rescored_hyp):
        with atomic_file(files.rescored_hyp) as stream:
            for text in rerank(files.test_rescored, read_weights(files.weights)):
                stream.write(f"{text}\n".encode("utf-8"))


def _remember_features(files: StageFiles, features, labels) -> None:
    """Record which n-best groups the rescoring added and the features' signatures (for the report)."""
    with atomic_file(files.prefix + ".rescored.features.json") as stream:
        stream.write(json.dumps({"features": list(features), "labels": list(labels)}).encode("utf-8"))


class _iterations_watch:
    """While mert-moses.pl runs, say each new iteration it starts (its ``runK.moses.ini`` files)."""

    def __init__(self, working_dir: str, say: Callable[[int], None], every: float = 5.0):
        self.working_dir, self.say, self.every = working_dir, say, every
        self._stop = threading.Event()

    def __enter__(self):
        self._thread = threading.Thread(target=self._watch, name="mosesrnn-mert-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        seen = iterations(self.working_dir)
        while not self._stop.wait(self.every):
            current = iterations(self.working_dir)
            if current > seen:
                seen = current
                self.say(current)


# -- the report ---------------------------------------------------------------------------------------


def build_report(plan: RoutePlan) -> TuningReport:
    """Measure every stage's runs on the test set: BLEU, the comparison with the baseline, the new weights'
    shares, MERT's iterations, the decoding speed; and what made them (signatures)."""
    references = read_lines(plan.test_ref)
    stages, signature = [], ""
    names = []
    for name, _ in plan.systems():
        names += [name] + [stage for stage, system in _RESCORED_STAGES.items()
                           if system == name and plan.rescoring_of(system)]
    for name in names:
        rescored = name in _RESCORED_STAGES
        runs = [stage_files(plan, _RESCORED_STAGES.get(name, name), k) for k in range(1, plan.runs + 1)]
        hypotheses = [files.rescored_hyp if rescored else files.test_hyp for files in runs]
        scores = [file_bleu(path, plan.test_ref, plan.tokenize) for path in hypotheses]
        signature = scores[0][1]
        shares = _rescored_shares(runs) if rescored else _column_shares(plan, name, runs)
        speeds = [] if rescored else [decoding_speed(files.test_hyp + ".log") for files in runs]
        stages.append(StageResult(
            name=name, about=_about(plan, name), bleu=tuple(score for score, _ in scores), hypotheses=tuple(hypotheses),
            iterations=tuple(1 if rescored else iterations(files.mert_dir) for files in runs),
            weight_shares=shares,
            sentences_per_second=sum(speeds) / len(speeds) if speeds and None not in speeds else None))
    dev = {"source": os.path.abspath(plan.dev_src), "reference": os.path.abspath(plan.dev_ref),
           "sentences": len(read_lines(plan.dev_src))}
    report = TuningReport(signature, dev,
                          {"source": os.path.abspath(plan.test_src), "reference": os.path.abspath(plan.test_ref),
                           "sentences": len(references)}, plan.runs, tuple(stages), _signatures(plan))
    return compare_with(report, BASELINE, plan.tokenize) if plan.baseline else report


def compare_with(report: TuningReport, reference_stage: str, tokenize: str = "none") -> TuningReport:
    """``report`` with every other stage compared with ``reference_stage`` (the baseline, or e.g. the full
    system against its pruned ones): the difference of the means, the median runs' p-value, the run pairs."""
    by_name = {stage.name: stage for stage in report.stages}
    if reference_stage not in by_name:
        raise ValueError(f"no stage {reference_stage!r} in the report (its stages: {', '.join(by_name)})")
    reference = by_name[reference_stage]
    declare_input(report.test["reference"])  # the test reference the report names
    for stage in report.stages:
        for path in stage.hypotheses:  # the translations it names (in the tuning's folder, or moved with it)
            declare_input(path)
    references = read_lines(report.test["reference"])
    texts = [read_lines(path) for path in reference.hypotheses]
    stages = []
    for stage in report.stages:
        if stage.name == reference_stage:
            stages.append(StageResult(**{**asdict(stage), "delta": None, "p_value": None, "pairs_agreeing": None,
                                         "pairs": None}))
            continue
        comparison = compare_runs([read_lines(path) for path in stage.hypotheses], stage.bleu, texts,
                                  reference.bleu, references, tokenize)
        stages.append(StageResult(**{**asdict(stage), "delta": comparison.delta, "p_value": comparison.p_value,
                                     "pairs_agreeing": comparison.pairs_agreeing, "pairs": comparison.pairs}))
    return TuningReport(report.sacrebleu, report.dev, report.test, report.runs, tuple(stages), report.signatures)


def _about(plan: RoutePlan, name: str) -> str:
    if name == BASELINE:
        return f"{os.path.basename(plan.baseline)} as given"
    if name in _RESCORED_STAGES:
        features = ",".join(plan.rescoring_of(_RESCORED_STAGES[name]).names())
        return f"{_RESCORED_STAGES[name]}'s {plan.nbest_size}-best lists rescored with {features}"
    ini = dict(plan.systems())[name]
    columns = list(_new_columns(plan, ini).values())
    return os.path.basename(ini) + (f" with {', '.join(columns)}" if columns else "")


def _new_columns(plan: RoutePlan, ini: str) -> dict[tuple[str, int], str]:
    """The weights a system's ``ini`` adds, ``{(feature, index): label}``: those the baseline lacks (without one,
    the scored tables' appended columns and a NeuralLM); labelled by the tables' sidecars (``rnn``, ``unk``),
    ``cslm`` for a NeuralLM, else ``Feature[index]``."""
    system = read_weights(ini)
    labels = {}
    for table in phrase_tables(_ini_lines(ini), ini):
        columns, size = _appended_columns(table.path), len(system.get(table.name, ()))
        labels.update({(table.name, size - len(columns) + offset): column for offset, column in enumerate(columns)})
    labels.update({(name, 0): "cslm" for name in system if name.startswith("NeuralLM")})
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
    record = json.loads(read_bytes(runs[0].prefix + ".rescored.features.json").decode("utf-8"))
    return _mean_shares([read_weights(files.weights) for files in runs],
                        {label: (label, 0) for label in record["labels"]})


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
            rescoring += [feature for feature in json.loads(read_bytes(features).decode("utf-8"))["features"]
                          if feature not in rescoring]
    return {"tables": tables, "rescoring": rescoring,
            "inis": {name: os.path.abspath(ini) for name, ini in plan.systems()}}


def dry_run(plan: RoutePlan, tools: MosesTools, problems: list[str]) -> str:
    """The commands the route would run (and the problems found), without running anything."""
    from .mert_moses import decode_command, mert_command, show_weights_command
    lines = [f"# problem: {problem}" for problem in problems]
    lines += [format_command(show_weights_command(tools, ini)) for _, ini in plan.systems()]
    for system, ini in plan.systems():
        rescoring = plan.rescoring_of(system)
        rescore = rescoring is not None
        for run in range(1, plan.runs + 1):
            files = stage_files(plan, system, run)
            mert = mert_command(tools, plan.mert, plan.dev_src, plan.dev_ref, ini, files.mert_dir)
            lines.append(f"{format_command(mert)} > {files.mert_dir}.log 2>&1")
            lines.append(format_command(decode_command(tools, files.tuned_ini, plan.mert.threads, plan.test_src,
                                                       files.test_nbest if rescore else None, plan.nbest_size),
                                        files.test_hyp))
            if rescore:
                lines.append(format_command(decode_command(tools, files.tuned_ini, plan.mert.threads, plan.dev_src,
                                                           files.dev_nbest, plan.nbest_size), files.dev_hyp))
                lines.append(f"# then: mosesrnn nbest ({','.join(rescoring.names())}) on both lists, mosesrnn "
                             f"mert --init {files.tuned_ini} --seed {run}, mosesrnn rerank -> {files.rescored_hyp}")
    lines.append(f"# then: the report (sacreBLEU tokenize={plan.tokenize}, paired approximate randomisation) in "
                 f"{plan.work_dir}/report.md and report.json")
    return "\n".join(lines)
