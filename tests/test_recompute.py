"""Every published figure recomputed from the translations committed with it: a report published by
``mert-report --publish``, a choice by ``choose_on_dev.py --publish``, and the pages quoting them. A doctored
translation, table cell, bold row or prose figure fails; the fast paired test equals sacreBLEU's.

The tuning is written here as ``tune --select-on half`` writes one (its figures by the route's own report code),
over 40 dev and 40 test sentences of the Tatoeba dev slice, translations made by dropping words.
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import DATA
from recompute import paired_p_value, sentence_stats
from test_docs import prose_problems, published_problems, recomputation_problems, report_table_problems, tables

from moses_integration.route.plan import dev_halves
from moses_integration.route.published import publish_report
from moses_integration.route.report import compare_with, compare_with_controls
from moses_integration.route.report_file import RouteReport, StageResult, read_report, write_report
from mosesrnn.formats.text_file import read_lines
from mosesrnn.tuning import significance
from mosesrnn.tuning.bleu import file_bleu

ROOT = Path(__file__).parent.parent
LINES = read_lines(str(DATA / "tatoeba.dev400.fr"))


def _write(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def _damaged(lines: list[str], every: int, offset: int = 0) -> list[str]:
    """Each line without its every-th word (counted from ``offset``): a translation of its own BLEU."""
    return [" ".join(word for at, word in enumerate(line.split(), 1 + offset) if at % every) for line in lines]


def make_tuning(work: Path) -> None:
    """``work``: a finished `tune --select-on half` (baseline, its control, a rescored stage; two runs), its report
    measured by the route's own code, and a plan."""
    work.mkdir()
    dev, test = _write(work / "dev.fr", LINES[:40]), _write(work / "test.fr", LINES[40:80])
    held_out = dev_halves(40)[1]
    stages = []
    for name, every, control in (("baseline", 3, None), ("retuned", 4, None), ("rescored", 6, "retuned")):
        runs = {part: [_write(work / f"{name}-run{k}.{part}.hyp", _damaged(LINES[:40] if part == "dev" else
                                                                            LINES[40:80], every, k)) for k in (1, 2)]
                for part in ("dev", "test")}
        stages.append(StageResult(name, f"the {name}", tuple(file_bleu(h, test, "none")[0] for h in runs["test"]),
                                  tuple(runs["test"]), (1, 1), control=control, dev_hypotheses=tuple(runs["dev"]),
                                  dev_bleu=tuple(file_bleu(h, dev, "none", held_out)[0] for h in runs["dev"])))
    stages[1] = replace(stages[1], hypotheses=(stages[0].hypotheses[0], stages[1].hypotheses[1]),
                        bleu=(stages[0].bleu[0], stages[1].bleu[1]))  # a run identical to the baseline's: stored once
    report = RouteReport("nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:2.6.0",
                         {"source": str(work / "dev.en"), "reference": dev, "sentences": 40},
                         {"source": str(work / "test.en"), "reference": test, "sentences": 40}, 2, tuple(stages),
                         selection={"on": "half", "tuned_on": 20, "held_out": 20, "moses_tuned_on": "tuning half"})
    report = compare_with(compare_with_controls(report), "baseline")
    write_report(str(work / "report.json"), replace(report, selection={**report.selection, "chosen": "rescored"}))
    (work / "plan.json").write_text(json.dumps({"files": {"dev_ref": [dev, 1]}}), encoding="utf-8")


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    """A repository root with docs/results/tune (a published tuning) and docs/results/choice (a choice over it and
    a single), both with their commands."""
    root = tmp_path_factory.mktemp("repo")
    make_tuning(root / "work")
    results = root / "docs" / "results"
    publish_report(str(root / "work"), str(results / "tune"), str(root))
    (results / "tune" / "COMMANDS.md").write_text("mosesrnn tune ... --work-dir work\n", encoding="utf-8")
    _write(root / "nmt.dev", _damaged(LINES[:40], 2)), _write(root / "nmt.test", _damaged(LINES[40:80], 2))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "choose_on_dev.py"), str(results / "tune"),
                           "--single", "nmt", "nmt.dev", "nmt.test", "--single-chosen-on", "none", "--publish",
                           str(results / "choice")], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (results / "choice" / "COMMANDS.md").write_text("python benchmarks/choose_on_dev.py ...\n", encoding="utf-8")
    return root


def files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def test_a_publication_holds_its_translations_and_recomputes(published):
    """The translations and references, gzipped beside report.json, which names them there (a run identical to
    another stored once): the folder alone gives every figure again."""
    tune = published / "docs" / "results" / "tune"
    assert files(tune) == ["COMMANDS.md", "hyp/baseline.run1.dev.gz", "hyp/baseline.run1.test.gz",
                           "hyp/baseline.run2.dev.gz", "hyp/baseline.run2.test.gz", "hyp/rescored.run1.dev.gz",
                           "hyp/rescored.run1.test.gz", "hyp/rescored.run2.dev.gz", "hyp/rescored.run2.test.gz",
                           "hyp/retuned.run1.dev.gz", "hyp/retuned.run2.dev.gz", "hyp/retuned.run2.test.gz",
                           "plan.json", "ref/dev.gz", "ref/test.gz", "report.json", "report.md"]
    record = json.loads((tune / "report.json").read_text(encoding="utf-8"))
    assert record["test"]["reference"] == "ref/test.gz"
    assert record["stages"][1]["hypotheses"] == ["hyp/baseline.run1.test.gz", "hyp/retuned.run2.test.gz"]
    report = read_report(str(tune / "report.json"))
    original = read_report(str(published / "work" / "report.json"))
    assert report.stages == tuple(replace(stage, hypotheses=again.hypotheses, dev_hypotheses=again.dev_hypotheses)
                                  for stage, again in zip(original.stages, report.stages))
    assert gzip.decompress((tune / "ref" / "test.gz").read_bytes()) == (published / "work" / "test.fr").read_bytes()
    for folder in ("tune", "choice"):
        assert published_problems(published / "docs" / "results" / folder) == []
        assert recomputation_problems(published / "docs" / "results" / folder) == []


def _doctor(path: Path, line: int) -> bytes:
    """Drop the last word of ``line`` of a gzipped translation; returns the file's bytes before."""
    before = path.read_bytes()
    lines = gzip.decompress(before).decode("utf-8").splitlines()
    lines[line] = lines[line].rpartition(" ")[0]
    path.write_bytes(gzip.compress("".join(text + "\n" for text in lines).encode("utf-8")))
    return before


@pytest.mark.parametrize("folder, translation, line, figure", [
    ("tune", "hyp/rescored.run2.test.gz", 3, "rescored.bleu"),
    ("tune", "hyp/baseline.run1.dev.gz", 1, "baseline.dev_bleu"),  # a held-out line (even line number)
    ("choice", "hyp/nmt.test.gz", 0, "nmt (single)'s test BLEU"),
])
def test_a_doctored_translation_fails(published, folder, translation, line, figure):
    path = published / "docs" / "results" / folder / translation
    before = _doctor(path, line)
    try:
        problems = recomputation_problems(published / "docs" / "results" / folder)
    finally:
        path.write_bytes(before)
    assert problems and figure in problems[0], problems


def test_a_line_the_held_out_half_does_not_read_changes_nothing(published):
    path = published / "docs" / "results" / "tune" / "hyp" / "baseline.run1.dev.gz"
    before = _doctor(path, 0)  # an odd line: the tuning half
    try:
        assert recomputation_problems(published / "docs" / "results" / "tune") == []
    finally:
        path.write_bytes(before)


def _page(root: Path, text: str) -> Path:
    page = root / "page.md"
    page.write_text(text, encoding="utf-8")
    return page


def test_a_doctored_cell_or_moved_bold_row_of_a_copied_ranking_fails(published):
    """A table copied from choice.md passes; a cell changed, the bold or "the highest held-out dev BLEU" moved to
    the runner-up fails."""
    ranking = [line for line in (published / "docs" / "results" / "choice" / "choice.md").read_text().splitlines()
               if line.startswith("|")][:5]
    chosen, runner_up = ranking[2], ranking[3]
    assert chosen.startswith("| **tune: rescored**")
    how = ["| how it was chosen |", "|---|", "| the highest held-out dev BLEU |", "| the runner-up on dev |",
           "| - |"]
    rows = [row + cell.strip("|") + "|" for row, cell in zip(ranking, how)]

    def problems(rows: list[str]) -> list[str]:
        page = _page(published, "# A\n\n<!-- report: docs/results/choice -->\n" + "\n".join(rows) + "\n")
        [(found, before, _)] = tables(page)
        return report_table_problems(found, before, published)

    assert problems(rows) == []
    doctored = rows[:2] + [rows[2].replace(chosen.split("|")[2].strip(), "99.99 ± 0.01")] + rows[3:]
    assert "'99.99 ± 0.01' in the table" in problems(doctored)[0]
    moved = rows[:2] + [rows[2].replace("**", ""), rows[3].replace(runner_up.split("|")[1].strip(),
                                                                   f"**{runner_up.split('|')[1].strip()}**")] + rows[4:]
    assert any("is bold, but the stage chosen on dev is 'tune: rescored'" in p for p in problems(moved))
    swapped = rows[:2] + [rows[2].replace("the highest held-out dev BLEU", "the runner-up on dev"),
                          rows[3].replace("the runner-up on dev", "the highest held-out dev BLEU")] + rows[4:]
    assert len(problems(swapped)) == 3  # the chosen row: not the highest, not the runner-up


def test_a_doctored_prose_figure_fails(published):
    """The comparisons read after the choice, quoted in prose (rounded at most), pass; a figure changed fails, and
    so does one comparison's figure quoted for another."""
    record = json.loads((published / "docs" / "results" / "choice" / "choice.json").read_text())
    baseline, control = record["after_choice"]["comparisons"][:2]
    assert baseline["against"] == "the baseline" and control["against"].startswith("its control")
    prose = (f"<!-- figures: docs/results/choice -->\nAgainst the baseline **{baseline['delta']:+.2f}** (p "
             f"{baseline['p_value']:.2f}, {baseline['pairs_agreeing']} of {baseline['pairs']} run pairs).\n\nNot "
             f"quoted: +5.0.\n")
    assert prose_problems(prose, published) == []
    wrong = f"{baseline['delta'] + 0.01:+.2f}"
    [problem] = prose_problems(prose.replace(f"{baseline['delta']:+.2f}", wrong), published)
    assert problem.startswith(f"{wrong!r} (in 'Against the baseline") and problem.endswith(
        "is no figure of docs/results/choice against the baseline")
    assert prose_problems(prose.replace(" of ", " of 1"), published)
    both = prose.replace(").\n", f"), against its control {control['delta']:+.2f}.\n")
    assert prose_problems(both, published) == []
    swapped = both.replace(f"{baseline['delta']:+.2f}", "BASE").replace(f"{control['delta']:+.2f}", "CONTROL")
    swapped = swapped.replace("BASE", f"{control['delta']:+.2f}").replace("CONTROL", f"{baseline['delta']:+.2f}")
    assert [problem.rpartition(" against ")[2] for problem in prose_problems(swapped, published)] == [
        "the baseline", "the control"]


@pytest.mark.parametrize("every", [(3, 4), (2, 7), (5, 5)])
def test_the_fast_paired_test_is_sacrebleus(tmp_path, every):
    """tests/recompute.py's paired approximate randomisation gives sacreBLEU's p-value, ties included (two systems
    that differ in a line or none)."""
    reference = _write(tmp_path / "ref", LINES[:60])
    one, other = (_write(tmp_path / f"h{k}", _damaged(LINES[:60], n)) for k, n in enumerate(every))
    for samples in (1000, 10000):
        assert paired_p_value(sentence_stats(one, reference, "none"), sentence_stats(other, reference, "none"),
                              "none", samples) == significance.paired_p_value(
            read_lines(one), read_lines(other), LINES[:60], "none", samples)
