"""A finished tuning's report, published where it is committed (``mosesrnn mert-report WORK --publish
docs/results/NAME``): every BLEU figure of README and docs comes from such a folder.

The folder holds ``report.json`` and ``plan.json`` (``plan.json`` with every absolute path written relative to the
folder the tuning's commands ran in, so that no machine's paths are committed), ``report.md`` rendered from that
``report.json``, and ``COMMANDS.md`` (or ``commands.sh``), written by hand: the exact commands, run from that folder.
Beside them, gzipped, every run's translations and the references they are scored against, which ``report.json``
names relative to the folder itself, so that a fresh clone recomputes every figure::

    hyp/STAGE.runK.test.gz    each stage's translation of the test set by run K (one file for identical runs)
    hyp/STAGE.runK.dev.gz     with a selection (``tune --select-on``), its translation of the whole dev set
    ref/test.gz, ref/dev.gz   the references

``tests/test_docs.py`` recomputes the report from them and checks every table that names such a folder against it.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
from dataclasses import replace

from mosesrnn.errors import MosesRNNError
from mosesrnn.io.atomic import atomic_file
from mosesrnn.io.compressed import atomic_output, read_bytes
from mosesrnn.io.declared import declare_input

from .plan import PLAN, saved_plan
from .report_file import REPORT_JSON, REPORT_MD, RouteReport, StageResult, markdown, read_report, write_report

__all__ = ["COMMANDS", "CHOICE", "HYPOTHESES", "REFERENCES", "publish_report", "relative_paths", "Copies"]

#: The file of a published folder that holds the exact commands (one of them).
COMMANDS = ("COMMANDS.md", "commands.sh")
#: What marks a published choice among tunings (``benchmarks/choose_on_dev.py --publish``), never a report's folder.
CHOICE = "choice.json"
#: The folders of a publication that hold the translations and the references, gzipped.
HYPOTHESES, REFERENCES = "hyp", "ref"


class Copies:
    """Text files copied gzipped into a publication's ``folder`` (reproducible bytes: level 9, no time, no name),
    each content once: a second file of the same text is the first copy."""

    def __init__(self, folder: str):
        self.folder = folder
        self._by_content: dict[str, str] = {}

    def add(self, source: str, name: str) -> str:
        """Copy ``source`` (plain or gzipped) to ``folder/name.gz``, unless a file of the same text was copied
        already; returns the copy's path relative to ``folder``."""
        declare_input(source)  # a file the report names
        return self.add_bytes(read_bytes(source), name)

    def add_bytes(self, data: bytes, name: str) -> str:
        """Copy the text ``data`` to ``folder/name.gz`` as :meth:`add` copies a file."""
        digest = hashlib.sha256(data).hexdigest()
        if digest not in self._by_content:
            target = os.path.join(self.folder, name + ".gz")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with atomic_file(target) as stream:
                stream.write(gzip.compress(data, compresslevel=9, mtime=0))
            self._by_content[digest] = os.path.relpath(target, self.folder)
        return self._by_content[digest]

    def copied(self) -> list[str]:
        """The copies written, relative to ``folder``."""
        return list(self._by_content.values())


def publish_report(work_dir: str, destination: str, base: str, force: bool = False) -> list[str]:
    """Write the report of the finished tuning in ``work_dir`` into ``destination``: ``report.json``, ``plan.json``
    with its absolute paths relative to ``base`` (:func:`relative_paths`), ``report.md`` rendered from them, and
    every translation and reference the report names, gzipped under ``hyp/`` and ``ref/`` (the module docstring),
    which ``report.json`` names relative to ``destination``. Returns the files written; raises MosesRNNError
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
    for name in (HYPOTHESES, REFERENCES):  # the translations of the report replaced, if any
        shutil.rmtree(os.path.join(destination, name), ignore_errors=True)
    copies = Copies(destination)
    published = RouteReport(report.sacrebleu, *(
        {**relative_paths(part, base), "reference": copies.add(part["reference"], f"{REFERENCES}/{name}")}
        for name, part in (("dev", report.dev), ("test", report.test))), report.runs,
        tuple(_copied(stage, copies) for stage in report.stages), relative_paths(report.signatures, base),
        report.selection)
    written = [os.path.join(destination, name) for name in (REPORT_JSON, PLAN, REPORT_MD)]
    write_report(written[0], published)
    with atomic_output(written[1]) as stream:
        stream.write((json.dumps(relative_paths(plan, base), indent=1) + "\n").encode("utf-8"))
    with atomic_output(written[2]) as stream:
        stream.write(markdown(published).encode("utf-8"))
    for name in set(earlier) & set(COMMANDS):  # the commands of the report replaced, once it is
        os.remove(os.path.join(destination, name))
    return written + sorted(os.path.join(destination, path) for path in set(copies.copied()))


def _copied(stage: StageResult, copies: Copies) -> StageResult:
    """``stage`` with its translations copied (:class:`Copies`), named by their absolute paths there."""
    def copy(paths: tuple[str, ...], part: str) -> tuple[str, ...]:
        return tuple(os.path.join(copies.folder, copies.add(path, f"{HYPOTHESES}/{stage.name}.run{k}.{part}"))
                     for k, path in enumerate(paths, start=1))
    return replace(stage, hypotheses=copy(stage.hypotheses, "test"), dev_hypotheses=copy(stage.dev_hypotheses, "dev"))


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

