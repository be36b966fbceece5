"""Another tuning's finished Moses MERT runs, reused (``tune --runs-from FOLDER``).

A Moses MERT run is most of a tuning's time (an hour a run with a joint model in the decoder), and
what it leaves — the tuned moses.ini, the test decode, the dev and test n-best lists — depends only on
the moses.ini tuned (and the files it names, and the decoder), the dev and test sets, the MERT settings
and the n-best size. A tuning that shares these with FOLDER's takes each finished run of the same moses.ini
from there (the same path here; the same content of everything the run was made with, which
:mod:`.made_with` checks before any work), as links in its own folder
(so its report names them), and runs only what is new: other rescoring features on the same lists,
runs FOLDER did not finish. Nothing is written through a link: a file that must be made again (n-best
lists without the word alignments a joint model reads) is not linked, nor the test decode made with it.
"""
from __future__ import annotations

import os
from typing import Callable

from mosesrnn.formats.nbest import read_nbest
from mosesrnn.io.declared import check_write

from .plan import BASELINE, SYSTEM, RoutePlan, StageFiles, file_record, saved_plan, stage_files

__all__ = ["reused_files", "link_reused_runs", "tuned_by"]


def reused_files(plan: RoutePlan, system: str, run: int) -> list[tuple[str, str]]:
    """``(here, there)``: the files of run ``run`` of ``system`` that ``plan.runs_from`` lends (none when it did
    not finish that run of the same moses.ini, or when the run is here already)."""
    saved = _lendable_plan(plan.runs_from)
    if saved is None:
        return []
    lender = tuned_by(saved, dict(plan.systems())[system])
    here = stage_files(plan, system, run)
    if lender is None or os.path.lexists(here.mert_dir):
        return []
    there = StageFiles(os.path.join(plan.runs_from, f"{lender}-run{run}"))
    if not os.path.isfile(there.tuned_ini):
        return []
    names = []
    if plan.retunes(system):
        lists = all(os.path.isfile(getattr(there, name)) for name in ("test_nbest", "dev_nbest")) and \
            saved.get("nbest_distinct", False) == plan.nbest_distinct  # lists of the same kind
        if lists and (not plan.word_alignments(system) or _has_word_alignments(there.dev_nbest)):
            names += ["test_hyp", "test_nbest", "dev_hyp", "dev_nbest"]
            # the control: the same lists through the same MERT, on the same sentences
            if saved.get("tokenize") == plan.tokenize and saved.get("select_on", "none") == plan.select_on:
                names += ["retuned_weights", "retuned_hyp"] + (["retuned_dev_hyp"] if plan.selecting() else [])
    elif os.path.isfile(there.test_hyp):
        names += ["test_hyp"] + (["dev_hyp"] if plan.selecting() else [])
    pairs = [(getattr(here, name), getattr(there, name)) for name in names + ["mert_dir"]]
    pairs = [(a + ".log", b + ".log") for a, b in pairs if a.endswith((".hyp", here.mert_dir))] + pairs
    # the run's folder last: until it is linked, the run is not here, and a stopped linking starts again
    return [(a, b) for a, b in pairs if os.path.lexists(b) and not os.path.lexists(a)]


def link_reused_runs(plan: RoutePlan, log: Callable[[str], None]) -> None:
    """Link into the working folder every run ``plan.runs_from`` lends (see :func:`reused_files`)."""
    for system, _ in plan.systems():
        for run in range(1, plan.runs + 1):
            files = reused_files(plan, system, run)
            for here, there in files:
                check_write(here)
                os.symlink(os.path.relpath(there, os.path.dirname(here)), here)
            if files:
                log(f"{system} run {run}/{plan.runs}: taken from {files[-1][1]} "
                    f"({', '.join(sorted(os.path.basename(here) for here, _ in files))})")


def _lendable_plan(folder: str | None) -> dict | None:
    """The plan saved in ``folder`` when it is one a run can be lent from (None: no folder, no plan, or a damaged
    one: :mod:`.checks` says which before anything runs)."""
    try:
        saved = saved_plan(folder) if folder is not None else None
    except ValueError:
        return None
    return saved if saved is not None and isinstance(saved.get("files"), dict) else None


def tuned_by(saved: dict, ini: str) -> str | None:
    """The name of the system of the saved plan ``saved`` that tuned ``ini`` (the same path), or None. Whether its
    runs were made with the same content is :mod:`.made_with`'s to say, before any work."""
    files = saved["files"]
    tuned = {BASELINE: files.get("baseline"), SYSTEM: files.get("ini"), **(saved.get("others") or {})}
    path = file_record(ini)[0]
    return next((name for name, record in tuned.items() if isinstance(record, list) and record[:1] == [path]), None)


def _has_word_alignments(nbest: str) -> bool:
    """Whether the n-best list's first hypothesis has its segmentation and word alignment (Moses'
    ``-include-segmentation-in-n-best -print-alignment-info-in-n-best``: two fields after the total)."""
    with read_nbest(nbest) as entries:
        first = next(iter(entries), None)
    return first is not None and len(first.fields) >= 6
