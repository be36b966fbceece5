"""Another tuning's finished Moses MERT runs, reused (``tune --runs-from FOLDER``).

A Moses MERT run is most of a tuning's time (an hour a run with a joint model in the decoder), and
what it leaves — the tuned moses.ini, the test decode, the dev and test n-best lists — depends only on
the moses.ini tuned, the dev and test sets, the MERT settings and the n-best size. A tuning that shares
these with FOLDER's takes each finished run of the same moses.ini from there, as links in its own folder
(so its report names them), and runs only what is new: other rescoring features on the same lists,
runs FOLDER did not finish. Nothing is written through a link: a file that must be made again (n-best
lists without the word alignments a joint model reads) is not linked, nor the test decode made with it.
"""
from __future__ import annotations

import os
from typing import Callable

from mosesrnn.formats.nbest import read_nbest
from mosesrnn.io.declared import check_write
from mosesrnn.io.json_file import read_json

from .plan import BASELINE, PLAN, SYSTEM, RoutePlan, StageFiles, file_record, stage_files

__all__ = ["reuse_problems", "reused_files", "link_reused_runs"]

#: What a reused run must share with this tuning: the sets it was tuned and tested on, and how.
_SHARED = ("dev_src", "dev_ref", "test_src", "test_ref")


def reuse_problems(plan: RoutePlan) -> list[str]:
    """Why ``plan.runs_from`` cannot lend its runs: no plan of a tuning there, other dev or test sets, other
    MERT settings or n-best size, or none of the plan's moses.ini tuned there."""
    if plan.runs_from is None:
        return []
    path = os.path.join(plan.runs_from, PLAN)
    if not os.path.isfile(path):
        return [f"--runs-from {plan.runs_from}: no {PLAN} of a `mosesrnn tune` there"]
    saved = _saved_plan(plan.runs_from)
    if saved is None:
        return [f"--runs-from {path}: not the plan `mosesrnn tune` writes (damaged, or of another program)"]
    current = plan.record()
    differing = [name for name in _SHARED if saved["files"].get(name) != current["files"][name]]
    differing += ["nbest_size"] if saved.get("nbest_size") != current["nbest_size"] else []
    differing += [f"mert {name}" for name, value in current["mert"].items()
                  if name != "threads" and (saved.get("mert") or {}).get(name) != value]
    if differing:
        return [f"--runs-from {plan.runs_from} tuned with other {', '.join(differing)}: its runs cannot serve "
                f"this tuning"]
    if not any(_lender(saved, ini) for _, ini in plan.systems()):
        return [f"--runs-from {plan.runs_from} tuned none of {', '.join(ini for _, ini in plan.systems())} (the "
                f"same file, of the same size)"]
    return []


def reused_files(plan: RoutePlan, system: str, run: int) -> list[tuple[str, str]]:
    """``(here, there)``: the files of run ``run`` of ``system`` that ``plan.runs_from`` lends (none when it did
    not finish that run of the same moses.ini, or when the run is here already)."""
    if plan.runs_from is None or (saved := _saved_plan(plan.runs_from)) is None:
        return []
    lender = _lender(saved, dict(plan.systems())[system])
    here = stage_files(plan, system, run)
    if lender is None or os.path.lexists(here.mert_dir):
        return []
    there = StageFiles(os.path.join(plan.runs_from, f"{lender}-run{run}"))
    if not os.path.isfile(there.tuned_ini):
        return []
    names = []
    if plan.retunes(system):
        lists = all(os.path.isfile(getattr(there, name)) for name in ("test_nbest", "dev_nbest"))
        if lists and (not plan.word_alignments(system) or _has_word_alignments(there.dev_nbest)):
            names += ["test_hyp", "test_nbest", "dev_hyp", "dev_nbest"]
            if saved.get("tokenize") == plan.tokenize:  # the control: the same lists through the same MERT
                names += ["retuned_weights", "retuned_hyp"]
    elif os.path.isfile(there.test_hyp):
        names.append("test_hyp")
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


def _saved_plan(folder: str) -> dict | None:
    path = os.path.join(folder, PLAN)
    try:
        saved = read_json(path, "the plan `mosesrnn tune` writes") if os.path.isfile(path) else None
    except ValueError:
        return None
    return saved if isinstance(saved, dict) and isinstance(saved.get("files"), dict) else None


def _lender(saved: dict, ini: str) -> str | None:
    """The name of the system of the saved tuning that tuned ``ini`` (the same path and size), or None."""
    files = saved["files"]
    tuned = {BASELINE: files.get("baseline"), SYSTEM: files.get("ini"), **(saved.get("others") or {})}
    return next((name for name, record in tuned.items() if record == file_record(ini)), None)


def _has_word_alignments(nbest: str) -> bool:
    """Whether the n-best list's first hypothesis has its segmentation and word alignment (Moses'
    ``-include-segmentation-in-n-best -print-alignment-info-in-n-best``: two fields after the total)."""
    with read_nbest(nbest) as entries:
        first = next(iter(entries), None)
    return first is not None and len(first.fields) >= 6
