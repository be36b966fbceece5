"""The ``tune`` command's route, the one that pays: Moses MERT with the new columns, the n-best lists
rescored, a report with its significance; :func:`tune` runs it.

For each of K runs, and for each system (the baseline when given, then the system with the new
columns, then the others), the stages are:

1. ``mert``: mert-moses.pl tunes the moses.ini on the dev set (``SYSTEM-runK/``, its log beside it);
2. ``test``: the tuned ini decodes the test set (``SYSTEM-runK.test.hyp``), and, when the system is
   rescored, writes the test set's n-best list in the same pass (``SYSTEM-runK.test.nbest``);
3. with rescoring features (``mosesrnn nbest``'s: ``unk``, the CSLM, a sentence-level model...), for
   the system (and, with ``baseline_rescoring``, for the baseline: Table 1's +CSLM row): ``dev n-best``
   decodes the dev set's n-best list with the tuned ini; ``features`` adds the features to both lists
   (:func:`mosesrnn.score_nbest`); ``mert n-best`` tunes every weight on the dev list with mosesrnn's
   MERT, starting from the tuned ini's weights; ``rerank`` picks the test translations
   (``SYSTEM-runK.rescored.test.hyp``); the control re-tunes and reranks the same lists without the features
   (``SYSTEM-runK.retuned.test.hyp``). With ``baseline_control``, the baseline's lists get the control alone.
   With ``select_on`` half, mosesrnn's MERT tunes on one half of the dev lists, and every stage is measured on
   the other half too (each system's dev decode, each rescored stage's and control's reranked dev list): the
   report's headline is the stage chosen there.

Its modules, each importing only those after it: :mod:`.checks` (everything that stops it from starting),
:mod:`.stages` (running them, or a dry run's commands), :mod:`.made_with` (what each run was made with, by
content: a run is continued or lent only while that is the same), :mod:`.report` (measuring every stage on the
test set), :mod:`.published` (a finished report copied where it is committed, ``docs/results/NAME``),
:mod:`.report_file` (the report's files, ``report.json``, ``report.md``), :mod:`.reuse` (another tuning's runs,
``--runs-from``), :mod:`.plan` (what the tuning is of, saved and read as ``plan.json``, where each run keeps its
files).
"""
from __future__ import annotations

from typing import Callable

from ..mert_moses import MertSetupError, find_tools
from .checks import plan_problems, plan_warnings
from .plan import SELECT_ON, RouteOptions, RoutePlan, StageFiles, stage_files
from .report import build_report, compare_with
from .report_file import RouteReport, StageResult, markdown, read_report, write_report
from .stages import dry_run_commands, rescore_run, run_route

__all__ = ["SELECT_ON", "RouteOptions", "RoutePlan", "RouteReport", "StageFiles", "StageResult", "build_report",
           "compare_with", "dry_run_commands", "markdown", "plan_problems", "plan_warnings", "read_report",
           "rescore_run", "run_route", "stage_files", "tune", "write_report"]


def tune(options: RouteOptions, log: Callable[[str], None], dry_run: bool = False,
         warn: Callable[[str], None] = lambda message: None) -> str:
    """Run (or continue) the tuning route of ``options``: ``mosesrnn tune``.

    Args:
        options: the plan and where Moses' programs are (:class:`~.plan.RouteOptions`).
        log: called with each line of progress (a stage started, a MERT iteration...).
        dry_run: run nothing; return the commands the route would run, the problems found first.
        warn: called with what the route runs with but should not pass in silence
            (:func:`.checks.plan_warnings`: a small held-out half...).

    Returns:
        The report as Markdown (also written to the working folder as ``report.md`` and ``report.json``), or,
        with ``dry_run``, the commands.

    Raises:
        MertSetupError: every problem that stops it from starting, one a line (missing programs, empty or
            mismatched files, a folder of another tuning, a rescoring model that cannot serve); a
            :class:`~mosesrnn.errors.MosesRNNError`.
        MosesToolError: a Moses program that failed while the route ran.
        MosesRNNError: a damaged file of an earlier run, or a run whose inputs changed since it was made.
        OSError: a file that cannot be read or written.
    """
    tools, missing = find_tools(options.moses_bin, options.moses_scripts, options.mertdir)
    problems = plan_problems(options.plan, tools, missing)
    for warning in plan_warnings(options.plan):
        warn(warning)
    if dry_run:
        return dry_run_commands(options.plan, tools, problems) + "\n"
    if problems:
        raise MertSetupError(f"cannot start tuning: {problems[0]}" + "".join(f"\n  also: {p}" for p in problems[1:]))
    return markdown(run_route(options.plan, tools, log))
