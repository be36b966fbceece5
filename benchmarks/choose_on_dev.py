"""One stage chosen on the held-out dev half among the stages of several tunings, and what it gives on test.

Each `mosesrnn tune --select-on half` report names the best of its own stages on the dev sentences its
rescoring MERT never saw (the even lines). A ladder is several tunings (two rescoring configurations each); this
puts all their stages in one table, ranked by that held-out dev BLEU, and names the one chosen there — the only
figure the choice reads. Single translations (e.g. a neural system translating alone: ``--single NAME DEV TEST``,
its translations of the whole dev and test sets) join the ranking on the same held-out lines. Then the chosen
stage's test BLEU is compared, with the reports' test (paired approximate randomisation between the median runs,
and the run pairs agreeing), against the baseline, its own control, the runner-up (the next stage on dev) and
each single.

    python benchmarks/choose_on_dev.py tune-A tune-B --single nmt nmt/dev.beam10 nmt/test.beam10 > choice.md

Run on published reports (``docs/results/NAME/report.json``, from the folder the tunings ran in, where their
translations are), ``--publish DIR`` commits the choice: ``choice.md`` (this output), ``choice.json`` (the
tunings' folder names, each single's BLEU and its translations, copied beside it). Its table's rows are
``NAME: stage`` of those reports and ``NAME (single)``, with the reports' own cells, so that a table copied from
it is checked against them (``tests/test_docs.py``).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import sys

from moses_integration.route.plan import dev_halves
from moses_integration.route.published import CHOICE, COMMANDS
from moses_integration.route.report_file import REPORT_JSON, RouteReport, StageResult, read_report, stage_cells
from mosesrnn.formats.text_file import read_lines
from mosesrnn.io.atomic import describe_os_error
from mosesrnn.io.compressed import atomic_output
from mosesrnn.tuning.bleu import file_bleu
from mosesrnn.tuning.significance import compare_runs

CHOICE_JSON, CHOICE_MD = CHOICE, "choice.md"


def single_cell(bleu: float) -> str:
    """A single translation's BLEU as a report writes one run's mean."""
    return f"{bleu:.2f} (1 run)"


def _compare(stage: StageResult, other_hypotheses, other_bleu, report: RouteReport) -> str:
    references = read_lines(report.test["reference"])
    comparison = compare_runs([read_lines(path) for path in stage.hypotheses], stage.bleu,
                              [read_lines(path) for path in other_hypotheses], other_bleu, references, "none")
    return (f"{comparison.delta:+.2f} (p {comparison.p_value:.4f}, {comparison.pairs_agreeing} of "
            f"{comparison.pairs} run pairs at p < 0.05)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tunings", nargs="+", help="tune --work-dir folders (or their report.json)")
    parser.add_argument("--single", nargs=3, action="append", default=[], metavar=("NAME", "DEV_HYP", "TEST_HYP"),
                        help="a single translation of the whole dev and test sets, ranked on the same dev half")
    parser.add_argument("--publish", metavar="DIR", help="also write choice.md, choice.json and the singles' "
                                                          "translations into DIR (docs/results/NAME)")
    parser.add_argument("--force", action="store_true",
                        help="with --publish: replace the choice DIR holds (its COMMANDS.md removed, to be written "
                             "again)")
    args = parser.parse_args()
    if args.force and not args.publish:
        parser.error("--force goes with --publish")
    try:
        run(args)
    except (ValueError, OSError) as error:  # a user's mistake: one line, as the commands say it
        print(f"{parser.prog}: error: {describe_os_error(error) if isinstance(error, OSError) else error}",
              file=sys.stderr)
        sys.exit(2)


def run(args) -> None:
    """Check everything first (the publishing folder, the reports, their sets, the singles), then print the choice
    and publish it; raises ValueError or OSError naming the file for a mistake, before anything is written."""
    if args.publish:
        check_publish_folder(args.publish, args.force)
    reports = read_reports(args.tunings)
    check_singles(args.single, next(iter(reports.values())))
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        singles = choose(reports, args.single)
    print(output.getvalue(), end="")
    if args.publish:
        publish(args.publish, output.getvalue(), list(reports), singles)


def _report_path(tuning: str) -> str:
    return tuning if tuning.endswith(".json") else os.path.join(tuning, REPORT_JSON)


def read_reports(tunings: list[str]) -> dict[str, RouteReport]:
    """The report of each tuning by its folder's name; raises ValueError for one without a selection, two of one
    name, or tunings of other dev or test sets (their held-out BLEUs rank nothing together)."""
    reports, sets = {}, {}
    for tuning in tunings:
        path = _report_path(tuning)
        report = read_report(path)
        if report.selection is None:
            raise ValueError(f"{path}: not a tuning with --select-on: its stages have no held-out dev BLEU")
        if missing := [stage.name for stage in report.stages if not stage.dev_bleu]:
            raise ValueError(f"{path}: a damaged report: {', '.join(missing)} without held-out dev BLEU")
        name = os.path.basename(os.path.dirname(os.path.abspath(path)))
        if name in reports:
            raise ValueError(f"{path}: a second tuning named {name} (each is named by its folder)")
        reports[name] = report
        sets[name] = {part: (reference := getattr(report, part)["reference"], read_lines(reference))
                      for part in ("dev", "test")}
    first = next(iter(reports))
    for name in reports:
        for part in ("dev", "test"):
            (here, lines), (there, first_lines) = sets[name][part], sets[first][part]
            if lines != first_lines:
                raise ValueError(f"{name} and {first} were tuned on other {part} sets ({here}, {there}): their BLEUs "
                                 f"rank nothing together")
    return reports


def check_singles(singles: list[list[str]], report: RouteReport) -> None:
    """Raise ValueError for a single translation of another number of lines than the report's dev or test set."""
    for name, *paths in singles:
        for part, path in zip(("dev", "test"), paths):
            lines, wanted = len(read_lines(path)), getattr(report, part)["sentences"]
            if lines != wanted:
                raise ValueError(f"--single {name}: {path} has {lines} lines, but the {part} set has {wanted}")


def check_publish_folder(folder: str, force: bool) -> None:
    """Raise ValueError for a folder the choice cannot be published into: a file on its way, one not writable, a
    tuning's folder, or (without ``force``) one holding a choice already."""
    existing = os.path.abspath(folder)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise ValueError(f"--publish {folder}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"--publish {folder}: {existing} is not writable")
    if os.path.exists(os.path.join(folder, REPORT_JSON)):
        raise ValueError(f"--publish {folder} holds a tuning's report ({REPORT_JSON}): a choice is a folder of its own")
    earlier = [name for name in (CHOICE_MD, CHOICE_JSON) if os.path.exists(os.path.join(folder, name))]
    if earlier and not force:
        raise ValueError(f"--publish {folder} holds a choice already ({', '.join(earlier)}): give --force to replace "
                         f"it, or publish elsewhere")


def publish(folder: str, text: str, tunings: list[str], singles: dict) -> None:
    """Write the choice into ``folder``: its text, the tunings it ranked, the singles with their translations (a
    translation given from there stays); an earlier choice's commands file is removed, to be written again."""
    os.makedirs(folder, exist_ok=True)
    for single in singles.values():
        for part in ("dev", "test"):
            name, source = f"{single['name']}.{part}.hyp", single.pop(part + "_path")
            target = os.path.join(folder, name)
            if not (os.path.exists(target) and os.path.samefile(source, target)):
                with atomic_output(target) as stream, open(source, "rb") as given:
                    shutil.copyfileobj(given, stream)
            single[part] = name
    with atomic_output(os.path.join(folder, CHOICE_MD)) as stream:
        stream.write(text.encode("utf-8"))
    with atomic_output(os.path.join(folder, CHOICE_JSON)) as stream:
        stream.write((json.dumps({"tunings": tunings, "singles": singles}, indent=1, ensure_ascii=False)
                      + "\n").encode("utf-8"))
    for name in COMMANDS:  # the commands of the choice replaced, once it is
        if os.path.exists(os.path.join(folder, name)):
            os.remove(os.path.join(folder, name))
    print(f"wrote {folder}/{CHOICE_MD}, {CHOICE_JSON} and the singles' translations; now its COMMANDS.md")


def choose(reports: dict[str, RouteReport], given_singles: list[list[str]]) -> dict:
    """Print the ranking and the comparisons; returns the singles (name -> their BLEU and files)."""
    # (dev-half mean, label, report, stage or None, single paths)
    rows = [(statistics.mean(stage.dev_bleu), f"{name}: {stage.name}", report, stage, None)
            for name, report in reports.items() for stage in report.stages]
    first = next(iter(reports.values()))
    held_out = dev_halves(first.dev["sentences"])[1]
    singles = {}
    for name, dev_hyp, test_hyp in given_singles:
        dev = file_bleu(dev_hyp, first.dev["reference"], "none", held_out)[0]
        test = file_bleu(test_hyp, first.test["reference"], "none")[0]
        singles[name] = {"name": name, "dev-half BLEU": single_cell(dev), "test BLEU": single_cell(test),
                         "dev_path": dev_hyp, "test_path": test_hyp}
        rows.append((dev, f"{name} (single)", None, None, singles[name]))
    rows.sort(key=lambda row: -row[0])
    print(f"Every stage of {', '.join(reports)} ranked by BLEU on the {len(held_out)} held-out dev sentences (even "
          f"lines; sacreBLEU tok:none), best first, with its test BLEU (mean ± std over the MERT runs):\n")
    print("| stage | dev-half BLEU (mean ± std) | test BLEU (mean ± std) |")
    print("|---|---|---|")
    for rank, (_, label, _, stage, single) in enumerate(rows, start=1):
        cells = stage_cells(stage) if stage else {"dev": single["dev-half BLEU"], "test": single["test BLEU"]}
        print(f"| {'**' + label + '**' if rank == 1 else label} | {cells['dev']} | {cells['test']} |")
    _, label, report, chosen, single = rows[0]
    if chosen is None:
        print(f"\nChosen on dev: {label}, a single translation; nothing to compare it with in a report.")
        return singles
    by_name = {stage.name: stage for stage in report.stages}
    print(f"\nChosen on dev: **{label}** ({chosen.about}). On test:")
    if "baseline" in by_name and chosen.name != "baseline":
        baseline = by_name["baseline"]
        print(f"- against the baseline: {_compare(chosen, baseline.hypotheses, baseline.bleu, report)}")
    if chosen.control and chosen.control in by_name:
        control = by_name[chosen.control]
        print(f"- against its control ({chosen.control}): "
              f"{_compare(chosen, control.hypotheses, control.bleu, report)}")
    runner_up = next((row for row in rows[1:] if row[3] is not None), None)
    if runner_up is not None and runner_up[3].name not in ("baseline", chosen.control):
        print(f"- against the runner-up on dev ({runner_up[1]}): "
              f"{_compare(chosen, runner_up[3].hypotheses, runner_up[3].bleu, report)}")
    for name, _, test_hyp in given_singles:
        bleu = file_bleu(test_hyp, report.test["reference"], "none")[0]
        print(f"- against {name} (single): {_compare(chosen, [test_hyp], [bleu], report)}")
    return singles


if __name__ == "__main__":
    main()
