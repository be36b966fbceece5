"""The stages of the route, run (or continued) in order, and the commands they would run (a dry run).

Every stage writes its files whole or not at all and is skipped when they exist, so the same call
continues a tuning stopped at any point (a crash, Ctrl-C): a finished decode is never redone, and a
MERT run stopped after an iteration continues from it (mert-moses.pl's ``--continue``). While
mert-moses.pl runs, a thread watches its working folder and says each iteration it starts.
"""
from __future__ import annotations

import json
import os
import threading
from typing import Callable

from mosesrnn.api import score_nbest
from mosesrnn.features.options import FeatureOptions
from mosesrnn.formats.moses_ini import read_weights, weights_text
from mosesrnn.formats.text_file import read_lines
from mosesrnn.io.atomic import atomic_file
from mosesrnn.io.compressed import atomic_output
from mosesrnn.tuning.mert import MertOptions
from mosesrnn.tuning.nbest_mert import mert_nbest_files
from mosesrnn.tuning.rerank import rerank
from mosesrnn.tuning.vectors import named_weights

from ..mert_moses import (
    MosesTools,
    check_ini_loads,
    decode,
    decode_command,
    iterations,
    mert_command,
    run_mert,
    show_weights_command,
)
from ..nplm_check import HEAPS, check_nplm_reads_its_files, nplm_feature_names
from ..tools import format_command
from .made_with import check_still_made_with, made_with, write_made_with
from .plan import RoutePlan, StageFiles, dev_halves, save_plan, stage_files, write_tuning_half
from .report import build_report
from .report_file import REPORT_JSON, REPORT_MD, RouteReport, markdown, write_report
from .reuse import link_reused_runs, reused_files

__all__ = ["run_route", "rescore_run", "dry_run_commands"]


def run_route(plan: RoutePlan, tools: MosesTools, log: Callable[[str], None]) -> RouteReport:
    """Run (or continue) every stage of the plan, then measure and write the report (``report.json``,
    ``report.md`` in the working folder); returns it."""
    for system, ini in plan.systems():
        check_ini_loads(tools, ini)
        if names := nplm_feature_names(ini):
            log(f"{system}: checking that the decoder's {', '.join(names)} read their files (two short decodes)")
            check_nplm_reads_its_files(tools, ini, plan.dev_src, os.path.join(plan.work_dir, f"{system}-nplm-check"))
    save_plan(plan)
    write_tuning_half(plan)
    link_reused_runs(plan, log)
    for system, ini in plan.systems():
        for run in range(1, plan.runs + 1):
            _run_system(plan, tools, system, ini, run, log)
    report = build_report(plan)
    write_report(os.path.join(plan.work_dir, REPORT_JSON), report)
    with atomic_output(os.path.join(plan.work_dir, REPORT_MD)) as stream:
        stream.write(markdown(report).encode("utf-8"))
    return report


def _run_system(plan: RoutePlan, tools: MosesTools, system: str, ini: str, run: int,
                log: Callable[[str], None]) -> None:
    files = stage_files(plan, system, run)
    where = f"{system} run {run}/{plan.runs}"
    retune, aligned = plan.retunes(system), plan.word_alignments(system)
    moses_ran = False
    if not os.path.isfile(files.tuned_ini):
        if not os.path.lexists(files.mert_dir):  # a new run: what it is made with, before mert-moses.pl starts
            write_made_with(files.mert_dir, made_with(plan, tools, ini))
        with _IterationsWatch(files.mert_dir, lambda k: log(f"{where}: mert-moses.pl, iteration {k}")):
            run_mert(tools, plan.mert, *plan.moses_dev(), ini, files.mert_dir,
                     lambda message: log(f"{where}: {message}"))
        moses_ran = True
    if not os.path.isfile(files.test_hyp) or (retune and not os.path.isfile(files.test_nbest)):
        log(f"{where}: decoding the test set" + (f" ({plan.lists()})" if retune else ""))
        decode(tools, files.tuned_ini, plan.mert.threads, plan.test_src, files.test_hyp,
               files.test_nbest if retune else None, plan.nbest_size, aligned, plan.nbest_distinct)
        moses_ran = True
    if (retune and not os.path.isfile(files.dev_nbest)) or (plan.selecting() and not os.path.isfile(files.dev_hyp)):
        log(f"{where}: decoding the dev set" + (f"'s {plan.lists()}" if retune else " (its held-out "
                                                 "half measures the stage)"))
        decode(tools, files.tuned_ini, plan.mert.threads, plan.dev_src, files.dev_hyp,
               files.dev_nbest if retune else None, plan.nbest_size, aligned, plan.nbest_distinct)
        moses_ran = True
    if moses_ran:  # nothing changed while Moses ran
        check_still_made_with(plan, tools, ini, files.mert_dir)
    if retune:
        rescore_run(plan, plan.rescoring_of(system), files, run, lambda message: log(f"{where}: {message}"))


def rescore_run(plan: RoutePlan, rescoring: FeatureOptions | None, files: StageFiles, run: int,
                log: Callable[[str], None]) -> None:
    """The rescoring stages of one run on its dev and test n-best lists (``files.dev_nbest``,
    ``files.test_nbest``): add the features of ``rescoring``, tune with mosesrnn's MERT from
    ``files.tuned_ini`` (seed ``run``), rerank the test list; and the control: the same lists, without the
    features, through the same MERT (seed, starting weights) and reranking. ``rescoring`` None: the control
    alone. With ``plan.select_on`` half, each MERT tunes on the dev lists' tuning half (:func:`.plan.dev_halves`) and
    the dev list is reranked too (``*.dev.hyp``), to measure the stage on the other half. Each stage is skipped when
    its file exists."""
    tunings = [(files.dev_nbest, files.test_nbest, files.retuned_weights, files.retuned_hyp,
                files.retuned_dev_hyp)]  # the control
    if rescoring is not None:
        for listing, source, rescored in ((files.dev_nbest, plan.dev_src, files.dev_rescored),
                                          (files.test_nbest, plan.test_src, files.test_rescored)):
            if not os.path.isfile(rescored):
                log(f"adding {','.join(rescoring.names())} to {listing}")
                summary = score_nbest(listing, source, rescored, rescoring)
                _remember_features(files, summary.features, summary.labels)
        tunings.insert(0, (files.dev_rescored, files.test_rescored, files.weights, files.rescored_hyp,
                           files.rescored_dev_hyp))
    tune_on = dev_halves(len(read_lines(plan.dev_ref)))[0] if plan.selecting() else None
    for dev, test, weights, output, dev_output in tunings:
        if not os.path.isfile(weights):
            half = " (its tuning half: odd lines)" if tune_on is not None else ""
            log(f"mosesrnn mert on {dev}{half}, from the weights of {files.tuned_ini}")
            result = mert_nbest_files([dev], [plan.dev_ref], files.tuned_ini, plan.tokenize, MertOptions(seed=run),
                                      tune_on)
            with atomic_file(weights) as stream:
                stream.write(weights_text(named_weights(result.groups, result.weights)).encode("utf-8"))
        for listing, reranked in [(test, output)] + ([(dev, dev_output)] if tune_on is not None else []):
            if not os.path.isfile(reranked):
                with atomic_file(reranked) as stream, rerank(listing, read_weights(weights)) as texts:
                    for text in texts:
                        stream.write(f"{text}\n".encode("utf-8"))


def _remember_features(files: StageFiles, features, labels) -> None:
    """Record which n-best groups the rescoring added and the features' signatures (for the report)."""
    with atomic_file(files.prefix + ".rescored.features.json") as stream:
        stream.write(json.dumps({"features": list(features), "labels": list(labels)}).encode("utf-8"))


class _IterationsWatch:
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


def dry_run_commands(plan: RoutePlan, tools: MosesTools, problems: list[str]) -> str:
    """The commands the route would run (and the problems found), without running anything."""
    lines = [f"# problem: {problem}" for problem in problems]
    lines += [format_command(show_weights_command(tools, ini)) for _, ini in plan.systems()]
    lines += [f"# {ini}: its {', '.join(names)} decoded twice (MALLOC_PERTURB_={' and '.join(HEAPS)}), to agree"
              for _, ini in plan.systems() if (names := nplm_feature_names(ini))]
    for system, ini in plan.systems():
        rescoring = plan.rescoring_of(system)
        retune, aligned = plan.retunes(system), plan.word_alignments(system)
        for run in range(1, plan.runs + 1):
            files = stage_files(plan, system, run)
            lent = dict(reused_files(plan, system, run))
            if lent:
                lines.append(f"# linked to {lent[files.mert_dir]}'s files (--runs-from): "
                             + ", ".join(sorted(os.path.basename(here) for here in lent)))
            else:
                mert = mert_command(tools, plan.mert, *plan.moses_dev(), ini, files.mert_dir)
                lines.append(f"{format_command(mert)} > {files.mert_dir}.log 2>&1")
            if files.test_hyp not in lent:
                lines.append(format_command(decode_command(tools, files.tuned_ini, plan.mert.threads, plan.test_src,
                                                           files.test_nbest if retune else None, plan.nbest_size,
                                                           aligned, plan.nbest_distinct), files.test_hyp))
            if (retune and files.dev_nbest not in lent) or (plan.selecting() and files.dev_hyp not in lent):
                lines.append(format_command(decode_command(tools, files.tuned_ini, plan.mert.threads, plan.dev_src,
                                                           files.dev_nbest if retune else None, plan.nbest_size,
                                                           aligned, plan.nbest_distinct), files.dev_hyp))
            if rescoring is not None:
                lines.append(f"# then: mosesrnn nbest ({','.join(rescoring.names())}) on both lists, mosesrnn "
                             f"mert --init {files.tuned_ini} --seed {run}, mosesrnn rerank -> {files.rescored_hyp}")
                lines.append(f"# and the control: the same mert and rerank on the lists without the features -> "
                             f"{files.retuned_hyp}")
            elif retune:
                lines.append(f"# then the control alone: mosesrnn mert --init {files.tuned_ini} --seed {run} on the "
                             f"dev list, mosesrnn rerank -> {files.retuned_hyp}")
    if plan.selecting():
        lines.append(f"# --select-on half: every MERT above, mert-moses.pl's and mosesrnn's, tunes on the dev set's "
                     f"odd lines (mert-moses.pl's in {os.path.dirname(plan.moses_dev()[0])}/, written first); every "
                     f"stage is measured on the even lines too, where the report chooses its stage")
    lines.append(f"# then: the report (sacreBLEU tokenize={plan.tokenize}, paired approximate randomisation) in "
                 f"{plan.work_dir}/report.md and report.json")
    return "\n".join(lines)
