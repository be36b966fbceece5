"""``mosesrnn tune``: the route — Moses MERT, n-best rescoring, the report with its significance.

Moses is not needed here. Shell scripts stand in for ``moses`` and ``mert-moses.pl``: the fake tuner
copies real tuned weights into its working directory (one finished iteration); the fake decoder
prints a perturbed copy of the real test references (each run its own damage, so each run its own BLEU)
and writes real Moses n-best lists of real Tatoeba sentences. The dev and the test set are distinct
sentences of as many lines (13 each, no source sentence in both), so that a route that read the one's
references for the other would run and give other numbers, which the tests catch. The rescoring stage
is the real one: real features on real n-best lists, mosesrnn's MERT, reranking. ``test_the_route_with_real_moses``
runs the whole command on Moses' mini system where Moses is built.
"""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import click
import pytest
import sacrebleu
from click.testing import CliRunner
from conftest import DATA
from scoring_helpers import save_tiny_model

from moses_integration.mert_moses import (
    MertSettings,
    decoding_speed,
    find_tools,
    mert_command,
    mertdir_programs_run,
    relative_paths,
)
from moses_integration.mert_report import weights_table
from moses_integration.nplm_check import heap_disagreements, nplm_feature_names
from moses_integration.route import RouteOptions
from moses_integration.route.report_file import markdown, read_report
from mosesrnn.cli import main
from mosesrnn.formats.moses_ini import read_weights, weights_text
from mosesrnn.formats.nbest import read_nbest
from mosesrnn.formats.text_file import read_lines
from mosesrnn.tuning.bleu import file_bleu
from mosesrnn.tuning.mert import MertOptions
from mosesrnn.tuning.nbest_mert import mert_nbest_files
from mosesrnn.tuning.rerank import rerank
from mosesrnn.tuning.significance import mean_std, median_run, paired_p_value
from mosesrnn.tuning.vectors import named_weights

NBEST = DATA / "nbest"
SOURCE, REFERENCE = NBEST / "tatoeba.dev30.tok.en", NBEST / "tatoeba.dev30.fr"
TUNED_WEIGHTS = NBEST / "tatoeba.dev.mert-iter1.weights"
INI = DATA / "moses" / "moses-ini" / "phrase.basic-surface-only.moses.ini"  # ${MODEL_PATH}: no relative paths
BASELINE_INI = DATA / "moses" / "moses-ini" / "phrase.basic-surface-only-withirstlm.moses.ini"
#: The sentences of the 30 (their ids in the lists) that make the dev and the test set: as many, none in both, no
#: source sentence in both.
DEV_IDS, TEST_IDS = range(0, 13), range(17, 30)
#: Every how many tokens each run's test translations lose one (a plausible, reproducible damage).
DROP_EVERY = {"baseline-run1": 3, "baseline-run2": 4, "baseline-run3": 3, "system-run1": 5, "system-run2": 6,
              "system-run3": 9, "pruned-run1": 7}


def perturbed(reference: Path, every: int) -> str:
    """The reference with every ``every``-th token of each line dropped."""
    return "".join(" ".join(t for i, t in enumerate(line.split(), 1) if i % every) + "\n"
                   for line in reference.read_text(encoding="utf-8").splitlines())


def sentences(path: Path, ids: range) -> str:
    """The lines ``ids`` of a text file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return "".join(lines[i] + "\n" for i in ids)


def nbest_of(path: Path, ids: range) -> str:
    """The hypotheses of sentences ``ids`` in a gzipped Moses n-best list, numbered from 0: the list of those
    sentences alone, as Moses writes it."""
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return "".join(f"{ids.index(int(number))} ||| {rest}" for number, rest in
                       (line.split(" ||| ", 1) for line in stream) if int(number) in ids)


def write_sets(folder: Path) -> None:
    """dev.en, dev.fr, test.en, test.fr in ``folder``: DEV_IDS and TEST_IDS of the 30 Tatoeba sentences."""
    for part, ids in (("dev", DEV_IDS), ("test", TEST_IDS)):
        (folder / f"{part}.en").write_text(sentences(SOURCE, ids), encoding="utf-8")
        (folder / f"{part}.fr").write_text(sentences(REFERENCE, ids), encoding="utf-8")


def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


_MOSES_BIN_GIVEN = os.environ.get("MOSES_BIN")  # read before no_moses hides it from every test


@pytest.fixture(autouse=True)
def no_moses(monkeypatch, tmp_path):
    """No Moses anywhere: an empty PATH, no MOSES_BIN, no MOSES_SCRIPTS."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}:/usr/bin:/bin")  # sh and its tools for the fakes, no Moses
    monkeypatch.delenv("MOSES_BIN", raising=False)
    monkeypatch.delenv("MOSES_SCRIPTS", raising=False)


@pytest.fixture
def fake_moses(tmp_path):
    """Stand-in Moses: bin/moses and the mert programs, scripts/training/mert-moses.pl (see the module docstring).
    ``FAIL_RUN=system-run2`` makes that tuning fail, as a crash would."""
    root, fake = tmp_path / "mosesdecoder", tmp_path / "fake"
    fake.mkdir()
    write_sets(tmp_path)
    for run, every in DROP_EVERY.items():
        (fake / f"{run}.hyp").write_text(perturbed(tmp_path / "test.fr", every), encoding="utf-8")
    (fake / "dev.nbest").write_text(nbest_of(NBEST / "tatoeba.dev30.untuned.100best.gz", DEV_IDS), encoding="utf-8")
    (fake / "test.nbest").write_text(nbest_of(NBEST / "tatoeba.dev30.mert-iter1.100best.gz", TEST_IDS),
                                     encoding="utf-8")
    executable(root / "bin" / "moses", f"""#!/bin/sh
echo "moses $*" >> {fake}/calls
case " $* " in *" -show-weights "*) echo "LM0= 0.1"; exit 0;; esac
while [ $# -gt 0 ]; do
  case "$1" in -f) ini="$2";; -input-file) input="$2";; -n-best-list) list="$2";; esac; shift
done
run=$(basename "$(dirname "$ini")")
case "$input" in
  *dev.en) [ -n "$list" ] && cp {fake}/dev.nbest "$list"; cat "$input";;
  *) [ -n "$list" ] && cp {fake}/test.nbest "$list"; cat {fake}/$run.hyp;;
esac
""")
    executable(root / "scripts" / "training" / "mert-moses.pl", f"""#!/bin/sh
echo "mert-moses.pl $*" >> {fake}/calls
while [ $# -gt 0 ]; do [ "$1" = "--working-dir" ] && work="$2"; shift; done
run=$(basename "$work")
[ "${{FAIL_RUN:-}}" = "$run" ] && {{ echo "fake tuning of $run crashed"; exit 3; }}
mkdir -p "$work" && cp {TUNED_WEIGHTS} "$work/run1.moses.ini" && cp {TUNED_WEIGHTS} "$work/moses.ini"
echo 1 > "$work/finished_step.txt"
echo "fake tuning of $run done"
""")
    for program in ("extractor", "mert", "kbmira", "pro", "evaluator"):
        executable(root / "bin" / program, "#!/bin/sh\n")
    return root


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    return save_tiny_model(str(tmp_path_factory.mktemp("model") / "model.pt"))


def tune_args(tmp_path, fake_moses, model, *extra) -> list[str]:
    """The command on the dev and test sets that ``fake_moses`` wrote (dev.en, dev.fr, test.en, test.fr)."""
    return ["tune", str(tmp_path / "dev.en"), str(tmp_path / "dev.fr"), str(INI), "--test-src",
            str(tmp_path / "test.en"), "--test-ref", str(tmp_path / "test.fr"), "--baseline", str(BASELINE_INI),
            "--work-dir", str(tmp_path / "work"), "--rescore", "unk", "-m", model, "--moses-bin",
            str(fake_moses / "bin"), "--moses-scripts", str(fake_moses / "scripts"), *extra]


def calls(tmp_path) -> list[str]:
    path = tmp_path / "fake" / "calls"
    return path.read_text().splitlines() if path.exists() else []


def test_the_route_tunes_rescores_and_reports_with_significance(tmp_path, fake_moses, model):
    result = CliRunner().invoke(main, tune_args(tmp_path, fake_moses, model))
    assert result.exit_code == 0, result.output
    work = tmp_path / "work"
    report = read_report(str(work / "report.json"))
    assert [stage.name for stage in report.stages] == ["baseline", "system", "retuned", "rescored"]
    dev_ref, test_ref = tmp_path / "dev.fr", tmp_path / "test.fr"
    references = test_ref.read_text(encoding="utf-8").splitlines()
    for stage in report.stages[:2]:  # the decoded test set (the fake decoder's damaged test references)
        expected = [sacrebleu.corpus_bleu(perturbed(test_ref, DROP_EVERY[f"{stage.name}-run{k}"]).splitlines(),
                                          [references], tokenize="none", force=True).score for k in (1, 2, 3)]
        assert list(stage.bleu) == pytest.approx(expected, abs=1e-9)
    for stage in report.stages:  # every row's BLEU: its translations of the test set against the test references
        by_hand = [sacrebleu.corpus_bleu(Path(path).read_text(encoding="utf-8").splitlines(), [references],
                                         tokenize="none", force=True).score for path in stage.hypotheses]
        assert list(stage.bleu) == pytest.approx(by_hand, abs=1e-9)
    assert (report.dev["reference"], report.test["reference"]) == (str(dev_ref), str(test_ref))
    # the tunings read the dev set: Moses' MERT its source and references, mosesrnn's MERT on the dev lists the dev
    # references (the control's weights are those; the test references would give others)
    tunings = [call.split()[1:3] for call in calls(tmp_path) if call.startswith("mert-moses.pl")]
    assert tunings == [[str(tmp_path / "dev.en"), str(dev_ref)]] * 6
    retuned = (work / "system-run1.retuned.weights").read_text()
    for ref, same in ((dev_ref, True), (test_ref, False)):
        again = mert_nbest_files([str(work / "system-run1.dev.nbest")], [str(ref)],
                                 str(work / "system-run1" / "moses.ini"), "none", MertOptions(seed=1))
        assert (weights_text(named_weights(again.groups, again.weights)) == retuned) is same, ref
    base, control, rescored = report.stages[0], report.stages[2], report.stages[3]
    assert rescored.iterations == (1, 1, 1) and set(rescored.weight_shares) == {"UNK0"}
    # the control: the same lists, the same MERT, no new feature; the rescored row is compared with it too
    assert rescored.control == "retuned" and control.weight_shares == {} and control.control is None
    assert control.hypotheses == tuple(str(work / f"system-run{run}.retuned.test.hyp") for run in (1, 2, 3))
    assert "UNK0" not in read_weights(str(work / "system-run1.retuned.weights"))
    against_control = paired_p_value(Path(rescored.hypotheses[median_run(rescored.bleu)]).read_text().splitlines(),
                                     Path(control.hypotheses[median_run(control.bleu)]).read_text().splitlines(),
                                     references, "none")
    assert rescored.control_p_value == against_control[1] and rescored.control_pairs == 9
    assert rescored.control_delta == pytest.approx(statistics.mean(rescored.bleu) - statistics.mean(control.bleu))
    assert "Δ vs its control" in result.stdout and "what the features add" in result.stdout
    # the report's p-value is sacreBLEU's, run by hand on the median runs' files
    by_hand = paired_p_value(Path(rescored.hypotheses[median_run(rescored.bleu)]).read_text().splitlines(),
                             Path(base.hypotheses[median_run(base.bleu)]).read_text().splitlines(), references,
                             "none")
    assert rescored.p_value == by_hand[1] and rescored.pairs == 9
    # and sacreBLEU's own command line on the same files (not the function the report calls) says the same
    cli = subprocess.run([str(Path(sys.executable).parent / "sacrebleu"), str(tmp_path / "test.fr"), "-i",
                          base.hypotheses[median_run(base.bleu)], rescored.hypotheses[median_run(rescored.bleu)],
                          "-m", "bleu", "--paired-ar", "--paired-ar-n", "10000", "-tok", "none", "--force", "-f",
                          "json"], capture_output=True, text=True, check=True)
    assert json.loads(cli.stdout)[1]["BLEU"]["p_value"] == pytest.approx(rescored.p_value, rel=1e-12)
    assert rescored.delta == pytest.approx(statistics.mean(rescored.bleu) - statistics.mean(base.bleu))
    assert "unk(side=both" in report.signatures["rescoring"][0] and report.sacrebleu.startswith("nrefs:1")
    assert "| rescored: system's 100-best lists rescored with unk |" in result.stdout
    assert (work / "report.md").read_text() == result.stdout
    for run in (1, 2, 3):  # every run's files are kept and named
        for name in (f"system-run{run}.test.hyp", f"system-run{run}.dev.nbest.rescored.gz",
                     f"system-run{run}.rescored.weights", f"system-run{run}.rescored.test.hyp"):
            assert (work / name).is_file(), name
    shown = CliRunner().invoke(main, ["mert-report", str(work)])
    assert shown.exit_code == 0 and "| rescored: system's 100-best lists rescored with unk |" in shown.stdout
    against = CliRunner().invoke(main, ["mert-report", str(work), "--against", "system"])
    assert against.exit_code == 0 and "| Δ vs system |" in against.stdout
    system_row = next(line for line in against.stdout.splitlines() if line.startswith("| system:"))
    assert system_row.split(" | ")[3:6] == ["-", "-", "-"]  # itself: no difference, no test
    missing = CliRunner().invoke(main, ["mert-report", str(work), "--against", "pruned"])
    assert missing.exit_code == 1 and "no stage 'pruned' in the report" in missing.output


def test_a_stopped_tuning_continues_where_it_stopped(tmp_path, fake_moses, model, monkeypatch):
    monkeypatch.setenv("FAIL_RUN", "system-run2")
    crashed = CliRunner().invoke(main, tune_args(tmp_path, fake_moses, model))
    assert crashed.exit_code == 1 and "Traceback" not in crashed.output
    assert "system-run2.log" in crashed.output
    done_before = [call for call in calls(tmp_path) if not call.endswith("-show-weights")]
    monkeypatch.delenv("FAIL_RUN")
    finished = CliRunner().invoke(main, tune_args(tmp_path, fake_moses, model))
    assert finished.exit_code == 0, finished.output
    redone = [call for call in calls(tmp_path) if not call.endswith("-show-weights")][len(done_before):]
    tuned = [call.split("--working-dir ")[1].split()[0] for call in redone if call.startswith("mert-moses.pl")]
    assert [os.path.basename(path) for path in tuned] == ["system-run2", "system-run3"]  # nothing finished redone
    decodes = [call for call in redone if call.startswith("moses")]
    assert len(decodes) == 2 * 2  # runs 2 and 3 of the system: the test set and the dev lists, once each


def test_a_folder_of_another_tuning_is_refused(tmp_path, fake_moses, model):
    args = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    assert CliRunner().invoke(main, args).exit_code == 0
    other = CliRunner().invoke(main, tune_args(tmp_path, fake_moses, model, "--runs", "2"))
    assert other.exit_code == 1 and "holds a tuning of other runs" in other.output
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "notes.txt").write_text("mine\n")
    args = tune_args(tmp_path, fake_moses, model)
    args[args.index("--work-dir") + 1] = str(tmp_path / "elsewhere")
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 1 and "holds files of something else (notes.txt" in refused.output


def test_a_rescoring_model_retrained_to_the_same_size_is_refused_when_the_tuning_continues(tmp_path, fake_moses):
    """plan.json records each rescoring model by its sha256: a model retrained into the same file, of the same size
    (two attention checkpoints of one shape are), is refused in one line naming it, before any work."""
    model = save_tiny_model(str(tmp_path / "model.pt"))
    args = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    assert CliRunner().invoke(main, args).exit_code == 0
    before = Path(model).read_bytes()
    save_tiny_model(model, seed=1)
    assert len(Path(model).read_bytes()) == len(before) and Path(model).read_bytes() != before
    done = len(calls(tmp_path))
    result = CliRunner().invoke(main, args)
    work = tmp_path / "work"
    assert result.exit_code == 1, result.output
    assert result.output.strip() == (f"Error: cannot start tuning: {work}: the rescoring model {model} changed since "
                                     f"the tuning there began ({work / 'plan.json'} records its sha256): continue it "
                                     f"with the model it began with, or tune into a fresh folder"), result.output
    assert len(calls(tmp_path)) == done


def test_a_plan_that_recorded_models_by_size_continues_and_is_upgraded(tmp_path, fake_moses, model):
    """A plan.json written before the models were recorded by content (``[path, size]``) is compared in that form,
    so its tuning continues; saved again, it records the model's sha256. A model of another size is refused still."""
    args = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    assert CliRunner().invoke(main, args).exit_code == 0
    path = tmp_path / "work" / "plan.json"
    plan = json.loads(path.read_text())
    assert plan["rescoring"]["model"] == [model, os.path.getsize(model), hashlib.sha256(Path(model).read_bytes())
                                          .hexdigest()]
    plan["rescoring"]["model"] = plan["rescoring"]["model"][:2]
    path.write_text(json.dumps(plan, indent=1) + "\n")
    (tmp_path / "work" / "report.json").unlink()
    assert CliRunner().invoke(main, args).exit_code == 0 and (tmp_path / "work" / "report.json").exists()
    assert len(json.loads(path.read_text())["rescoring"]["model"]) == 3
    plan["rescoring"]["model"][1] += 1
    path.write_text(json.dumps(plan, indent=1) + "\n")
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 1 and f"the rescoring model {model} changed since" in refused.output, refused.output


def test_other_systems_climb_the_same_ladder(tmp_path, fake_moses, model):
    """--also NAME INI: more systems tuned and reported against the one baseline, in one folder."""
    result = CliRunner().invoke(main, tune_args(tmp_path, fake_moses, model, "--runs", "1", "--also", "pruned",
                                                str(BASELINE_INI)))
    assert result.exit_code == 0, result.output
    report = read_report(str(tmp_path / "work" / "report.json"))
    assert [stage.name for stage in report.stages] == ["baseline", "system", "retuned", "rescored", "pruned"]
    assert report.stages[4].about.startswith(BASELINE_INI.name) and report.stages[4].pairs == 1
    again = CliRunner().invoke(main, tune_args(tmp_path, fake_moses, model, "--runs", "1", "--also", "baseline",
                                               str(INI)))
    assert again.exit_code == 1 and "other systems need distinct names" in again.output


def test_the_baseline_rescored_is_its_own_row(tmp_path, fake_moses, model):
    """--rescore-baseline: the baseline's n-best lists get features too (Table 1's +CSLM row), compared with the
    baseline as tuned; the system's rescoring stays as it was."""
    result = CliRunner().invoke(main, tune_args(tmp_path, fake_moses, model, "--runs", "2", "--rescore-baseline",
                                                "unk"))
    assert result.exit_code == 0, result.output
    work = tmp_path / "work"
    report = read_report(str(work / "report.json"))
    assert [stage.name for stage in report.stages] == ["baseline", "baseline-retuned", "baseline-rescored", "system",
                                                       "retuned", "rescored"]
    rescored = report.stages[2]
    assert rescored.control == "baseline-retuned" and rescored.control_pairs == 4
    assert rescored.hypotheses == tuple(str(work / f"baseline-run{run}.rescored.test.hyp") for run in (1, 2))
    assert rescored.iterations == (1, 1) and set(rescored.weight_shares) == {"UNK0"} and rescored.pairs == 4
    assert "| baseline-rescored: baseline's 100-best lists rescored with unk |" in result.stdout
    args = tune_args(tmp_path, fake_moses, model, "--rescore-baseline", "unk")
    del args[args.index("--baseline"):args.index("--baseline") + 2]
    no_baseline = CliRunner().invoke(main, args)
    assert no_baseline.exit_code == 2 and "--rescore-baseline needs --baseline" in no_baseline.output


def test_the_baseline_control_alone(tmp_path, fake_moses, model):
    """--rescore-baseline with no feature: only the baseline's control, its lists re-tuned by the same MERT without
    any new feature (baseline-retuned), compared with the baseline: what a second tuning pass alone adds."""
    args = tune_args(tmp_path, fake_moses, model, "--rescore-baseline", "--runs", "2")
    at = args.index("--rescore")
    del args[at:at + 4]  # --rescore unk -m MODEL: the system is not rescored
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    work = tmp_path / "work"
    report = read_report(str(work / "report.json"))
    assert [stage.name for stage in report.stages] == ["baseline", "baseline-retuned", "system"]
    base, control = report.stages[:2]
    assert control.hypotheses == tuple(str(work / f"baseline-run{run}.retuned.test.hyp") for run in (1, 2))
    assert control.control is None and control.weight_shares == {} and control.iterations == (1, 1)
    assert control.delta == pytest.approx(statistics.mean(control.bleu) - statistics.mean(base.bleu))
    assert control.pairs == 4 and "(the control)" in control.about
    assert "baseline-retuned: baseline's n-best lists re-tuned by the same MERT without any new feature, so its Δ " \
           "vs baseline is what a second tuning pass alone adds" in result.stdout
    assert sorted(path.name for path in work.glob("*.nbest")) == [f"baseline-run{run}.{part}.nbest" for run in (1, 2)
                                                                  for part in ("dev", "test")]
    assert sum("-n-best-list" in call for call in calls(tmp_path)) == 4  # the baseline's dev and test lists
    assert not list(work.glob("*.rescored*")) and not list(work.glob("system-run*.retuned*"))
    plan = json.loads((work / "plan.json").read_text())
    assert plan["baseline_control"] is True and "baseline_rescoring" not in plan
    plain = RouteOptions.from_options(**{name: value for name, value in zip(
        ("dev_src", "dev_ref", "ini", "test_src", "test_ref", "work_dir"), (args[1], args[2], args[3], "t", "t", "w"))})
    assert "baseline_control" not in plain.plan.record()  # a tuning started before it continues
    dry = CliRunner().invoke(main, args + ["--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.count("# then the control alone: mosesrnn mert --init") == 2
    del args[args.index("--baseline"):args.index("--baseline") + 2]
    no_baseline = CliRunner().invoke(main, args)
    assert no_baseline.exit_code == 2 and "--rescore-baseline needs --baseline" in no_baseline.output


def test_select_on_half_tunes_on_one_half_of_dev_and_chooses_on_the_other(tmp_path, fake_moses, model):
    """--select-on half: every MERT tunes on the dev set's odd lines alone — Moses' (mert-moses.pl given those lines
    of the source and the reference) and mosesrnn's (the rescored stage and its control); every stage (the Moses-tuned
    ones by their dev decode's 1-best) is measured on the even lines with the same test, and the report's headline is
    the stage of the highest mean there, with its test BLEU."""
    args = tune_args(tmp_path, fake_moses, model, "--runs", "2", "--select-on", "half")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    work = tmp_path / "work"
    plan = json.loads((work / "plan.json").read_text())
    assert plan["select_on"] == "half" and plan["moses_tuned_on"] == "tuning half"
    tuners = [call.split() for call in calls(tmp_path) if call.startswith("mert-moses.pl")]
    assert len(tuners) == 4  # baseline and system, two runs each
    for name in ("dev.en", "dev.fr"):
        whole = (tmp_path / name).read_text(encoding="utf-8").splitlines()
        half = (work / "tuning-half" / name).read_text(encoding="utf-8").splitlines()
        assert half == whole[0::2] and len(half) == 7
    assert all(call[1:3] == [str(work / "tuning-half" / "dev.en"), str(work / "tuning-half" / "dev.fr")]
               for call in tuners), tuners
    made_with = json.loads((work / "system-run1" / "made-with.json").read_text())["files"]
    assert {entry["key"] for entry in made_with} >= {"dev source tuning half", "dev reference tuning half"}
    report = read_report(str(work / "report.json"))
    stages = {stage.name: stage for stage in report.stages}
    tune_half, held_out = list(range(0, 13, 2)), list(range(1, 13, 2))
    for files, weights in (("system-run1.dev.nbest", "system-run1.retuned.weights"),
                           ("system-run2.dev.nbest.rescored.gz", "system-run2.rescored.weights")):
        run = 1 if "run1" in files else 2
        init = str(work / f"system-run{run}" / "moses.ini")
        on_half = mert_nbest_files([str(work / files)], [str(tmp_path / "dev.fr")], init, "none", MertOptions(seed=run),
                                   tune_half)
        assert weights_text(named_weights(on_half.groups, on_half.weights)) == (work / weights).read_text()
    references = (tmp_path / "dev.fr").read_text(encoding="utf-8").splitlines()
    held_references = [references[at] for at in held_out]

    def held(path: str) -> list[str]:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        return [lines[at] for at in held_out]

    assert stages["baseline"].dev_hypotheses == tuple(str(work / f"baseline-run{k}.dev.hyp") for k in (1, 2))
    assert stages["rescored"].dev_hypotheses == tuple(str(work / f"system-run{k}.rescored.dev.hyp") for k in (1, 2))
    with rerank(str(work / "system-run1.dev.nbest.rescored.gz"),
                read_weights(str(work / "system-run1.rescored.weights"))) as texts:
        assert list(texts) == (work / "system-run1.rescored.dev.hyp").read_text(encoding="utf-8").splitlines()
    for stage in report.stages:
        by_hand = [sacrebleu.corpus_bleu(held(path), [held_references], tokenize="none", force=True).score
                   for path in stage.dev_hypotheses]
        assert list(stage.dev_bleu) == pytest.approx(by_hand, abs=1e-9), stage.name
    rescored, control, base = stages["rescored"], stages["retuned"], stages["baseline"]
    for other, (delta, p_value) in ((base, (rescored.dev_delta, rescored.dev_p_value)),
                                    (control, (rescored.dev_control_delta, rescored.dev_control_p_value))):
        expected = paired_p_value(held(rescored.dev_hypotheses[median_run(rescored.dev_bleu)]),
                                  held(other.dev_hypotheses[median_run(other.dev_bleu)]), held_references, "none")
        assert p_value == expected[1]
        assert delta == pytest.approx(statistics.mean(rescored.dev_bleu) - statistics.mean(other.dev_bleu))
    assert rescored.dev_pairs == rescored.dev_control_pairs == 4 and base.dev_delta is None
    chosen = max(report.stages, key=lambda stage: statistics.mean(stage.dev_bleu))
    assert report.selection == {"on": "half", "tuned_on": 7, "held_out": 6, "moses_tuned_on": "tuning half",
                                "chosen": chosen.name}
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"**Chosen on the held-out dev half: {chosen.name}** ({chosen.about}): dev-half BLEU "
                            f"{statistics.mean(chosen.dev_bleu):.2f} ± "), first
    assert f"its test BLEU {statistics.mean(chosen.bleu):.2f} ± " in first
    assert "| dev-half BLEU (mean ± std) | dev-half runs |" in result.stdout
    assert "every MERT, mert-moses.pl's for baseline, system and mosesrnn's for every rescored stage and control, " \
        "tuned on the 7 dev sentences at odd lines" in " ".join(result.stdout.split())
    assert "whole dev set" not in result.stdout
    assert "tuned on the 7 dev sentences at odd lines (of 13), 2 MERT runs per stage" in " ".join(result.stdout.split())
    assert (work / "report.md").read_text(encoding="utf-8") == result.stdout
    shown = CliRunner().invoke(main, ["mert-report", str(work)])
    assert shown.exit_code == 0 and first in shown.output, shown.output
    dry = CliRunner().invoke(main, args + ["--dry-run"])
    assert "# --select-on half: every MERT above, mert-moses.pl's and mosesrnn's, tunes on the dev set's odd lines" \
        in dry.stdout
    assert f"mert-moses.pl {work / 'tuning-half' / 'dev.en'} {work / 'tuning-half' / 'dev.fr'} " in dry.stdout


@pytest.mark.parametrize("lines, blank", [(1, False), (3, False), (13, True)], ids=["one-line", "three-lines",
                                                                                     "blank-held-out-references"])
def test_select_on_half_refuses_a_dev_set_too_small_to_hold_out_before_any_work(tmp_path, fake_moses, model, lines,
                                                                                 blank):
    """A held-out half of fewer than two sentences with a reference chooses on nothing: refused before MERT, the
    minimum named; a small one that can choose is said in a warning."""
    for side in ("en", "fr"):
        kept = (tmp_path / f"dev.{side}").read_text(encoding="utf-8").splitlines()[:lines]
        if blank and side == "fr":
            kept = [text if at % 2 == 0 else "" for at, text in enumerate(kept)]
        (tmp_path / f"dev.{side}").write_text("".join(text + "\n" for text in kept), encoding="utf-8")
    args = tune_args(tmp_path, fake_moses, model, "--runs", "1", "--select-on", "half")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "--select-on half" in result.output, result.output
    assert "it needs 2 at least, a dev set of 4 lines or more" in result.output
    assert calls(tmp_path) == [] and not (tmp_path / "work").exists()


def test_select_on_half_refuses_a_model_validated_on_the_dev_set_before_any_work(tmp_path, fake_moses, model):
    """A model file records what it was validated on (a --valid file by sha256): with --select-on half, a rescoring
    model validated on the dev reference (or source), whatever the file's name, read the held-out half and is refused
    in one line before any MERT; one validated on a share of its corpus is taken; one that predates the record (the
    tiny -m model) is taken with a warning that it cannot be checked. Without a selection, nothing is refused."""
    def cslm(name: str, *validation: str) -> str:
        trained = CliRunner().invoke(main, ["lm", "train", str(DATA / "tatoeba.train2k.tok.fr"), "-o",
                                            str(tmp_path / name), *validation, "--order", "3", "--vocab-size", "300",
                                            "--embed-dim", "8", "--hidden", "16", "--max-updates", "2",
                                            "--valid-every", "1", "--threads", "1", "-q"])
        assert trained.exit_code == 0, trained.output
        return str(tmp_path / name / "best.pt")

    for side, what in (("fr", "reference"), ("en", "source")):
        copy = tmp_path / f"held-out.{side}"
        copy.write_bytes((tmp_path / f"dev.{side}").read_bytes())
        on_dev = cslm(f"lm-{side}", "--valid", str(copy))
        args = _tune_into(tmp_path / "work", tune_args(tmp_path, fake_moses, model, "--runs", "1"),
                          ("--rescore", "unk,cslm"), ("--lm", on_dev))
        result = CliRunner().invoke(main, args + ["--select-on", "half"])
        assert result.exit_code == 1, result.output
        assert result.output.strip().splitlines()[-1] == (
            f"Error: cannot start tuning: --select-on half: {on_dev} was validated on {copy} (13 lines), the dev "
            f"{what} by content: it read the held-out half the stage is chosen on; train it on a share of its own "
            f"corpus (`--valid-share`), or tune without --select-on"), result.output
        assert calls(tmp_path) == [] and not (tmp_path / "work").exists()
        unselected = CliRunner().invoke(main, args + ["--dry-run"])
        assert unselected.exit_code == 0 and "# problem" not in unselected.stdout, unselected.output
    shared = cslm("lm-shared", "--valid-share", "0.05")
    args = _tune_into(tmp_path / "work", tune_args(tmp_path, fake_moses, model, "--runs", "1"),
                      ("--rescore", "unk,cslm"), ("--lm", shared), ("--select-on", "half"))
    dry = CliRunner().invoke(main, args + ["--dry-run"])
    assert dry.exit_code == 0 and "# problem" not in dry.stdout, dry.output
    assert (f"warning: --select-on half: no record of what {model} was validated on (trained by an older mosesrnn), "
            f"so whether the held-out dev half was read cannot be checked" in dry.stderr), dry.stderr
    assert shared not in dry.stderr


def test_nbest_distinct_without_a_rescoring_stage_is_refused(tmp_path, fake_moses, model):
    args = tune_args(tmp_path, fake_moses, model, "--nbest-distinct")
    at = args.index("--rescore")
    result = CliRunner().invoke(main, args[:at] + args[at + 4:])  # no --rescore unk -m MODEL: no rescoring stage
    assert result.exit_code == 1 and "--nbest-distinct shapes the rescoring stage's n-best lists" in result.output, \
        result.output
    assert calls(tmp_path) == [] and not (tmp_path / "work").exists()


@pytest.mark.parametrize("option", [("--nbest-size", "50"), ("--device", "cpu"), ("--dtype", "bf16")],
                         ids=lambda option: option[0])
def test_an_option_of_the_rescoring_stage_without_one_is_refused(tmp_path, fake_moses, model, option):
    args = tune_args(tmp_path, fake_moses, model, *option)
    at = args.index("--rescore")
    result = CliRunner().invoke(main, args[:at] + args[at + 4:])
    assert result.exit_code == 2 and f"{option[0]}: for the rescoring stage, and this tuning has none" in \
        result.output, result.output
    assert calls(tmp_path) == []
    assert CliRunner().invoke(main, args + ["--dry-run"]).exit_code == 0  # with one, it is read


def test_select_on_half_warns_of_a_small_held_out_half(tmp_path, fake_moses, model):
    dry = CliRunner().invoke(main, tune_args(tmp_path, fake_moses, model, "--select-on", "half", "--dry-run"))
    assert dry.exit_code == 0 and "# problem" not in dry.stdout, dry.output
    assert "warning: --select-on half: the held-out dev half" in dry.stderr and "has 6 sentences" in dry.stderr


def test_a_tuning_whose_lender_is_gone_is_one_line(tmp_path, fake_moses, model):
    """The runs linked from a --runs-from folder that was removed are named, with what to do, before any work."""
    first = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    assert CliRunner().invoke(main, first).exit_code == 0
    lender, again = tmp_path / "work", tmp_path / "again"
    args = _tune_into(again, first, ("--runs-from", str(lender)))
    assert CliRunner().invoke(main, args).exit_code == 0
    shutil.rmtree(lender)
    done = len(calls(tmp_path))
    at = args.index("--runs-from")
    result = CliRunner().invoke(main, args[:at] + args[at + 2:])
    assert result.exit_code == 1 and "which is gone" in result.output and "Traceback" not in result.output, \
        result.output
    assert f"{again}/baseline-run1 links to ../work/baseline-run1" in result.output
    assert [call for call in calls(tmp_path)[done:] if not call.endswith("-show-weights")] == []


def test_runs_tuned_on_the_whole_dev_set_are_not_lent_to_a_selecting_tuning(tmp_path, fake_moses, model):
    """Moses' MERT runs of a tuning without a selection read the whole dev set, the held-out half included: a tuning
    with --select-on half refuses them before any work, naming the lines they were not tuned on; and the reverse."""
    first = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    assert CliRunner().invoke(main, first).exit_code == 0
    lender, again = tmp_path / "work", tmp_path / "again"
    done = len(calls(tmp_path))
    result = CliRunner().invoke(main, _tune_into(again, first, ("--runs-from", str(lender)), ("--select-on", "half")))
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "the dev source's tuning half (odd lines), which Moses' MERT tunes on" in result.output
    assert [call for call in calls(tmp_path)[done:] if not call.endswith("-show-weights")] == []
    assert not (again / "baseline-run1").exists()
    selecting = tmp_path / "selecting"
    assert CliRunner().invoke(main, _tune_into(selecting, first, ("--select-on", "half"))).exit_code == 0
    back = CliRunner().invoke(main, _tune_into(tmp_path / "plain", first, ("--runs-from", str(selecting))))
    assert back.exit_code == 1 and "tuning half" in back.output, back.output


def test_a_selecting_tuning_takes_the_runs_of_another_selecting_tuning(tmp_path, fake_moses, model):
    """The Moses MERT runs, decodes and lists of a tuning with --select-on half serve another one (tune-base for the
    ladder's steps): tuned on the same odd lines, they are linked, and only the new rescoring runs."""
    pruned = tmp_path / "pruned.ini"
    pruned.write_bytes(INI.read_bytes())
    first = tune_args(tmp_path, fake_moses, model, "--runs", "1", "--also", "pruned", str(pruned), "--select-on",
                      "half")
    assert CliRunner().invoke(main, first).exit_code == 0
    lender, again = tmp_path / "work", tmp_path / "again"
    done = len(calls(tmp_path))
    result = CliRunner().invoke(main, _tune_into(again, first, ("--runs-from", str(lender))))
    assert result.exit_code == 0, result.output
    assert (again / "system-run1.dev.nbest").is_symlink() and (again / "system-run1.retuned.weights").is_symlink()
    assert [call for call in calls(tmp_path)[done:] if not call.endswith("-show-weights")] == []
    assert read_report(str(again / "report.json")).selection["moses_tuned_on"] == "tuning half"


def test_dry_run_prints_every_command(tmp_path, fake_moses, model):
    result = CliRunner().invoke(main, tune_args(tmp_path, fake_moses, model, "--dry-run", "--runs", "2"))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert sum(line.startswith(str(fake_moses / "scripts" / "training" / "mert-moses.pl")) for line in lines) == 4
    assert any("-n-best-list" in line and "system-run2.dev.nbest" in line for line in lines)
    assert not (tmp_path / "work").exists()  # a dry run leaves no folder behind


def test_without_moses_every_missing_program_is_named(tmp_path, model):
    result = CliRunner().invoke(main, ["tune", str(SOURCE), str(REFERENCE), str(INI), "--test-src", str(SOURCE),
                                       "--test-ref", str(REFERENCE), "--work-dir", str(tmp_path / "work")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "moses (the decoder) not found" in result.output and "also: mert-moses.pl not found" in result.output


def test_relative_table_paths_are_refused(tmp_path, fake_moses, model):
    ini = tmp_path / "moses.ini"
    ini.write_text("[feature]\nPhraseDictionaryMemory name=TranslationModel0 num-features=4 path=pt.gz "
                   "input-factor=0 output-factor=0\n\n[weight]\nTranslationModel0= 0.2 0.2 0.2 0.2\n")
    args = tune_args(tmp_path, fake_moses, model)
    args[3] = str(ini)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "path=pt.gz is relative, but mert-moses.pl decodes inside" in result.output


# -- the pieces -----------------------------------------------------------------------------------------


def test_mert_command_passes_the_options_and_continues_a_stopped_run(tmp_path, fake_moses):
    tools, problems = find_tools(str(fake_moses / "bin"), str(fake_moses / "scripts"))
    assert problems == []
    settings = MertSettings(threads=8, nbest=200, maximum_iterations=10, batch_mira=True, return_best_dev=True)
    command = mert_command(tools, settings, str(SOURCE), str(REFERENCE), str(INI), str(tmp_path / "run2"))
    assert command == [str(fake_moses / "scripts" / "training" / "mert-moses.pl"), str(SOURCE), str(REFERENCE),
                       str(fake_moses / "bin" / "moses"), str(INI), "--mertdir", str(fake_moses / "bin"),
                       "--working-dir", str(tmp_path / "run2"), "--decoder-flags", "-threads 8", "--threads", "8",
                       "--nbest", "200", "--maximum-iterations", "10", "--batch-mira", "--return-best-dev"]
    alone = mert_command(tools, MertSettings(), str(SOURCE), str(REFERENCE), str(INI), str(tmp_path / "r"), True)
    assert alone[-3:] == ["--decoder-flags", "-threads 1", "--continue"] and "--threads" not in alone


@pytest.mark.parametrize("settings, programs", [
    (MertSettings(), ("extractor", "mert")), (MertSettings(batch_mira=True), ("extractor", "kbmira")),
    (MertSettings(return_best_dev=True), ("extractor", "mert", "evaluator"))])
def test_a_run_records_the_mert_programs_mert_moses_runs(settings, programs):
    """mert-moses.pl needs all five programs in the mertdir but runs these (its made-with.json records them)."""
    assert mertdir_programs_run(settings) == programs


def test_every_missing_tool_is_named_with_what_to_set(tmp_path, fake_moses, monkeypatch):
    _, problems = find_tools()
    assert problems[0].startswith("moses (the decoder) not found (searched $MOSES_BIN (not set), PATH)")
    assert "mert-moses.pl not found" in problems[1] and "set MOSES_SCRIPTS" in problems[1]
    (fake_moses / "bin" / "kbmira").unlink()
    monkeypatch.setenv("MOSES_BIN", str(fake_moses / "bin"))
    monkeypatch.setenv("MOSES_SCRIPTS", str(fake_moses / "scripts"))
    _, problems = find_tools()
    assert problems == [f"kbmira not found in the mertdir {fake_moses / 'bin'} (mert-moses.pl needs extractor, "
                        "mert, kbmira, pro, evaluator there): build Moses with its mert tools or pass --mertdir"]


def test_relative_paths_of_a_real_ini():
    ini = DATA / "moses" / "mini-system-fr-en.moses.ini"
    assert relative_paths(str(ini)) == [f"{ini}:17: path=europarl.en.lm",
                                        f"{ini}:19: path=reordering-table.msd-bidirectional-fe.0.5.0-0.gz",
                                        f"{ini}:22: path=phrase-table.0-0.gz"]


def test_the_decoding_speed_leaves_out_a_line_another_thread_cut(tmp_path):
    """Moses decoding with -threads 2 writes both threads' lines into one log; one cut by the other (as the Tatoeba
    ladder's distinct decode left, which stopped the report) is left out, and the others give the speed."""
    log = tmp_path / "test.hyp.log"
    log.write_bytes(b"Line 0: Translation took 0.500 seconds total\n"
                    b"Line 1: Translation took 0.065Line 2: Translation took 0.000 seconds total\n"
                    b"Line 3: Translation took 1.500 seconds total\n"
                    b"Line 1: Translation took 0.0650.000 seconds total\n")
    assert decoding_speed(str(log)) == pytest.approx(3 / 2.0)


def test_weights_table_has_a_row_per_weight_and_a_column_per_run():
    tuned = {"run1": read_weights(str(TUNED_WEIGHTS)), "run2": {"LM0": (0.4,), "CSLM": (0.1,)}}
    rows = {line.split()[0]: line.split()[1:] for line in weights_table(tuned).splitlines()}
    assert rows["weight"] == ["run1", "run2"] and rows["LM0"] == ["0.113806", "0.4"]
    assert rows["LexicalReordering0[5]"] == ["0.0328172", "-"] and rows["CSLM"] == ["-", "0.1"]


def test_file_bleu_is_sacrebleus_and_refuses_a_short_hypothesis(tmp_path):
    hypothesis = tmp_path / "hyp"
    hypothesis.write_text(perturbed(REFERENCE, 5), encoding="utf-8")
    score, signature = file_bleu(str(hypothesis), str(REFERENCE))
    expected = sacrebleu.corpus_bleu(hypothesis.read_text().splitlines(), [REFERENCE.read_text().splitlines()])
    assert score == pytest.approx(expected.score, abs=1e-9)
    assert signature.startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    hypothesis.write_text("un\ndeux\n")
    with pytest.raises(ValueError, match="has 2 lines but .* has 30"):
        file_bleu(str(hypothesis), str(REFERENCE))
    assert mean_std([20.0, 22.0, 24.0]) == (22.0, 2.0) and mean_std([21.5]) == (21.5, None)


def test_help_explains_every_option():
    text = CliRunner().invoke(main, ["tune", "--help"]).output
    for option in ("--work-dir", "--runs", "--threads", "--moses-bin", "--moses-scripts", "--mertdir", "--batch-mira",
                   "--nbest", "--maximum-iterations", "--return-best-dev", "--test-src", "--test-ref", "--baseline",
                   "--tokenize", "--dry-run", "--rescore", "--rescore-baseline", "--lm", "--model", "--reverse-model",
                   "--vocab", "--nbest-size", "--select-on", "--runs-from"):
        assert option in text


def test_the_command_collects_every_option_in_one_call(tmp_path):
    """``tune`` hands its options to RouteOptions.from_options by name: each lands in the plan, its MERT settings,
    its rescoring or the places of Moses' programs, and a name none of them takes is refused."""
    command = main.get_command(click.Context(main), "tune")
    args = [str(SOURCE), str(REFERENCE), str(INI), "--test-src", str(SOURCE), "--test-ref", str(REFERENCE), "--rescore",
            "unk", "--threads", "4", "--nbest", "50", "--also", "pruned", str(INI), "--moses-bin", str(tmp_path)]
    context = command.make_context("tune", args)
    options = {name: value for name, value in context.params.items() if name not in ("dry_run", "quiet")}
    route = RouteOptions.from_options(**options)
    assert route.plan.mert == MertSettings(threads=4, nbest=50)
    assert route.plan.rescoring.features == ("unk",) and route.plan.rescoring.threads == 4
    assert route.plan.others == (("pruned", str(INI)),) and route.plan.baseline_rescoring is None
    assert route.moses_bin == str(tmp_path) and route.plan.work_dir == "tune" and route.plan.ini == str(INI)
    with pytest.raises(TypeError, match="no option colour"):
        RouteOptions.from_options(**options, colour="red")


def _moses_root() -> Path:
    """A real Moses build (``$MOSES_BIN``'s parent, else ``~/moses/mosesdecoder``), or a skip saying how to get one."""
    for folder in (_MOSES_BIN_GIVEN, os.path.expanduser("~/moses/mosesdecoder/bin")):
        if folder and not find_tools(folder, os.path.join(folder, "..", "scripts"))[1]:
            return Path(folder).parent
    pytest.skip("a real Moses is absent ($MOSES_BIN, ~/moses/mosesdecoder/bin): build it with build-moses.sh to run "
                "the route end to end")


def test_the_route_with_real_moses(tmp_path):
    """The whole command on Moses' mini fr->en system (its 5 sentences as dev and test set), the table with
    the rnn and unk columns against the table as it is, rescored with unk: interrupted once, then continued."""
    import signal
    import time

    from conftest import shared_file
    root = _moses_root()
    mini = shared_file("moses-regression-tests/mini-system-fr-en/moses.ini").parent
    runner = CliRunner()
    base, system = tmp_path / "base.ini", tmp_path / "system.ini"
    assert runner.invoke(main, ["moses-ini", str(mini / "moses.ini"), "--absolute-paths", "--relative-to", str(mini),
                                "-o", str(base)]).exit_code == 0
    assert runner.invoke(main, ["moses-ini", str(base), "--table", str(DATA / "moses" / "mini-system.phrase-table."
                                "rnn-unk.gz"), "--features", "rnn,unk", "-o", str(system)]).exit_code == 0
    assert runner.invoke(main, ["vocab", str(mini / "phrase-table.0-0.gz"), "-o", str(tmp_path / "vocab"), "--size",
                                "2000"]).exit_code == 0
    translations = [line.split("=", 1)[1] for line in (mini / "expected-output.txt").read_text().splitlines()
                    if line.startswith("TRANSLATION_")]  # what the system translates: a reference to tune to
    (tmp_path / "ref.en").write_text("\n".join(translations) + "\n")
    command = [sys.executable, "-m", "mosesrnn", "tune", str(mini / "input.fr"), str(tmp_path / "ref.en"),
               str(system), "--baseline", str(base), "--test-src", str(mini / "input.fr"), "--test-ref",
               str(tmp_path / "ref.en"), "--runs", "2", "--maximum-iterations", "2", "--rescore", "unk",
               "--vocab", str(tmp_path / "vocab"), "--nbest-size", "20", "--work-dir", str(tmp_path / "work"),
               "--moses-bin", str(root / "bin"), "--moses-scripts", str(root / "scripts")]
    started = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while started.poll() is None and time.monotonic() < deadline and \
            not list((tmp_path / "work").glob("baseline-run1/run1.moses.ini")):
        time.sleep(0.2)
    started.send_signal(signal.SIGINT)
    _, stderr = started.communicate(timeout=300)
    assert started.returncode == 130 and "Traceback" not in stderr, stderr
    finished = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    assert finished.returncode == 0, finished.stderr
    report = read_report(str(tmp_path / "work" / "report.json"))
    assert [stage.name for stage in report.stages] == ["baseline", "system", "retuned", "rescored"]
    assert all(len(stage.bleu) == 2 for stage in report.stages)
    # the two columns the system adds (named Feature[index]: this table has no sidecar to name them)
    assert set(report.stages[1].weight_shares) == {"PhraseDictionaryMemory0[5]", "PhraseDictionaryMemory0[6]"}
    assert json.loads((tmp_path / "work" / "plan.json").read_text())["runs"] == 2


@pytest.mark.parametrize("extra,message", [
    (("--rescore", "cslm"), "the cslm rescoring feature needs its model file: give --lm"),
    (("--lm", "{model}"), "is an RNN Encoder-Decoder (a translation model, from `mosesrnn train`), but --lm takes "
                          "a CSLM"),
    (("--rescore", "rnn", "--vocab", str(DATA / "moses")), "the rnn rescoring feature needs its model file: give -m"),
    (("-m", "{model}", "--reverse-model", "{model}"), "--reverse-model {model} was trained source-to-target"),
])
def test_a_rescoring_that_would_fail_is_refused_before_any_stage(tmp_path, fake_moses, model, extra, message):
    """An hour of MERT is not lost to a typo: the later stages' models are checked before the first starts."""
    args = tune_args(tmp_path, fake_moses, model)
    at = args.index("--rescore")
    del args[at:at + 4]  # --rescore unk -m MODEL
    result = CliRunner().invoke(main, args + [value.format(model=model) for value in extra])
    assert result.exit_code == 1 and message.format(model=model) in result.output, result.output
    assert calls(tmp_path) == [] and not (tmp_path / "work" / "plan.json").exists()


def test_a_model_that_computes_no_number_is_refused_before_any_stage(tmp_path, fake_moses, model, monkeypatch):
    """A feature that computes NaN for an empty line (as the attention model did: Moses decodes an empty line to an
    empty one) would fill the lists MERT made: each rescoring feature computes the dev set's first sentence and an
    empty line before the first stage, and a value that is no number is refused there."""
    from mosesrnn.features.rnn import RNNFeature
    log_probs = RNNFeature.values
    monkeypatch.setattr(RNNFeature, "values", lambda self, pairs: [
        math.nan if not pair.source else value for pair, value in zip(pairs, log_probs(self, pairs))])
    args = tune_args(tmp_path, fake_moses, model)
    args[args.index("--rescore") + 1] = "rnn"
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "the rnn rescoring feature computes nan for '' given ''" in result.output, \
        result.output
    assert calls(tmp_path) == [] and not (tmp_path / "work").exists()


def test_the_joint_model_needs_a_table_with_word_alignments(tmp_path, fake_moses, model):
    from scoring_helpers import save_tiny_joint_model
    ini = tmp_path / "moses.ini"
    table = DATA / "moses" / "mini-system.phrase-table.2k.gz"  # no word alignments
    ini.write_text(f"[feature]\nPhraseDictionaryMemory name=TranslationModel0 num-features=4 path={table} "
                   "input-factor=0 output-factor=0\n\n[weight]\nTranslationModel0= 0.2 0.2 0.2 0.2\n")
    args = tune_args(tmp_path, fake_moses, model)
    args[3] = str(ini)
    at = args.index("--rescore")
    args[at:at + 4] = ["--rescore", "bilm", "--bilm", save_tiny_joint_model(str(tmp_path / "bilm.pt"))]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and f"{table}:1: no word alignment" in result.output, result.output
    assert calls(tmp_path) == []
    dry = CliRunner().invoke(main, args + ["--dry-run"])
    assert "-include-segmentation-in-n-best -print-alignment-info-in-n-best" in dry.stdout


def test_the_joint_models_of_the_other_directions_rescore_as_their_own_features(tmp_path, fake_moses, model):
    """--bilm-t2s (and -r2l, -t2s-r2l) name features of their own: the lists are decoded with word alignments, and
    a model file of another direction is refused before any stage."""
    from scoring_helpers import save_tiny_joint_model
    args = tune_args(tmp_path, fake_moses, model)
    at = args.index("--rescore")
    t2s = save_tiny_joint_model(str(tmp_path / "t2s.pt"), feature="bilm-t2s")
    args[at:at + 4] = ["--rescore", "bilm,bilm-t2s", "--bilm", save_tiny_joint_model(str(tmp_path / "bilm.pt")),
                       "--bilm-t2s", t2s]
    dry = CliRunner().invoke(main, args + ["--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "-include-segmentation-in-n-best -print-alignment-info-in-n-best" in dry.stdout
    assert "bilm,bilm-t2s" in dry.stdout
    wrong = args[:at + 4] + ["--bilm-r2l", t2s] + args[at + 6:]
    wrong[at + 1] = "bilm,bilm-r2l"
    result = CliRunner().invoke(main, wrong)
    assert result.exit_code == 1
    assert (f"{t2s} is a target-to-source, left-to-right joint model, but the bilm-r2l feature (--bilm-r2l) takes a "
            f"source-to-target, right-to-left one: give it as --bilm-t2s" in result.output), result.output
    assert calls(tmp_path) == [] and not (tmp_path / "work" / "plan.json").exists()


def test_a_report_travels_with_its_folder(tmp_path, fake_moses, model, monkeypatch):
    """report.json names its translations relative to its own folder: a copied folder reads back from anywhere."""
    monkeypatch.chdir(tmp_path)
    args = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    args[args.index("--work-dir") + 1] = "work"  # relative, as a user types it
    assert CliRunner().invoke(main, args).exit_code == 0
    shutil.copytree(tmp_path / "work", tmp_path / "elsewhere" / "copy")
    shutil.rmtree(tmp_path / "work")
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "other")
    result = CliRunner().invoke(main, ["mert-report", str(tmp_path / "elsewhere" / "copy"), "--against", "system"])
    assert result.exit_code == 0, result.output
    assert "| Δ vs system |" in result.stdout


def test_a_report_is_published_without_machine_paths_and_reads_back(tmp_path, fake_moses, model, monkeypatch):
    """mert-report --publish: report.json and plan.json with every absolute path relative to the folder the tuning
    ran in, report.md rendered from them; read back from that folder, the translations are found."""
    monkeypatch.chdir(tmp_path)
    args = tune_args(tmp_path, fake_moses, model, "--runs", "2", "--select-on", "half")
    assert CliRunner().invoke(main, args).exit_code == 0
    published = tmp_path / "repo" / "docs" / "results" / "example"
    result = CliRunner().invoke(main, ["mert-report", str(tmp_path / "work"), "--publish", str(published)])
    assert result.exit_code == 0, result.output
    assert sorted(path.name for path in published.iterdir()) == ["hyp", "plan.json", "ref", "report.json", "report.md"]
    assert sorted(path.name for path in (published / "ref").iterdir()) == ["dev.gz", "test.gz"]
    assert "now write " + str(published / "COMMANDS.md") in result.output

    def strings(value):
        if isinstance(value, dict):
            return [*value, *(s for item in value.values() for s in strings(item))]
        return [s for item in value for s in strings(item)] if isinstance(value, list) else [value]

    for name in ("report.json", "plan.json"):
        text = (published / name).read_text(encoding="utf-8")
        assert str(tmp_path) not in text, name
        assert not [s for s in strings(json.loads(text)) if isinstance(s, str) and s.startswith("/")], name
    record = json.loads((published / "report.json").read_text(encoding="utf-8"))
    assert record["test"]["reference"] == "ref/test.gz"
    assert record["stages"][0]["hypotheses"][0] == "hyp/baseline.run1.test.gz"
    report = read_report(str(published / "report.json"))
    original = read_report(str(tmp_path / "work" / "report.json"))
    assert [stage.bleu for stage in report.stages] == [stage.bleu for stage in original.stages]
    for stage, before in zip(report.stages, original.stages):  # the translations and references travel with it
        for copy, source in zip(stage.hypotheses + stage.dev_hypotheses, before.hypotheses + before.dev_hypotheses):
            assert copy.startswith(str(published)) and read_lines(copy) == read_lines(source)
    assert read_lines(report.test["reference"]) == read_lines(original.test["reference"])
    assert (published / "report.md").read_text(encoding="utf-8") == markdown(report)
    assert str(tmp_path) not in (published / "report.md").read_text(encoding="utf-8")
    again = CliRunner().invoke(main, ["mert-report", str(published), "--against", "system"])  # from where it ran
    assert again.exit_code == 0 and "| Δ vs system |" in again.stdout, again.output
    alone = CliRunner().invoke(main, ["mert-report", str(tmp_path / "work"), "--publish", str(published), "--against",
                                      "system"])
    assert alone.exit_code == 2 and "--publish goes alone" in alone.output


def test_publishing_never_overwrites_a_tuning_nor_a_publication_without_force(tmp_path, fake_moses, model,
                                                                              monkeypatch):
    """--publish into another tuning's working folder is refused, --force or not: its report and plan are that
    tuning's own. Over an earlier publication it needs --force, which removes the old COMMANDS.md too."""
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(main, tune_args(tmp_path, fake_moses, model, "--runs", "1")).exit_code == 0
    work, other = tmp_path / "work", tmp_path / "other"
    shutil.copytree(work, other)
    before = {path: path.read_bytes() for path in other.rglob("*") if path.is_file()}
    for force in ([], ["--force"]):
        result = CliRunner().invoke(main, ["mert-report", str(work), "--publish", str(other), *force])
        assert result.exit_code == 1 and "is the working folder of a `mosesrnn tune`" in result.output, result.output
    assert {path: path.read_bytes() for path in other.rglob("*") if path.is_file()} == before
    published = tmp_path / "published"
    assert CliRunner().invoke(main, ["mert-report", str(work), "--publish", str(published)]).exit_code == 0
    (published / "COMMANDS.md").write_text("the commands of the first report\n")
    (published / "report.md").write_text("edited\n")
    again = CliRunner().invoke(main, ["mert-report", str(work), "--publish", str(published)])
    assert again.exit_code == 1 and "holds a publication already" in again.output and "--force" in again.output
    assert (published / "report.md").read_text() == "edited\n" and (published / "COMMANDS.md").exists()
    forced = CliRunner().invoke(main, ["mert-report", str(work), "--publish", str(published), "--force"])
    assert forced.exit_code == 0, forced.output
    assert sorted(path.name for path in published.iterdir()) == ["hyp", "plan.json", "ref", "report.json", "report.md"]
    alone = CliRunner().invoke(main, ["mert-report", str(work), "--force"])
    assert alone.exit_code == 2 and "--force goes with --publish" in alone.output
    (tmp_path / "choice").mkdir()
    (tmp_path / "choice" / "choice.json").write_text("{}\n")
    into_choice = CliRunner().invoke(main, ["mert-report", str(work), "--publish", str(tmp_path / "choice"), "--force"])
    assert into_choice.exit_code == 1 and "holds a choice among tunings" in into_choice.output, into_choice.output
    assert sorted(os.listdir(tmp_path / "choice")) == ["choice.json"]


def _tune_into(folder: Path, args: list[str], *options: tuple[str, str]) -> list[str]:
    """``args`` tuning into ``folder``, each of ``options`` (``(name, value)``) set or added."""
    args = list(args)
    for name, value in (("--work-dir", str(folder)), *options):
        if name in args:
            args[args.index(name) + 1] = value
        else:
            args += [name, value]
    return args


def test_another_tunings_runs_are_taken_not_run_again(tmp_path, fake_moses, model):
    """--runs-from: the finished Moses MERT runs of the same moses.ini, their decodes and n-best lists (and their
    control: the same lists through the same MERT) are linked, so a new rescoring costs no decoding; what the lender
    lacks (the baseline's n-best lists) is decoded here, into this folder, and nothing is written through a link."""
    first = tune_args(tmp_path, fake_moses, model, "--runs", "2")
    assert CliRunner().invoke(main, first).exit_code == 0
    lender, again = tmp_path / "work", tmp_path / "again"
    before = {path: path.read_bytes() for path in lender.rglob("*") if path.is_file()}
    done = len(calls(tmp_path))
    args = _tune_into(again, first, ("--rescore-baseline", "unk"), ("--runs-from", str(lender)))
    dry = CliRunner().invoke(main, args + ["--dry-run"])
    assert dry.exit_code == 0 and dry.stdout.count(f"# linked to {lender}/") == 4, dry.output
    assert (f"# linked to {lender}/system-run2's files (--runs-from): system-run2, system-run2.dev.hyp, "
            "system-run2.dev.hyp.log, system-run2.dev.nbest, system-run2.log, system-run2.retuned.test.hyp, "
            "system-run2.retuned.weights, system-run2.test.hyp, system-run2.test.hyp.log, system-run2.test.nbest\n"
            in dry.stdout)
    assert "mert-moses.pl" not in dry.stdout and dry.stdout.count("-n-best-list") == 4  # the baseline's lists alone
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    new_calls = [call for call in calls(tmp_path)[done:] if not call.endswith("-show-weights")]
    assert [call.split()[0] for call in new_calls] == ["moses"] * 4  # no MERT; two lists of each baseline run
    assert all(f"{again}/baseline-run" in call for call in new_calls)
    for name in ("system-run1", "system-run2.test.nbest", "system-run2.dev.nbest", "system-run1.retuned.weights",
                 "baseline-run2", "baseline-run2.log"):
        assert (again / name).is_symlink(), name
    assert not (again / "baseline-run1.test.hyp").is_symlink() and (again / "baseline-run1.test.nbest").is_file()
    assert {path: path.read_bytes() for path in lender.rglob("*") if path.is_file()} == before
    old = {stage.name: stage for stage in read_report(str(lender / "report.json")).stages}
    new = {stage.name: stage for stage in read_report(str(again / "report.json")).stages}
    assert list(new) == ["baseline", "baseline-retuned", "baseline-rescored", "system", "retuned", "rescored"]
    for name in old:
        assert new[name].bleu == old[name].bleu, name
    assert CliRunner().invoke(main, args).exit_code == 0  # the same command continues (here: finds it done)
    (again / "system-run1").unlink()  # linking stopped before the run's folder: the same command links the rest
    assert CliRunner().invoke(main, args).exit_code == 0 and (again / "system-run1").is_symlink()
    assert len([call for call in calls(tmp_path)[done:] if not call.endswith("-show-weights")]) == 4


def test_runs_from_lists_without_word_alignments_lends_only_its_mert_runs(tmp_path, fake_moses, model):
    """A joint model reads each hypothesis' word alignment: lists decoded without it are decoded again (with it),
    and the test decode with them; only the MERT run is taken."""
    from scoring_helpers import save_tiny_joint_model
    first = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    assert CliRunner().invoke(main, first).exit_code == 0
    lender = tmp_path / "work"
    args = _tune_into(tmp_path / "again", first, ("--rescore", "bilm"), ("-m", model), ("--runs-from", str(lender)),
                      ("--bilm", save_tiny_joint_model(str(tmp_path / "bilm.pt"))))
    dry = CliRunner().invoke(main, args + ["--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"# linked to {lender}/system-run1's files (--runs-from): system-run1, system-run1.log\n" in dry.stdout
    decodes = [line for line in dry.stdout.splitlines() if "system-run1" in line and "-n-best-list" in line]
    assert len(decodes) == 2 and all("-print-alignment-info-in-n-best" in line for line in decodes)


def test_distinct_lists_are_decoded_again_and_only_the_mert_runs_lent(tmp_path, fake_moses, model):
    """--nbest-distinct asks Moses for distinct translations; lists of the other kind are not lent (nor the test
    decode and control made with them), the MERT runs are; the plan records the choice only when it is made."""
    first = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    assert CliRunner().invoke(main, first).exit_code == 0
    assert "nbest_distinct" not in json.loads((tmp_path / "work" / "plan.json").read_text())
    lender = tmp_path / "work"
    args = _tune_into(tmp_path / "again", first, ("--runs-from", str(lender))) + ["--nbest-distinct"]
    dry = CliRunner().invoke(main, args + ["--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"# linked to {lender}/system-run1's files (--runs-from): system-run1, system-run1.log\n" in dry.stdout
    decodes = [line for line in dry.stdout.splitlines() if "system-run1" in line and "-n-best-list" in line]
    assert len(decodes) == 2 and all(" 100 distinct" in line for line in decodes), decodes
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "again" / "plan.json").read_text())["nbest_distinct"] is True
    assert "100-best distinct lists rescored with" in (tmp_path / "again" / "report.md").read_text()
    assert not (tmp_path / "again" / "system-run1.dev.nbest").is_symlink()


def test_runs_from_another_kind_of_tuning_is_refused_before_any_work(tmp_path, fake_moses, model):
    first = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    assert CliRunner().invoke(main, first).exit_code == 0
    done = len(calls(tmp_path))
    (tmp_path / "copy.fr").write_bytes((tmp_path / "test.fr").read_bytes())
    (tmp_path / "empty").mkdir()
    other_ini = tmp_path / "other.ini"
    other_ini.write_bytes(INI.read_bytes() + b"\n")
    lender = str(tmp_path / "work")
    cases = [([("--test-ref", str(tmp_path / "copy.fr"))], lender, "tuned with other test_ref"),
             ([("--maximum-iterations", "3")], lender, "tuned with other mert maximum_iterations"),
             ([], str(tmp_path / "empty"), "no plan.json of a `mosesrnn tune` there"),
             ([("--baseline", str(other_ini))], lender, None)]
    for options, folder, problem in cases:
        args = _tune_into(tmp_path / "again", first, *options, ("--runs-from", folder))
        if problem is None:  # the baseline is new, the system is not: it is taken, the baseline tuned
            dry = CliRunner().invoke(main, args + ["--dry-run"])
            assert dry.exit_code == 0 and dry.stdout.count("mert-moses.pl") == 1, dry.output
            continue
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1 and problem in result.output, (options, result.output)
    args = _tune_into(tmp_path / "again", first, ("--baseline", str(other_ini)), ("--runs-from", lender))
    args[3] = str(other_ini)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and f"tuned none of {other_ini}, {other_ini}" in result.output, result.output
    assert len(calls(tmp_path)) == done and not (tmp_path / "again").exists()


def _system_naming(tmp_path: Path) -> tuple[Path, Path]:
    """A moses.ini whose phrase table is a file of ``tmp_path`` (the stand-in decoder reads neither), and that file."""
    table = tmp_path / "phrase-table.gz"
    table.write_bytes(gzip.compress(b"a ||| b ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| |||\n", mtime=0))
    ini = tmp_path / "system.ini"
    ini.write_text(INI.read_text(encoding="utf-8").replace("${MODEL_PATH}/basic-surface-only/phrase-table.gz",
                                                           str(table)), encoding="utf-8")
    return ini, table


@pytest.mark.parametrize("change", ["moses.ini", "model file", "decoder", "mert", "mert-moses.pl"])
def test_runs_made_with_other_content_are_neither_lent_nor_continued(tmp_path, fake_moses, model, change):
    """A run records the sha256 of what it was made with (made-with.json): a moses.ini edited to the same size, a
    file it names re-exported, a rebuilt decoder, a rebuilt mert program, another mert-moses.pl are each refused in
    one line naming the file, before any work, by --runs-from and by the same command continuing its own folder."""
    ini, table = _system_naming(tmp_path)
    first = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    first[3] = str(ini)
    assert CliRunner().invoke(main, first).exit_code == 0
    lender = tmp_path / "work"
    record = json.loads((lender / "system-run1" / "made-with.json").read_text())
    assert {(entry["what"], entry["path"]) for entry in record["files"]} >= {
        ("the moses.ini", str(ini)), ("the file the moses.ini names", str(table)),
        ("the decoder", str(fake_moses / "bin" / "moses")), ("the dev source", str(tmp_path / "dev.en")),
        ("the tuning script", str(fake_moses / "scripts" / "training" / "mert-moses.pl")),
        ("the MERT program", str(fake_moses / "bin" / "extractor")),
        ("the MERT program", str(fake_moses / "bin" / "mert"))}
    assert not {"kbmira", "pro", "evaluator"} & {Path(entry["path"]).name for entry in record["files"]}  # not run
    args = _tune_into(tmp_path / "again", first, ("--runs-from", str(lender)))
    assert CliRunner().invoke(main, args + ["--dry-run"]).stdout.count("# linked to") == 2  # all the same: lent
    if change == "moses.ini":
        text = ini.read_text(encoding="utf-8")
        ini.write_text(text.replace("0.00402447", "0.00402448"), encoding="utf-8")
        assert len(ini.read_text(encoding="utf-8")) == len(text)
        named, runs = f"the moses.ini {ini}", "system-run1"
    elif change == "model file":
        table.write_bytes(gzip.compress(b"a ||| b ||| 0.5 0.5 0.5 0.6 ||| 0-0 ||| |||\n", mtime=0))
        named, runs = f"the file the moses.ini names {table}", "system-run1"
    elif change == "decoder":
        decoder = fake_moses / "bin" / "moses"
        decoder.write_text(decoder.read_text() + "# rebuilt\n")
        named, runs = f"the decoder {decoder}", "baseline-run1, system-run1"
    else:
        program = fake_moses / "bin" / "mert" if change == "mert" else fake_moses / "scripts" / "training" / change
        program.write_text(program.read_text() + "# rebuilt\n")
        what = "the MERT program" if change == "mert" else "the tuning script"
        named, runs = f"{what} {program}", "baseline-run1, system-run1"
    done = len(calls(tmp_path))
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert result.output.strip() == (f"Error: cannot start tuning: --runs-from {lender}: {named} changed since {runs} "
                                     f"were made (each run's made-with.json): its runs cannot serve this tuning; tune "
                                     f"without --runs-from"), result.output
    assert len(calls(tmp_path)) == done and not (tmp_path / "again").exists()
    again = CliRunner().invoke(main, first)  # the tuning's own folder: not continued with other files either
    assert again.exit_code == 1 and f"{lender}: {named} changed since {runs} were made" in again.output, again.output
    assert len(calls(tmp_path)) == done


def test_runs_without_a_record_continue_here_but_are_not_lent(tmp_path, fake_moses, model):
    """A run made before runs recorded what they were made with: its own tuning continues it as before; another
    tuning does not take it (nothing can be checked)."""
    first = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    assert CliRunner().invoke(main, first).exit_code == 0
    lender = tmp_path / "work"
    (lender / "system-run1" / "made-with.json").unlink()
    (lender / "report.json").unlink()
    assert CliRunner().invoke(main, first).exit_code == 0 and (lender / "report.json").exists()
    result = CliRunner().invoke(main, _tune_into(tmp_path / "again", first, ("--runs-from", str(lender))))
    assert result.exit_code == 1
    assert (f"--runs-from {lender}: no made-with.json in system-run1 (made by a mosesrnn that did not record what a "
            f"run was made with)" in result.output), result.output


def test_runs_recorded_before_the_mert_programs_continue_and_are_lent_with_a_warning(tmp_path, fake_moses, model):
    """A made-with.json of version 1 holds neither mert-moses.pl nor the MERT programs: it is compared without them,
    so its run continues and is lent (a rebuilt mert cannot be seen), with a warning that says so."""
    first = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    assert CliRunner().invoke(main, first).exit_code == 0
    lender = tmp_path / "work"
    for run in ("baseline-run1", "system-run1"):
        path = lender / run / "made-with.json"
        record = json.loads(path.read_text())
        record["version"] = 1
        record["files"] = [entry for entry in record["files"] if entry["what"] not in ("the tuning script",
                                                                                       "the MERT program")]
        path.write_text(json.dumps(record))
    (fake_moses / "bin" / "mert").write_text("#!/bin/sh\n# rebuilt\n")
    (lender / "report.json").unlink()
    again = CliRunner().invoke(main, first)
    assert again.exit_code == 0 and (lender / "report.json").exists(), again.output
    assert (f"warning: {lender}/baseline-run1, {lender}/system-run1: their made-with.json (version 1) recorded "
            f"neither mert-moses.pl nor the MERT programs" in again.output), again.output
    lent = CliRunner().invoke(main, _tune_into(tmp_path / "again", first, ("--runs-from", str(lender))))
    assert lent.exit_code == 0 and (tmp_path / "again" / "system-run1").is_symlink(), lent.output
    assert "their made-with.json (version 1)" in lent.output
    assert json.loads((lender / "system-run1" / "made-with.json").read_text())["version"] == 1  # never rewritten


def test_a_run_changed_while_it_was_made_is_refused_when_it_ends(tmp_path, fake_moses, model):
    """A file that changes while mert-moses.pl runs (a model re-exported under a running tuning) stops the tuning
    when the run's Moses stages end, naming the file."""
    ini, table = _system_naming(tmp_path)
    args = tune_args(tmp_path, fake_moses, model, "--runs", "1")
    args[3] = str(ini)
    tuner = fake_moses / "scripts" / "training" / "mert-moses.pl"
    tuner.write_text(tuner.read_text().replace("echo 1 >", f"echo changed >> {table}; echo 1 >"))
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert (f"baseline-run1: the file the moses.ini names {table} changed while the run was made" not in result.output
            and f"system-run1: the file the moses.ini names {table} changed while the run was made" in result.output)


def test_a_run_records_the_libraries_its_decoder_loads_from_outside_the_system(tmp_path, fake_moses, model):
    """A decoder linked to a shared library built here (an NPLM built apart): the library is recorded, and a rebuilt
    library refuses the run as a rebuilt decoder does."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler to build a shared library")
    (tmp_path / "nplm.c").write_text("int nplm(void) { return 1; }\n")
    (tmp_path / "main.c").write_text("int nplm(void);\nint main(void) { return nplm() - 1; }\n")
    library = tmp_path / "lib" / "libnplm.so"
    library.parent.mkdir()

    def build(value: int) -> None:
        (tmp_path / "nplm.c").write_text(f"int nplm(void) {{ return {value}; }}\n")
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(tmp_path / "nplm.c")], check=True)

    build(1)
    program = tmp_path / "decoder"
    subprocess.run(["cc", "-o", str(program), str(tmp_path / "main.c"), f"-L{library.parent}", "-lnplm",
                    f"-Wl,-rpath,{library.parent}"], check=True)
    from moses_integration.mert_moses import MosesTools
    from moses_integration.route.made_with import changed_files, made_with
    plan = RouteOptions.from_options(dev_src=str(SOURCE), dev_ref=str(REFERENCE), ini=str(INI), test_src=str(SOURCE),
                                     test_ref=str(REFERENCE), work_dir=str(tmp_path / "w")).plan
    tools = MosesTools(str(program), "mert-moses.pl", str(tmp_path))
    before = made_with(plan, tools, str(INI))
    assert [entry["path"] for entry in before if entry["what"] == "the library the decoder loads"] == [str(library)]
    build(2)
    assert changed_files(before, made_with(plan, tools, str(INI))) == [f"the library the decoder loads {library}"]


def test_the_joint_model_tunes_inside_the_decoder_with_real_moses(tmp_path):
    """Issue 43's route on a real Moses built --with-nplm: the system has the joint model in the decoder
    (``moses-ini --bilm``), MERT tunes its weight beside the others, and a joint model of another direction rescores
    its lists, reading the word alignments Moses wrote; the report names the joint model (bilm) as the system's new
    weight and BILM_T2S0 as the rescored stage's."""
    from scoring_helpers import dev5_moses_ini, save_tiny_joint_model
    root = _moses_root()
    runner = CliRunner()
    forward = save_tiny_joint_model(str(tmp_path / "bilm.pt"), order=4, source_window=2, words=5000, std=0.3)
    t2s = save_tiny_joint_model(str(tmp_path / "t2s.pt"), order=3, source_window=1, words=500, feature="bilm-t2s")
    assert runner.invoke(main, ["bilm", "export", "-m", forward, "-o", str(tmp_path / "bilm.nplm")]).exit_code == 0
    base = tmp_path / "base.ini"
    base.write_text(dev5_moses_ini(), encoding="utf-8")
    system = tmp_path / "system.ini"
    made = runner.invoke(main, ["moses-ini", str(base), "--bilm", str(tmp_path / "bilm.nplm"), "-o", str(system)])
    assert made.exit_code == 0, made.output
    loads = subprocess.run([str(root / "bin" / "moses"), "-f", str(system), "-show-weights"], capture_output=True,
                           text=True)
    if loads.returncode != 0:
        pytest.skip(f"this Moses was built without NPLM: {loads.stderr.strip().splitlines()[-1]}")
    dev_src, dev_ref = DATA / "nbest" / "tatoeba.dev30.tok.en", DATA / "nbest" / "tatoeba.dev30.fr"
    finished = subprocess.run(
        [sys.executable, "-m", "mosesrnn", "tune", str(dev_src), str(dev_ref), str(system), "--baseline", str(base),
         "--test-src", str(dev_src), "--test-ref", str(dev_ref), "--runs", "1", "--maximum-iterations", "1",
         "--rescore", "bilm-t2s", "--bilm-t2s", t2s, "--nbest-size", "10", "--work-dir", str(tmp_path / "work"),
         "--moses-bin", str(root / "bin"), "--moses-scripts", str(root / "scripts")],
        capture_output=True, text=True, timeout=1200)
    assert finished.returncode == 0, finished.stderr[-3000:]
    report = read_report(str(tmp_path / "work" / "report.json"))
    assert [stage.name for stage in report.stages] == ["baseline", "system", "retuned", "rescored"]
    stages = {stage.name: stage for stage in report.stages}
    assert set(stages["system"].weight_shares) == {"bilm"} and stages["system"].about.endswith("with bilm")
    assert set(stages["rescored"].weight_shares) == {"BILM_T2S0"}
    tuned = read_weights(str(tmp_path / "work" / "system-run1" / "moses.ini"))
    assert len(tuned["BilingualNPLM0"]) == 1
    with open(tmp_path / "work" / "system-run1.dev.nbest", encoding="utf-8") as lines:
        first = next(lines).split(" ||| ")
    assert "BilingualNPLM0=" in first[2] and len(first) == 6  # the segmentation and word alignment Moses printed


# -- the decoder's NPLM features, checked before tuning ---------------------------------------------


def test_the_nplm_features_are_named_as_moses_names_them(tmp_path):
    ini = tmp_path / "moses.ini"
    ini.write_text(INI.read_text(encoding="utf-8").replace(
        "[weight]", "NeuralLM name=CSLM factor=0 order=5 path=/lm.nplm\nBilingualNPLM name=Joint order=4 "
        "source_window=2 path=/b.nplm\nNeuralLM factor=0 order=3 path=/lm3.nplm\n[weight]"), encoding="utf-8")
    assert nplm_feature_names(str(ini)) == ["CSLM", "Joint", "NeuralLM0"]
    assert nplm_feature_names(str(INI)) == []


def test_two_decodes_are_told_apart_by_their_nplm_features_or_hypotheses():
    with read_nbest(str(NBEST / "tatoeba.dev30.mert-iter1.100best.gz")) as entries:
        first = [entry for entry in entries if entry.sentence_id < 3]
    assert heap_disagreements(first, first, ["LM0"]) == []
    moved = [dataclasses.replace(entry, features=tuple((name, tuple(v + 0.5 for v in values) if name == "LM0"
                                                        else values) for name, values in entry.features))
             if entry.sentence_id == 1 else entry for entry in first]
    problems = heap_disagreements(first, moved, ["LM0"])
    assert len(problems) == 1 and problems[0].startswith("sentence 1, LM0= ")
    assert heap_disagreements(first, moved, ["TranslationModel0"]) == []
    other = [dataclasses.replace(entry, fields=(entry.fields[0], " autre chose ", *entry.fields[2:]))
             if entry.sentence_id == 2 else entry for entry in first]
    assert heap_disagreements(first, other, ["LM0"]) == ["sentence 2: 'pouvons-nous aller ?' against 'autre chose'"]


@pytest.mark.parametrize("fixed", [True, False])
def test_a_decoder_whose_nplm_reads_the_heap_is_refused_before_any_tuning(tmp_path, fake_moses, model, fixed):
    """The stand-in decoder's NeuralLM0= follows MALLOC_PERTURB_ where ``fixed`` is False, as an unfixed NPLM's
    does; tune refuses that before mert-moses.pl runs, naming the fix."""
    system = tmp_path / "system.ini"
    system.write_text(INI.read_text(encoding="utf-8").replace(
        "[weight]", f"NeuralLM factor=0 order=5 path={tmp_path / 'lm.nplm'}\n[weight]NeuralLM0= 0.1\n"),
        encoding="utf-8")
    real = fake_moses / "bin" / "moses"
    real.rename(real.with_name("moses.real"))
    value = "-7.25" if fixed else "-${MALLOC_PERTURB_:-0}"
    executable(real, f"""#!/bin/sh
case " $* " in *-nplm-check/*) ;; *) exec {real}.real "$@";; esac
while [ $# -gt 0 ]; do [ "$1" = "-n-best-list" ] && list="$2"; shift; done
echo "0 ||| le chat ||| LM0= -3 NeuralLM0= {value} ||| -1" > "$list"
echo "1 ||| un chien ||| LM0= -2 NeuralLM0= {value} ||| -1" >> "$list"
printf 'le chat\\nun chien\\n'
""")
    args = tune_args(tmp_path, fake_moses, model)
    args[3] = str(system)
    result = CliRunner().invoke(main, args)
    if fixed:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 1
    assert "NeuralLM0 values change with what the heap held" in result.output
    assert "sentence 0, NeuralLM0= -255.0 against -165.0" in result.output
    assert "moses_integration/fix-nplm.sh" in result.output
    assert not any(call.startswith("mert-moses.pl") for call in calls(tmp_path))


def test_a_stage_knows_its_kind_its_system_and_its_files():
    """A tuning stage is a Stage (issue 58), not a string looked up in three tables: its kind, the system whose
    runs it reads, its control, and which of a run's translations are its own."""
    from moses_integration.route.plan import (
        BASELINE,
        BASELINE_RESCORED,
        BASELINE_RETUNED,
        CONTROL,
        RESCORED,
        RESCORING,
        RETUNED,
        SYSTEM,
        TUNED,
        Stage,
        StageFiles,
        stage_named,
    )
    assert stage_named(RESCORED) == Stage(RESCORED, RESCORING, SYSTEM, RETUNED)
    assert stage_named(BASELINE_RESCORED) == Stage(BASELINE_RESCORED, RESCORING, BASELINE, BASELINE_RETUNED)
    assert stage_named(RETUNED) == Stage(RETUNED, CONTROL, SYSTEM)
    assert stage_named(BASELINE_RETUNED) == Stage(BASELINE_RETUNED, CONTROL, BASELINE)
    assert stage_named("nmt-small") == Stage("nmt-small", TUNED, "nmt-small") == Stage("nmt-small")
    files = StageFiles("work/system-run1")
    assert [stage_named(name).test_hyp(files) for name in (SYSTEM, RESCORED, RETUNED)] == \
        [files.test_hyp, files.rescored_hyp, files.retuned_hyp]
    assert [stage_named(name).dev_hyp(files) for name in (SYSTEM, RESCORED, RETUNED)] == \
        [files.dev_hyp, files.rescored_dev_hyp, files.retuned_dev_hyp]
