"""A finished tuning's report, published where it is committed (``mosesrnn mert-report WORK --publish
docs/results/NAME``): every BLEU figure of README and docs comes from such a folder.

The folder holds ``report.json`` and ``plan.json`` with every absolute path written relative to the folder the
tuning's commands ran in (so that no machine's paths are committed, and the report reads back, its translations
found, from that folder), ``report.md`` rendered from that ``report.json``, and ``COMMANDS.md`` (or ``commands.sh``),
written by hand: the exact commands, run from that folder. ``tests/test_docs.py`` checks every table that names such a
folder against its report.
"""
from __future__ import annotations

import json
import os

from mosesrnn.errors import MosesRNNError
from mosesrnn.io.compressed import atomic_output

from .plan import PLAN, saved_plan
from .report_file import REPORT_JSON, REPORT_MD, RouteReport, markdown, read_report, write_report

__all__ = ["COMMANDS", "publish_report", "relative_paths"]

#: The file of a published folder that holds the exact commands (one of them).
COMMANDS = ("COMMANDS.md", "commands.sh")
#: What marks a published choice among tunings (``benchmarks/choose_on_dev.py --publish``), never a report's folder.
CHOICE = "choice.json"


def publish_report(work_dir: str, destination: str, base: str, force: bool = False) -> list[str]:
    """Write the report of the finished tuning in ``work_dir`` into ``destination``: ``report.json`` and
    ``plan.json`` with their absolute paths relative to ``base`` (:func:`relative_paths`), ``report.md`` rendered from
    them; the translations the report names, relative to ``base`` too. Returns the files written; raises MosesRNNError
    naming the file for a tuning without its report or plan, for a ``destination`` that is a tuning's working folder,
    and, unless ``force``, for one that holds a publication already (``force`` replaces it, and removes its
    commands file, which named the commands of the report replaced)."""
    report = read_report(os.path.join(work_dir, REPORT_JSON))
    plan = saved_plan(work_dir)
    if plan is None:
        raise MosesRNNError(f"{os.path.join(work_dir, PLAN)}: missing (the plan `mosesrnn tune` writes beside its "
                            "report)")
    earlier = _publication_in(destination)
    if earlier and not force:
        raise MosesRNNError(f"{destination} holds a publication already ({', '.join(earlier)}): give --force to "
                            f"replace it (its {' and '.join(COMMANDS)} removed, to be written again), or publish "
                            "elsewhere")
    published = RouteReport(report.sacrebleu, relative_paths(report.dev, base), relative_paths(report.test, base),
                            report.runs, report.stages, relative_paths(report.signatures, base), report.selection)
    written = [os.path.join(destination, name) for name in (REPORT_JSON, PLAN, REPORT_MD)]
    write_report(written[0], published, relative_to=base)
    with atomic_output(written[1]) as stream:
        stream.write((json.dumps(relative_paths(plan, base), indent=1) + "\n").encode("utf-8"))
    with atomic_output(written[2]) as stream:
        stream.write(markdown(published).encode("utf-8"))
    for name in set(earlier) & set(COMMANDS):  # the commands of the report replaced, once it is
        os.remove(os.path.join(destination, name))
    return written


def _publication_in(destination: str) -> list[str]:
    """The files of a publication already in ``destination`` (none: nothing to replace); raises MosesRNNError when it is
    a tuning's working folder, whose report and plan the tuning itself reads (its plan names files by absolute
    paths, which a publication never does) or a published choice among tunings."""
    if not os.path.isdir(destination):
        return []
    try:
        plan = saved_plan(destination)
    except ValueError:
        plan = None  # damaged: a publication replaces it (with --force)
    files = plan.get("files") if isinstance(plan, dict) else None
    if isinstance(files, dict) and any(isinstance(record, list) and record and isinstance(record[0], str)
                                       and os.path.isabs(record[0]) for record in files.values()):
        raise MosesRNNError(f"--publish {destination} is the working folder of a `mosesrnn tune` (its {PLAN} names "
                            f"its files by absolute paths): publishing there would overwrite its report and plan; "
                            f"publish into a folder of its own, docs/results/NAME")
    if os.path.exists(os.path.join(destination, CHOICE)):
        raise MosesRNNError(f"--publish {destination} holds a choice among tunings ({CHOICE}, "
                            f"benchmarks/choose_on_dev.py): a report is a folder of its own")
    return sorted(name for name in (REPORT_JSON, PLAN, REPORT_MD, *COMMANDS)
                  if os.path.exists(os.path.join(destination, name)))


def relative_paths(value, base: str):
    """``value`` (JSON: dicts, lists, strings...) with every string that is an absolute path, keys included,
    written relative to ``base``."""
    if isinstance(value, dict):
        return {relative_paths(key, base): relative_paths(item, base) for key, item in value.items()}
    if isinstance(value, list):
        return [relative_paths(item, base) for item in value]
    if isinstance(value, str) and os.path.isabs(value):
        return os.path.relpath(value, base)
    return value

