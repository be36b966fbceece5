"""One stage chosen on the held-out dev half among the stages of several tunings; then, and only then, test.

Each `mosesrnn tune --select-on half` report measures its stages on the dev sentences its rescoring MERT never saw
(the even lines). A ladder is several tunings (two rescoring configurations each); this ranks all their stages in one
table by that held-out dev BLEU, dev figures alone, and names the first: the choice. Single translations (e.g. a
neural system translating alone: ``--single NAME DEV TEST``, its translations of the whole dev and test sets, and
``--single-chosen-on`` where its settings were chosen) join the ranking on the same held-out lines. Only the stages
of tunings whose every MERT tuned on the odd lines (the report's ``selection["moses_tuned_on"]``: ``tuning half``) and
the singles chosen on the odd lines or on nothing are ranked; one that saw the held-out half is refused, or with
``--allow-in-sample`` listed below the ranking, not ranked. Then, in a section of its own, read after the choice: the
chosen stage's test BLEU, compared (paired approximate randomisation between the median runs, and the run pairs
agreeing) with the baseline, its own control, the runner-up on dev and each single.

    python benchmarks/choose_on_dev.py tune-A tune-B --single nmt nmt/dev.beam10 nmt/test.beam10 \
        --single-chosen-on odd > choice.md

Run on published reports (``docs/results/NAME/report.json``, their translations beside them), ``--publish DIR``
commits the choice (:mod:`moses_integration.route.choice`): ``choice.json`` (the tunings' folder names, the ranking,
the choice, the comparisons read after it, each single with its translations gzipped under ``hyp/``) and
``choice.md``, rendered from it: this output. ``tests/test_docs.py`` recomputes them, and checks every table and
paragraph copied from them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from dataclasses import dataclass

from moses_integration.route.choice import FORMAT, SINGLE_CHOSEN_ON, VERSION, choice_markdown, in_sample
from moses_integration.route.plan import dev_halves
from moses_integration.route.published import CHOICE, COMMANDS, HYPOTHESES, Copies
from moses_integration.route.report_file import REPORT_JSON, RouteReport, StageResult, read_report, stage_cells
from mosesrnn.errors import MosesRNNError
from mosesrnn.formats.text_file import read_lines
from mosesrnn.io.atomic import describe_os_error
from mosesrnn.io.compressed import atomic_output, read_bytes
from mosesrnn.tuning.bleu import file_bleu
from mosesrnn.tuning.significance import compare_runs

CHOICE_JSON, CHOICE_MD = CHOICE, "choice.md"
CHOSEN_ON_WORDS = {"odd": "the odd dev lines", "none": "nothing", "whole": "the whole dev set"}


@dataclass
class Row:
    """One candidate of the ranking: a tuning's stage (``report``, ``stage``) or a single translation (``single``),
    its mean BLEU on the held-out dev half, and why it is not ranked (None: it is)."""

    label: str
    about: str
    dev_mean: float
    dev_cell: str
    why: str | None = None
    report: RouteReport | None = None
    stage: StageResult | None = None
    single: dict | None = None

    def record(self) -> dict:
        """The row as ``choice.json`` writes it."""
        return {"label": self.label, "about": self.about, "dev-half BLEU": self.dev_cell,
                **({"why": self.why} if self.why else {})}


def single_cell(bleu: float) -> str:
    """A single translation's BLEU as a report writes one run's mean."""
    return f"{bleu:.2f} (1 run)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tunings", nargs="+", help="tune --work-dir folders (or their report.json)")
    parser.add_argument("--single", nargs=3, action="append", default=[], metavar=("NAME", "DEV_HYP", "TEST_HYP"),
                        help="a single translation of the whole dev and test sets, ranked on the same dev half")
    parser.add_argument("--single-chosen-on", action="append", default=[], choices=sorted(SINGLE_CHOSEN_ON),
                        help="once per --single, in their order: where its settings (beam...) were chosen: on the "
                             "odd dev lines, on nothing, or on the whole dev set (then it is not ranked)")
    parser.add_argument("--allow-in-sample", action="store_true",
                        help="list the stages tuned on the whole dev set, and the singles chosen there, below the "
                             "ranking (not ranked), instead of refusing them")
    parser.add_argument("--publish", metavar="DIR", help="also write choice.md, choice.json and the singles' "
                                                          "translations into DIR (docs/results/NAME)")
    parser.add_argument("--force", action="store_true",
                        help="with --publish: replace the choice DIR holds (its COMMANDS.md removed, to be written "
                             "again)")
    args = parser.parse_args()
    if args.force and not args.publish:
        parser.error("--force goes with --publish")
    if len(args.single_chosen_on) != len(args.single):
        parser.error(f"{len(args.single)} --single and {len(args.single_chosen_on)} --single-chosen-on: each "
                     f"single says where its settings were chosen (odd, none or whole)")
    try:
        run(args)
    except (ValueError, OSError) as error:  # a user's mistake: one line, as the commands say it
        print(f"{parser.prog}: error: {describe_os_error(error) if isinstance(error, OSError) else error}",
              file=sys.stderr)
        sys.exit(2)


def run(args) -> None:
    """Check everything first (the publishing folder, the reports, their sets, the singles), then print the choice
    and publish it; raises MosesRNNError or OSError naming the file for a mistake, before anything is written."""
    if args.publish:
        check_publish_folder(args.publish, args.force)
    reports = read_reports(args.tunings, args.allow_in_sample)
    first = next(iter(reports.values()))
    singles = [{"name": name, "dev_path": dev, "test_path": test, "chosen_on": where}
               for (name, dev, test), where in zip(args.single, args.single_chosen_on)]
    check_singles(singles, first)
    rows = candidates(reports, singles, args.allow_in_sample)
    record = choose(reports, rows)
    print(choice_markdown(record), end="")
    if args.publish:
        publish(args.publish, record, singles)


def _report_path(tuning: str) -> str:
    return tuning if tuning.endswith(".json") else os.path.join(tuning, REPORT_JSON)


def read_reports(tunings: list[str], allow_in_sample: bool) -> dict[str, RouteReport]:
    """The report of each tuning by its folder's name; raises MosesRNNError for one without a selection, one whose
    Moses MERT read the held-out half (without ``allow_in_sample``: checked before its sets are read), two of one
    name, or tunings of other dev or test sets (their held-out BLEUs rank nothing together)."""
    reports, sets = {}, {}
    for tuning in tunings:
        path = _report_path(tuning)
        report = read_report(path)
        if report.selection is None:
            raise MosesRNNError(f"{path}: not a tuning with --select-on: its stages have no held-out dev BLEU")
        if missing := [stage.name for stage in report.stages if not stage.dev_bleu]:
            raise MosesRNNError(f"{path}: a damaged report: {', '.join(missing)} without held-out dev BLEU")
        name = os.path.basename(os.path.dirname(os.path.abspath(path)))
        if (why := in_sample(report)) and not allow_in_sample:
            raise MosesRNNError(f"{name}: {why} (Moses' MERT; its report's selection has no moses_tuned_on \"tuning "
                                f"half\"), so every stage's held-out dev BLEU is in-sample: give --allow-in-sample to "
                                f"list its stages below the ranking, not ranked")
        if name in reports:
            raise MosesRNNError(f"{path}: a second tuning named {name} (each is named by its folder)")
        reports[name] = report
        sets[name] = {part: (reference := getattr(report, part)["reference"], read_lines(reference))
                      for part in ("dev", "test")}
    first = next(iter(reports))
    for name in reports:
        for part in ("dev", "test"):
            (here, lines), (there, first_lines) = sets[name][part], sets[first][part]
            if lines != first_lines:
                raise MosesRNNError(f"{name} and {first} were tuned on other {part} sets ({here}, {there}): their "
                                    f"BLEUs rank nothing together")
    return reports


def check_singles(singles: list[dict], report: RouteReport) -> None:
    """Raise MosesRNNError for a single translation of another number of lines than the report's dev or test set."""
    for single in singles:
        for part in ("dev", "test"):
            path = single[part + "_path"]
            lines, wanted = len(read_lines(path)), getattr(report, part)["sentences"]
            if lines != wanted:
                raise MosesRNNError(f"--single {single['name']}: {path} has {lines} lines, but the {part} set has "
                                    f"{wanted}")


def check_publish_folder(folder: str, force: bool) -> None:
    """Raise MosesRNNError for a folder the choice cannot be published into: a file on its way, one not writable, a
    tuning's folder, or (without ``force``) one holding a choice already."""
    existing = os.path.abspath(folder)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise MosesRNNError(f"--publish {folder}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise MosesRNNError(f"--publish {folder}: {existing} is not writable")
    if os.path.exists(os.path.join(folder, REPORT_JSON)):
        raise MosesRNNError(f"--publish {folder} holds a tuning's report ({REPORT_JSON}): a choice is a folder of its "
                            f"own")
    earlier = [name for name in (CHOICE_MD, CHOICE_JSON) if os.path.exists(os.path.join(folder, name))]
    if earlier and not force:
        raise MosesRNNError(f"--publish {folder} holds a choice already ({', '.join(earlier)}): give --force to "
                            f"replace it, or publish elsewhere")


def candidates(reports: dict[str, RouteReport], singles: list[dict], allow_in_sample: bool) -> list[Row]:
    """Every stage and single with its held-out dev BLEU (read from dev alone), and why it is not ranked; raises
    MosesRNNError for a single chosen in-sample without ``allow_in_sample`` (an in-sample tuning is refused by
    :func:`read_reports`)."""
    rows = []
    for name, report in reports.items():
        rows += [Row(f"{name}: {stage.name}", stage.about, statistics.mean(stage.dev_bleu), stage_cells(stage)["dev"],
                     in_sample(report), report, stage) for stage in report.stages]
    first = next(iter(reports.values()))
    held_out = dev_halves(first.dev["sentences"])[1]
    for single in singles:
        why = SINGLE_CHOSEN_ON[single["chosen_on"]]
        if why and not allow_in_sample:
            raise MosesRNNError(f"--single {single['name']}: {why}, held-out half included: give --allow-in-sample to "
                                f"list it below the ranking, not ranked")
        dev = file_bleu(single["dev_path"], first.dev["reference"], "none", held_out)[0]
        single["dev-half BLEU"] = single_cell(dev)
        rows.append(Row(f"{single['name']} (single)", f"a single translation, its settings chosen on "
                                                      f"{CHOSEN_ON_WORDS[single['chosen_on']]}",
                        dev, single["dev-half BLEU"], why, single=single))
    if not [row for row in rows if row.why is None]:
        raise MosesRNNError("nothing to rank: every stage and single saw the held-out dev half")
    return rows


def choose(reports: dict[str, RouteReport], rows: list[Row]) -> dict:
    """The choice's record (:mod:`moses_integration.route.choice`): the ranking on dev, the chosen row; then test,
    read for the chosen stage and the comparisons it names."""
    ranked = sorted((row for row in rows if row.why is None), key=lambda row: -row.dev_mean)
    chosen = ranked[0]
    record = {"format": FORMAT, "version": VERSION, "tunings": list(reports),
              "held_out": len(dev_halves(next(iter(reports.values())).dev["sentences"])[1]),
              "ranking": [row.record() for row in ranked], "chosen": chosen.label,
              "not_ranked": [row.record() for row in rows if row.why is not None]}
    # -- the choice is made: test is read from here on --
    test_reference = next(iter(reports.values())).test["reference"]
    references = read_lines(test_reference)
    for row in rows:
        if row.single is not None:
            row.single["test_bleu"] = file_bleu(row.single["test_path"], test_reference, "none")[0]
            row.single["test BLEU"] = single_cell(row.single["test_bleu"])
    compared = [("the baseline", _stage_row(chosen, "baseline", rows)),
                ("its control", _stage_row(chosen, chosen.stage.control if chosen.stage else None, rows)),
                ("the runner-up on dev", ranked[1] if len(ranked) > 1 else None)]
    compared += [(row.label, row) for row in rows if row.single is not None]
    comparisons, seen = [], {chosen.label}
    for against, other in compared:
        if other is None or other.label in seen:
            continue
        seen.add(other.label)
        comparison = compare_runs(*_test_runs(chosen), *_test_runs(other), references, "none")
        comparisons.append({"against": against, "label": other.label, "test BLEU": _test_cell(other),
                            "delta": comparison.delta, "p_value": comparison.p_value,
                            "pairs_agreeing": comparison.pairs_agreeing, "pairs": comparison.pairs})
    record["after_choice"] = {"test BLEU": _test_cell(chosen), "comparisons": comparisons}
    return record


def _stage_row(chosen: Row, name: str | None, rows: list[Row]) -> Row | None:
    """The row of stage ``name`` of the chosen stage's tuning (None: no such stage, or the chosen is a single)."""
    if chosen.stage is None or name is None:
        return None
    return next((row for row in rows if row.report is chosen.report and row.stage.name == name), None)


def _test_runs(row: Row) -> tuple[list[list[str]], list[float]]:
    """The translations of the test set of each run of ``row``, and their BLEU."""
    if row.stage is not None:
        return [read_lines(path) for path in row.stage.hypotheses], list(row.stage.bleu)
    return [read_lines(row.single["test_path"])], [row.single["test_bleu"]]


def _test_cell(row: Row) -> str:
    return stage_cells(row.stage)["test"] if row.stage is not None else row.single["test BLEU"]


def publish(folder: str, record: dict, singles: list[dict]) -> None:
    """Write the choice into ``folder``: ``choice.json`` (``record``, each single with its translations copied
    gzipped under ``hyp/``) and ``choice.md`` rendered from it; an earlier choice's commands file and translations are
    removed (the commands to be written again)."""
    os.makedirs(folder, exist_ok=True)
    texts = {single["name"]: {part: read_bytes(single[part + "_path"]) for part in ("dev", "test")}
             for single in singles}  # read first: a translation may be given from the folder itself
    shutil.rmtree(os.path.join(folder, HYPOTHESES), ignore_errors=True)
    copies = Copies(folder)
    record["singles"] = {}
    for single in singles:
        entry = {key: single[key] for key in ("name", "chosen_on", "dev-half BLEU", "test BLEU")}
        for part in ("dev", "test"):
            entry[part] = copies.add_bytes(texts[single["name"]][part], f"{HYPOTHESES}/{single['name']}.{part}")
        record["singles"][single["name"]] = entry
    with atomic_output(os.path.join(folder, CHOICE_JSON)) as stream:
        stream.write((json.dumps(record, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
    with atomic_output(os.path.join(folder, CHOICE_MD)) as stream:
        stream.write(choice_markdown(record).encode("utf-8"))
    for name in COMMANDS:  # the commands of the choice replaced, once it is
        if os.path.exists(os.path.join(folder, name)):
            os.remove(os.path.join(folder, name))
    print(f"wrote {folder}/{CHOICE_MD}, {CHOICE_JSON} and the singles' translations; now its COMMANDS.md",
          file=sys.stderr)


if __name__ == "__main__":
    main()
