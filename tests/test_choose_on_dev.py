"""``benchmarks/choose_on_dev.py``: one stage chosen on the held-out dev half among several tunings, published.

Its reports are written here, as `tune --select-on half` writes them, over ten dev and ten test sentences of the
Tatoeba slices; each mistake a user can make is one line and exit status 2, before anything is written.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA

from moses_integration.route.report_file import RouteReport, StageResult, write_report

ROOT = Path(__file__).parent.parent
REFERENCES = (DATA / "nbest" / "tatoeba.dev30.fr").read_text(encoding="utf-8").splitlines()


def _text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _damaged(lines: list[str], every: int) -> list[str]:
    """Each line without its every-th word: a translation of its own BLEU."""
    return [" ".join(word for at, word in enumerate(line.split(), 1) if at % every) for line in lines]


def make_tuning(folder: Path, sets: Path, moses_tuned_on: str | None = "tuning half") -> Path:
    """A tuning's folder with the report of a `tune --select-on half` of two stages over two runs, on the dev and
    test sets of ``sets`` (dev.fr, test.fr); Moses' MERT tuned on ``moses_tuned_on`` (None: a report of before, which
    does not say)."""
    folder.mkdir(parents=True)
    dev, test = (sets / "dev.fr").read_text().splitlines(), (sets / "test.fr").read_text().splitlines()
    stages = []
    for name, every, dev_bleu in (("baseline", 3, (40.0, 41.0)), ("rescored", 5, (42.0, 43.0))):
        for run in (1, 2):
            (folder / f"{name}-run{run}.test.hyp").write_text(_text(_damaged(test, every + run)), encoding="utf-8")
            (folder / f"{name}-run{run}.dev.hyp").write_text(_text(_damaged(dev, every + run)), encoding="utf-8")
        stages.append(StageResult(name, f"the {name}", (30.0, 31.0),
                                  tuple(str(folder / f"{name}-run{run}.test.hyp") for run in (1, 2)), (1, 1),
                                  dev_bleu=dev_bleu,
                                  dev_hypotheses=tuple(str(folder / f"{name}-run{run}.dev.hyp") for run in (1, 2))))
    report = RouteReport("nrefs:1", {"source": str(sets / "dev.en"), "reference": str(sets / "dev.fr"),
                                     "sentences": len(dev)},
                         {"source": str(sets / "test.en"), "reference": str(sets / "test.fr"), "sentences": len(test)},
                         2, tuple(stages), selection={"on": "half", "tuned_on": 5, "held_out": 5, "chosen": "rescored",
                                                      **({"moses_tuned_on": moses_tuned_on} if moses_tuned_on else {})})
    write_report(str(folder / "report.json"), report)
    return folder


@pytest.fixture
def world(tmp_path) -> Path:
    """Sets of ten dev and ten test sentences, two tunings A and B of them, and a single translation."""
    (tmp_path / "dev.fr").write_text(_text(REFERENCES[:10]), encoding="utf-8")
    (tmp_path / "test.fr").write_text(_text(REFERENCES[10:20]), encoding="utf-8")
    (tmp_path / "nmt.dev").write_text(_text(_damaged(REFERENCES[:10], 2)), encoding="utf-8")
    (tmp_path / "nmt.test").write_text(_text(_damaged(REFERENCES[10:20], 2)), encoding="utf-8")
    for name in ("A", "B"):
        make_tuning(tmp_path / name, tmp_path)
    return tmp_path


def choose(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "choose_on_dev.py"), *args], cwd=folder,
                          capture_output=True, text=True, timeout=120)


def single(world: Path, dev: str = "nmt.dev", test: str = "nmt.test", chosen_on: str = "none") -> list[str]:
    return ["--single", "nmt", str(world / dev), str(world / test), "--single-chosen-on", chosen_on]


def published_files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def test_a_choice_is_printed_and_published(world):
    done = choose(world, "A", "B", *single(world), "--publish", "choice")
    assert done.returncode == 0, done.stderr
    assert "Chosen on dev: **A: rescored**" in done.stdout
    assert published_files(world / "choice") == ["choice.json", "choice.md", "hyp/nmt.dev.gz", "hyp/nmt.test.gz"]
    record = json.loads((world / "choice" / "choice.json").read_text())
    assert record["tunings"] == ["A", "B"] and record["chosen"] == "A: rescored"
    assert [row["label"] for row in record["ranking"]] == ["A: rescored", "B: rescored", "A: baseline", "B: baseline",
                                                           "nmt (single)"]
    assert [(c["against"], c["label"], c["pairs"]) for c in record["after_choice"]["comparisons"]] == [
        ("the baseline", "A: baseline", 4), ("the runner-up on dev", "B: rescored", 4), ("nmt (single)",
                                                                                         "nmt (single)", 2)]
    assert (world / "choice" / "choice.md").read_text() == done.stdout


def test_the_ranking_reads_dev_alone_and_test_comes_after_it(world):
    """The ranking has no test column; every test figure is below the heading that says it was read after."""
    done = choose(world, "A", "B", *single(world))
    assert done.returncode == 0, done.stderr
    ranking, heading, after = done.stdout.partition("## Read after the choice")
    assert heading and "test" not in ranking.lower().replace("the test set is not read", "")
    assert "Chosen on dev: **A: rescored**" in ranking
    assert "- A: rescored (chosen): test BLEU 30.50 ± 0.71" in after
    assert "- against the baseline (A: baseline, test BLEU 30.50 ± 0.71): +0.00 (p 1.0000, 0 of 4" in after


def test_stages_tuned_on_the_whole_dev_set_are_refused_or_listed_unranked(world):
    """A report whose Moses MERT read the whole dev set (no ``moses_tuned_on``: every report of before) ranks
    nothing: refused in one line, or with --allow-in-sample listed below the ranking; a single chosen on the whole
    dev set likewise."""
    make_tuning(world / "old", world, moses_tuned_on=None)
    _one_line_exit_2(choose(world, "A", "old"), "old: tuned on the whole dev set", "--allow-in-sample")
    _one_line_exit_2(choose(world, "A", *single(world, chosen_on="whole")),
                     "--single nmt: its settings were chosen on the whole dev set", "--allow-in-sample")
    done = choose(world, "A", "old", *single(world, chosen_on="whole"), "--allow-in-sample", "--publish", "choice")
    assert done.returncode == 0, done.stderr
    record = json.loads((world / "choice" / "choice.json").read_text())
    assert [row["label"] for row in record["ranking"]] == ["A: rescored", "A: baseline"]
    assert [(row["label"], row["why"]) for row in record["not_ranked"]] == [
        ("old: baseline", "tuned on the whole dev set"), ("old: rescored", "tuned on the whole dev set"),
        ("nmt (single)", "its settings were chosen on the whole dev set")]
    assert "| old: rescored | 42.50 ± 0.71 | tuned on the whole dev set |" in done.stdout
    _one_line_exit_2(choose(world, "old", "--allow-in-sample"), "nothing to rank")


def test_each_single_says_where_it_was_chosen(world):
    done = choose(world, "A", "--single", "nmt", str(world / "nmt.dev"), str(world / "nmt.test"))
    assert done.returncode == 2 and "1 --single and 0 --single-chosen-on" in done.stderr


def _one_line_exit_2(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("choose_on_dev.py: error: "), done.stderr
    assert all(word in lines[0] for word in words), lines[0]


@pytest.mark.parametrize("damage, words", [
    (None, ("report.json", "no such file")),
    ("{}", ("report.json", "not a tuning report")),
    ('{"format": "mosesrnn-tuning-report", "ver', ("report.json",)),
    ('{"format": "mosesrnn-tuning-report", "version": 1}', ("report.json", "damaged")),
    ("dev_bleu", ("report.json", "a damaged report: baseline without held-out dev BLEU")),
], ids=["missing", "empty-object", "cut-short", "no-stages", "no-dev-bleu"])
def test_a_damaged_or_missing_report_is_one_line(world, damage, words):
    report = world / "B" / "report.json"
    if damage is None:
        report.unlink()
    elif damage == "dev_bleu":
        record = json.loads(report.read_text())
        record["stages"][0]["dev_bleu"] = []
        report.write_text(json.dumps(record))
    else:
        report.write_text(damage)
    _one_line_exit_2(choose(world, "A", "B", "--publish", "choice"), *words)
    assert not (world / "choice").exists()


def test_publishing_under_a_file_or_over_a_choice_is_refused_before_any_writing(world):
    (world / "file").write_text("not a folder\n")
    _one_line_exit_2(choose(world, "A", "B", "--publish", "file/choice"), "is a file, not a folder")
    _one_line_exit_2(choose(world, "A", "B", "--publish", "file"), "is a file, not a folder")
    _one_line_exit_2(choose(world, "A", "B", "--publish", "B"), "holds a tuning's report")
    assert choose(world, "A", "B", *single(world), "--publish", "choice").returncode == 0
    (world / "choice" / "COMMANDS.md").write_text("the commands of the first choice\n")
    before = (world / "choice" / "choice.md").read_bytes()
    _one_line_exit_2(choose(world, "A", *single(world), "--publish", "choice"), "holds a choice already", "--force")
    assert (world / "choice" / "choice.md").read_bytes() == before
    # its own published translations as input, replaced with --force: the old commands go
    again = choose(world, "A", *single(world, "choice/hyp/nmt.dev.gz", "choice/hyp/nmt.test.gz"), "--publish",
                   "choice", "--force")
    assert again.returncode == 0, again.stderr
    assert published_files(world / "choice") == ["choice.json", "choice.md", "hyp/nmt.dev.gz", "hyp/nmt.test.gz"]
    assert gzip.decompress((world / "choice" / "hyp" / "nmt.dev.gz").read_bytes()) == (world / "nmt.dev").read_bytes()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_publishing_into_a_read_only_folder_is_one_line(world):
    (world / "locked").mkdir()
    (world / "locked").chmod(0o555)
    try:
        _one_line_exit_2(choose(world, "A", "--publish", "locked/choice"), "not writable")
    finally:
        (world / "locked").chmod(0o755)


@pytest.mark.parametrize("part", ["dev", "test"])
def test_a_single_of_the_wrong_length_is_one_line(world, part):
    path = world / f"nmt.{part}"
    path.write_text(path.read_text() + "one line too many\n")
    _one_line_exit_2(choose(world, "A", *single(world), "--publish", "choice"), f"nmt.{part} has 11 lines",
                     f"the {part} set has 10")
    assert not (world / "choice").exists()


def test_tunings_of_other_dev_sets_are_not_ranked_together(world, tmp_path):
    other = tmp_path / "other-sets"
    other.mkdir()
    (other / "dev.fr").write_text(_text(REFERENCES[20:30]), encoding="utf-8")
    (other / "test.fr").write_text((world / "test.fr").read_text(), encoding="utf-8")
    make_tuning(world / "C", other)
    _one_line_exit_2(choose(world, "A", "C"), "C and A were tuned on other dev sets")


def test_force_goes_with_publish(world):
    done = choose(world, "A", "--force")
    assert done.returncode == 2 and "--force goes with --publish" in done.stderr
