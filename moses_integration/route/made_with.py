"""What each Moses MERT run was made with, by content, so that a run is continued or lent (``--runs-from``) only
while everything it depends on is what it was.

When mert-moses.pl first starts a run, ``made-with.json`` in the run's folder records the sha256 of the content of
everything its numbers depend on: the moses.ini tuned and every file it names (phrase tables, language models,
NPLM files and their vocabularies: :func:`~moses_integration.ini_paths.file_paths`), the decoder and the shared
libraries it loads from outside the system's library folders (a self-built ``libnplm.so``; one linked statically is
in the decoder's own bytes), mert-moses.pl and the programs of the mertdir it runs
(:func:`~moses_integration.mert_moses.mertdir_programs_run`), the dev and test sets, and with ``--select-on half``
the dev lines MERT tuned on (so a run tuned on the whole dev set is never lent to a selecting tuning, nor the
reverse)::

    {"format": "mosesrnn-run-made-with", "version": 2,
     "files": [{"what": "the moses.ini", "key": "/abs/moses.ini", "path": "/abs/moses.ini", "sha256": "9f2c..."},
               {"what": "the decoder", "key": "decoder", "path": "/opt/moses/bin/moses", "sha256": "..."}, ...]}

Files are compared by ``key``: their path, but the decoder, mert-moses.pl and each MERT program by their role and a
library by its file name, so that the same build in another folder serves. Before any work, every run of the tuning
that exists or is to be lent is checked against its record (:func:`made_with_problems`), and a run is checked again
when its Moses stages end (:func:`check_still_made_with`); a difference is one line naming each file that changed. A
run of this folder started before mosesrnn kept these records has none and continues as before; such a run is never
lent. A record of version 1 holds neither mert-moses.pl nor the MERT programs: it is compared without them (all it
can tell), so its run continues and is lent as before, with a warning (:func:`made_with_warnings`); it is never
rewritten, since today's programs may not be those that made the run.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from typing import Iterator

from mosesrnn.errors import MosesRNNError
from mosesrnn.formats.moses_ini import parse_ini, read_ini_text
from mosesrnn.io.atomic import atomic_file
from mosesrnn.io.declared import declare_input
from mosesrnn.io.digests import content_sha256
from mosesrnn.io.json_file import read_json

from ..ini_paths import file_paths
from ..mert_moses import MosesTools, mertdir_programs_run
from .plan import RoutePlan, stage_files, tuning_half
from .reuse import reused_files

__all__ = ["MADE_WITH", "made_with", "write_made_with", "read_made_with", "changed_files", "made_with_problems",
           "made_with_warnings", "check_still_made_with"]

MADE_WITH = "made-with.json"
FORMAT, VERSION = "mosesrnn-run-made-with", 2
#: What version 2 added to the record (``what`` of its entries): a record of version 1 is compared without them.
TUNER, MERT_PROGRAM = "the tuning script", "the MERT program"
#: The system's library folders: a library the decoder loads from elsewhere was built here, and is recorded.
SYSTEM_LIBRARIES = ("/lib/", "/lib32/", "/lib64/", "/usr/lib/", "/usr/lib32/", "/usr/lib64/")
#: What Moses opens for a path= that is not a file: a compact phrase or reordering table, a gzipped one.
_SUFFIXES = (".gz", ".minphr", ".minlexr")


def made_with(plan: RoutePlan, tools: MosesTools, ini: str) -> list[dict]:
    """What a run tuning ``ini`` with ``tools`` on the plan's sets is made with, now: one entry per file
    (``what``, ``key``, ``path``, ``sha256``; ``sha256`` None for a file that is not there)."""
    entries = [_entry("the moses.ini", ini)]
    for path in _named_files(ini):
        entries.append(_entry("the file the moses.ini names", path))
    if os.path.isfile(tools.moses):
        entries.append(_entry("the decoder", tools.moses, key="decoder"))
        entries += [_entry("the library the decoder loads", path, key=os.path.basename(path))
                    for path in _built_libraries(tools.moses)]
    if os.path.isfile(tools.mert_moses):
        entries.append(_entry(TUNER, tools.mert_moses, key="mert-moses.pl"))
    entries += [_entry(MERT_PROGRAM, os.path.join(tools.mertdir, name), key=f"mertdir {name}")
                for name in mertdir_programs_run(plan.mert) if os.path.isfile(os.path.join(tools.mertdir, name))]
    for what, path in (("the dev source", plan.dev_src), ("the dev reference", plan.dev_ref),
                       ("the test source", plan.test_src)):
        entries.append(_entry(what, path))
    # by role, not path: another selecting tuning's runs tuned on the same lines; by the content they are made of, as
    # the pre-flight checks run before the route writes them
    for (path, content), (what, key) in zip(tuning_half(plan), (
            ("the dev source's tuning half (odd lines), which Moses' MERT tunes on", "dev source tuning half"),
            ("the dev reference's tuning half", "dev reference tuning half"))):
        entries.append({"what": what, "key": key, "path": os.path.abspath(path),
                        "sha256": hashlib.sha256(content).hexdigest()})
    return entries


def write_made_with(folder: str, entries: list[dict]) -> None:
    """Record ``entries`` (:func:`made_with`) as ``folder/made-with.json``, making the folder, whole or not at all."""
    os.makedirs(folder, exist_ok=True)
    record = {"format": FORMAT, "version": VERSION, "files": entries}
    with atomic_file(os.path.join(folder, MADE_WITH)) as stream:
        stream.write((json.dumps(record, indent=1) + "\n").encode("utf-8"))


def read_made_with(folder: str) -> tuple[int, list[dict]] | None:
    """The version and the entries recorded in ``folder/made-with.json`` (None: no record there); raises
    MosesRNNError naming the file for one that is damaged, not such a record, or of a newer version."""
    path = os.path.join(folder, MADE_WITH)
    if not os.path.isfile(path):
        return None
    record = read_json(path, "the record of what a MERT run was made with")
    files = record.get("files") if isinstance(record, dict) and record.get("format") == FORMAT else None
    if not (isinstance(files, list) and all(isinstance(entry, dict) and {"what", "key", "path", "sha256"} <= set(entry)
                                            for entry in files)):
        raise MosesRNNError(f"{path}: not the record of what a MERT run was made with (damaged, or another program's)")
    version = record.get("version")
    if version not in range(1, VERSION + 1):
        raise MosesRNNError(f"{path}: a record of version {version!r}, which this mosesrnn cannot read (it reads "
                            f"1 to {VERSION}): a newer mosesrnn's?")
    return version, files


def _as_recorded(current: list[dict], version: int) -> list[dict]:
    """``current`` (:func:`made_with`) as a record of ``version`` holds it: version 1 recorded neither mert-moses.pl
    nor the MERT programs."""
    return current if version >= 2 else [entry for entry in current if entry["what"] not in (TUNER, MERT_PROGRAM)]


def changed_files(recorded: list[dict], current: list[dict]) -> list[str]:
    """Each file whose content differs between ``recorded`` and ``current`` (or that is in one of them alone), as
    ``what path``, with ``(missing now)`` or ``(new)`` where it is so."""
    before = {entry["key"]: entry for entry in recorded}
    now = {entry["key"]: entry for entry in current}
    changed = []
    for key in [*before, *(key for key in now if key not in before)]:
        old, new = before.get(key), now.get(key)
        if old is not None and new is not None and old["sha256"] == new["sha256"]:
            continue
        entry = new or old
        note = " (new)" if old is None else " (missing now)" if new is None or new["sha256"] is None else ""
        changed.append(f"{entry['what']} {entry['path']}{note}")
    return changed


def made_with_problems(plan: RoutePlan, tools: MosesTools) -> list[str]:
    """For the runs of the plan that are here (their folders exist) or that ``plan.runs_from`` would lend: what
    changed since they were made, one line for the runs that share a change; runs to be lent without a record are
    refused too."""
    problems, current = [], {}
    changes: dict[tuple, list[str]] = {}  # (lent, what changed) -> the runs' folders
    for ini, folder, lent in _runs(plan):
        try:
            recorded = read_made_with(folder)
        except ValueError as error:
            problems.append(str(error))
            continue
        if recorded is None:
            if lent:
                changes.setdefault((True, None), []).append(folder)
            continue
        if ini not in current:
            current[ini] = made_with(plan, tools, ini)
        if changed := changed_files(recorded[1], _as_recorded(current[ini], recorded[0])):
            changes.setdefault((lent, tuple(changed)), []).append(folder)
    for (lent, changed), folders in changes.items():
        runs = ", ".join(os.path.basename(folder) for folder in folders)
        if changed is None:
            problems.append(f"--runs-from {plan.runs_from}: no {MADE_WITH} in {runs} (made by a mosesrnn that did not "
                            f"record what a run was made with), so the moses.ini, the files it names and the decoder "
                            f"cannot be checked: tune without --runs-from")
        elif lent:
            problems.append(f"--runs-from {plan.runs_from}: {', '.join(changed)} changed since {runs} were made (each "
                            f"run's {MADE_WITH}): its runs cannot serve this tuning; tune without --runs-from")
        else:
            problems.append(f"{plan.work_dir}: {', '.join(changed)} changed since {runs} were made (each run's "
                            f"{MADE_WITH}): tune into a fresh folder, or remove those runs (RUN and RUN.*) to make "
                            f"them again")
    return problems


def made_with_warnings(plan: RoutePlan) -> list[str]:
    """One line for the runs of the plan, here or to be lent, whose record is of version 1: they continue and are
    lent, but whether mert-moses.pl and the MERT programs changed since they were made cannot be checked."""
    old = []
    for _, folder, _ in _runs(plan):
        try:
            recorded = read_made_with(folder)
        except ValueError:
            continue  # refused by made_with_problems
        if recorded is not None and recorded[0] < 2:
            old.append(folder)
    if not old:
        return []
    return [f"{', '.join(old)}: their {MADE_WITH} (version 1) recorded neither mert-moses.pl nor the MERT programs, so "
            f"whether these changed since the runs were made cannot be checked"]


def _runs(plan: RoutePlan) -> Iterator[tuple[str, str, bool]]:
    """``(moses.ini, folder, lent)`` of each run of the plan whose folder is here, or that ``plan.runs_from`` would
    lend (``lent``: its folder there)."""
    for system, ini in plan.systems():
        for run in range(1, plan.runs + 1):
            here = stage_files(plan, system, run).mert_dir
            lent = not os.path.lexists(here)
            folder = dict(reused_files(plan, system, run)).get(here) if lent else here
            if folder is not None:
                yield ini, folder, lent


def check_still_made_with(plan: RoutePlan, tools: MosesTools, ini: str, folder: str) -> None:
    """Raise MosesRNNError naming what changed if the run in ``folder`` (tuning ``ini``) is no longer made with what
    its record says (a file rewritten, a decoder rebuilt while it ran); nothing for a run without a record."""
    recorded = read_made_with(folder)
    if recorded is not None and (changed := changed_files(recorded[1], _as_recorded(made_with(plan, tools, ini),
                                                                                     recorded[0]))):
        raise MosesRNNError(f"{folder}: {', '.join(changed)} changed while the run was made "
                            f"({os.path.join(folder, MADE_WITH)}): remove {folder} and {folder}.*, and run the command "
                            f"again to make the run again")


def _entry(what: str, path: str, key: str | None = None) -> dict:
    """One file's entry: its sha256, or None when it is not there. A folder (an OnDisk table) is hashed file by
    file, in order of their paths inside it."""
    path = os.path.abspath(path)
    return {"what": what, "key": key or path, "path": path, "sha256": _sha256(path)}


def _sha256(path: str) -> str | None:
    if os.path.isdir(path):
        inside = sorted(os.path.join(root, name) for root, _, names in os.walk(path) for name in names)
        parts = "".join(f"{os.path.relpath(file, path)} {_sha256(file)}\n" for file in inside)
        return hashlib.sha256(parts.encode("utf-8")).hexdigest()
    if not os.path.isfile(path):
        return None
    declare_input(path)  # a file the declared moses.ini names, or the decoder the run calls
    return content_sha256(path)


def _named_files(ini: str) -> list[str]:
    """The files ``ini`` names, as Moses opens them: the path itself, else (a binarized or gzipped table) each of
    its forms that exists; placeholders (``${MODEL_PATH}``) left out."""
    found = []
    for named in file_paths(parse_ini(read_ini_text(ini))):
        if "$" in named.path:
            continue
        forms = [named.path + suffix for suffix in _SUFFIXES if os.path.exists(named.path + suffix)]
        found += forms if not os.path.exists(named.path) and forms else [named.path]
    return list(dict.fromkeys(found))


def _built_libraries(program: str) -> list[str]:
    """The shared libraries ``program`` loads (``ldd``) from outside the system's library folders, resolved; none
    when ``ldd`` cannot tell (a script, a static program)."""
    try:
        done = subprocess.run(["ldd", program], capture_output=True, text=True, check=False)
    except OSError:
        return []
    paths = [line.split("=>", 1)[1].split("(")[0].strip() for line in done.stdout.splitlines() if "=>" in line]
    resolved = [os.path.realpath(path) for path in paths if path.startswith("/")]
    return sorted({path for path in resolved if not path.startswith(SYSTEM_LIBRARIES)})
