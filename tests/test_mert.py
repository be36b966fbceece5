"""Tests of moses_integration.mert: commands, dry run, missing tools, tuned weights, BLEU report.

Moses is not installed here. The end-to-end test uses shell scripts standing in for ``moses`` and
``mert-moses.pl``: the fake tuner copies a real tuned moses.ini into its working directory, and
the fake decoder prints a perturbed copy of the real test reference.
"""
import statistics
from pathlib import Path

import pytest
import sacrebleu
from click.testing import CliRunner

from moses_integration.cli import mert_moses
from moses_integration.mert import (
    MERTDIR_PROGRAMS,
    MertOptions,
    MertSetupError,
    corpus_bleu,
    find_tools,
    format_bleu,
    format_weights,
    mean_std,
    mert_command,
    plan_runs,
    relative_paths,
    tune,
)
from moses_integration.moses_ini import read_weights

DATA = Path(__file__).parent / "data" / "moses"
INI = DATA / "moses-ini" / "phrase.basic-surface-only.moses.ini"  # ${MODEL_PATH} paths: no relative ones
BASELINE_INI = DATA / "moses-ini" / "phrase.basic-surface-only-withirstlm.moses.ini"
TEST_SRC = DATA / "tatoeba.test200.tok.en"
TEST_REF = DATA / "tatoeba.test200.tok.fr"
TUNED = {  # real inis with tuned weights, standing in for the moses.ini of each run
    "run1": DATA / "moses-ini" / "chart.hierarchical-withkenlm.moses.ini",
    "run2": DATA / "moses-ini" / "chart.target-syntax.moses.ini",
    "run3": DATA / "moses-ini" / "chart.nbest-with-alignment.kenlm.moses.ini",
    "baseline-run1": DATA / "tuned" / "tatoeba.mert-iter1.weights",
    "baseline-run2": DATA / "tuned" / "tatoeba.mert-iter1.weights",
    "baseline-run3": DATA / "tuned" / "tatoeba.mert-iter1.weights",
}
DROP_EVERY = {"run1": 5, "run2": 6, "run3": 9, "baseline-run1": 3, "baseline-run2": 4, "baseline-run3": 3}


def perturbed(reference: Path, every: int) -> str:
    """The reference with every ``every``-th token of each line dropped: a plausible bad hypothesis."""
    lines = []
    for line in reference.read_text(encoding="utf-8").splitlines():
        tokens = line.split()
        lines.append(" ".join(t for i, t in enumerate(tokens, 1) if i % every))
    return "\n".join(lines) + "\n"


@pytest.fixture(autouse=True)
def no_moses(monkeypatch, tmp_path):
    """No Moses anywhere: an empty PATH, no MOSES_BIN, no MOSES_SCRIPTS."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}:/usr/bin:/bin")  # sh and its tools for the fakes, no Moses
    monkeypatch.delenv("MOSES_BIN", raising=False)
    monkeypatch.delenv("MOSES_SCRIPTS", raising=False)


def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def fake_moses(tmp_path):
    """A stand-in Moses tree: bin/ with moses and the mert programs, scripts/training/mert-moses.pl."""
    root, fake = tmp_path / "mosesdecoder", tmp_path / "fake"
    fake.mkdir()
    for run, ini in TUNED.items():
        (fake / f"{run}.ini").write_bytes(ini.read_bytes())
        (fake / f"{run}.hyp").write_text(perturbed(TEST_REF, DROP_EVERY[run]), encoding="utf-8")
    executable(root / "bin" / "moses", f"""#!/bin/sh
echo "moses $*" >> {fake}/calls
case " $* " in *" -show-weights "*) echo "TranslationModel0= 0.2 0.2 0.2 0.2"; exit 0;; esac
while [ $# -gt 0 ]; do [ "$1" = "-f" ] && ini="$2"; shift; done
cat "$(dirname "$ini")/test.fake-hyp"
""")
    executable(root / "scripts" / "training" / "mert-moses.pl", f"""#!/bin/sh
echo "mert-moses.pl $*" >> {fake}/calls
while [ $# -gt 0 ]; do [ "$1" = "--working-dir" ] && work="$2"; shift; done
run=$(basename "$work")
mkdir -p "$work" && cp {fake}/$run.ini "$work/moses.ini" && cp {fake}/$run.hyp "$work/test.fake-hyp"
echo "fake tuning of $run done"
""")
    for program in MERTDIR_PROGRAMS:
        executable(root / "bin" / program, "#!/bin/sh\n")
    return root


def options(tmp_path, **changes) -> MertOptions:
    values = dict(dev_src=str(TEST_SRC), dev_ref=str(TEST_REF), ini=str(INI), work_dir=str(tmp_path / "work"))
    values.update(changes)
    return MertOptions(**values)


def test_mert_command_passes_the_options(tmp_path, fake_moses):
    tools, problems = find_tools(str(fake_moses / "bin"), str(fake_moses / "scripts"))
    assert problems == []
    opts = options(tmp_path, threads=8, nbest=200, maximum_iterations=10, batch_mira=True,
                   return_best_dev=True)
    run = plan_runs(opts)[1]
    assert mert_command(tools, opts, run) == [
        str(fake_moses / "scripts" / "training" / "mert-moses.pl"), str(TEST_SRC), str(TEST_REF),
        str(fake_moses / "bin" / "moses"), str(INI), "--mertdir", str(fake_moses / "bin"),
        "--working-dir", str(tmp_path / "work" / "run2"), "--decoder-flags", "-threads 8", "--threads", "8",
        "--nbest", "200", "--maximum-iterations", "10", "--batch-mira", "--return-best-dev"]


def test_defaults_leave_mert_moses_options_alone(tmp_path, fake_moses):
    tools, _ = find_tools(str(fake_moses / "bin"), str(fake_moses / "scripts"))
    command = mert_command(tools, options(tmp_path), plan_runs(options(tmp_path))[0])
    assert command[-2:] == ["--decoder-flags", "-threads 1"]


def test_runs_go_to_fresh_numbered_directories(tmp_path):
    runs = plan_runs(options(tmp_path, runs=2, baseline=str(BASELINE_INI)))
    assert [(r.system, Path(r.working_dir).name, r.ini) for r in runs] == [
        ("new", "run1", str(INI)), ("new", "run2", str(INI)),
        ("baseline", "baseline-run1", str(BASELINE_INI)), ("baseline", "baseline-run2", str(BASELINE_INI))]
    assert runs[0].log == str(tmp_path / "work" / "run1.log")


def test_every_missing_tool_is_named_with_what_to_set(tmp_path):
    _, problems = find_tools()
    assert problems[0].startswith("moses (the decoder) not found (searched $MOSES_BIN (not set), PATH)")
    assert "set MOSES_BIN" in problems[0]
    assert "mert-moses.pl not found" in problems[1] and "set MOSES_SCRIPTS" in problems[1]


def test_missing_mert_programs_are_named(tmp_path, fake_moses):
    (fake_moses / "bin" / "kbmira").unlink()
    (fake_moses / "bin" / "evaluator").unlink()
    _, problems = find_tools(str(fake_moses / "bin"), str(fake_moses / "scripts"))
    assert problems == [f"kbmira, evaluator not found in the mertdir {fake_moses / 'bin'} (mert-moses.pl "
                        "needs extractor, mert, kbmira, pro, evaluator there): build Moses with its mert "
                        "tools or pass --mertdir"]


def test_tools_found_through_environment_variables(tmp_path, fake_moses, monkeypatch):
    monkeypatch.setenv("MOSES_BIN", str(fake_moses / "bin"))
    monkeypatch.setenv("MOSES_SCRIPTS", str(fake_moses / "scripts"))
    tools, problems = find_tools()
    assert problems == [] and tools.mertdir == str(fake_moses / "bin")


def test_cli_without_moses_exits_1_saying_what_to_install(tmp_path):
    result = CliRunner().invoke(mert_moses, [str(TEST_SRC), str(TEST_REF), str(INI), "--work-dir",
                                             str(tmp_path / "work")])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: cannot start tuning:\n  moses (the decoder) not found")
    assert "MOSES_SCRIPTS" in result.stderr
    assert not (tmp_path / "work").exists()


def test_non_empty_work_dir_is_refused(tmp_path, fake_moses):
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "features.list").write_text("TranslationModel0= 0.2\n")
    with pytest.raises(MertSetupError, match="work is not empty: tune into a fresh working directory"):
        tune(options(tmp_path), str(fake_moses / "bin"), str(fake_moses / "scripts"))


def test_relative_table_paths_are_refused(tmp_path, fake_moses):
    ini = DATA / "mini-system-fr-en.moses.ini"
    assert relative_paths(str(ini)) == [f"{ini}:17: path=europarl.en.lm",
                                        f"{ini}:19: path=reordering-table.msd-bidirectional-fe.0.5.0-0.gz",
                                        f"{ini}:22: path=phrase-table.0-0.gz"]
    with pytest.raises(MertSetupError, match="path=europarl.en.lm is relative, but mert-moses.pl decodes") as error:
        tune(options(tmp_path, ini=str(ini)), str(fake_moses / "bin"), str(fake_moses / "scripts"))
    assert str(error.value).endswith(f"to make every path of {ini} absolute: mosesrnn moses-ini {ini} "
                                     "--absolute-paths --relative-to DIR -o NEW.ini, DIR being where they are "
                                     "relative to")


def test_one_thread_leaves_the_optimiser_alone_more_reach_it(tmp_path, fake_moses):
    """mert-moses.pl's --threads is the optimiser's; --decoder-flags "-threads N" only the decoder's."""
    tools, _ = find_tools(str(fake_moses / "bin"), str(fake_moses / "scripts"))
    one, four = (mert_command(tools, options(tmp_path, threads=n), plan_runs(options(tmp_path))[0]) for n in (1, 4))
    assert "--threads" not in one
    assert four[four.index("--decoder-flags"):][:4] == ["--decoder-flags", "-threads 4", "--threads", "4"]


def test_cli_dry_run_prints_every_command(tmp_path, fake_moses):
    work = tmp_path / "work"
    bin_dir, scripts = fake_moses / "bin", fake_moses / "scripts"
    args = [str(TEST_SRC), str(TEST_REF), str(INI), "--work-dir", str(work), "--runs", "2", "--threads", "4",
            "--moses-bin", str(bin_dir), "--moses-scripts", str(scripts), "--batch-mira", "--test-src",
            str(TEST_SRC), "--test-ref", str(TEST_REF), "--baseline", str(BASELINE_INI), "--dry-run"]
    result = CliRunner().invoke(mert_moses, args)
    assert result.exit_code == 0, result.output
    moses, script = bin_dir / "moses", scripts / "training" / "mert-moses.pl"

    def tuning(ini, run):
        return (f"{script} {TEST_SRC} {TEST_REF} {moses} {ini} --mertdir {bin_dir} "
                f"--working-dir {work / run} --decoder-flags '-threads 4' --threads 4 --batch-mira "
                f"> {work / run}.log 2>&1")

    def decoding(run):
        return (f"{moses} -f {work / run / 'moses.ini'} -threads 4 -input-file {TEST_SRC} "
                f"> {work / run / 'test.hyp'}")

    runs = ["run1", "run2", "baseline-run1", "baseline-run2"]
    assert result.stdout.splitlines() == [
        f"{moses} -f {INI} -show-weights", f"{moses} -f {BASELINE_INI} -show-weights",
        tuning(INI, "run1"), tuning(INI, "run2"), tuning(BASELINE_INI, "baseline-run1"),
        tuning(BASELINE_INI, "baseline-run2"), *[decoding(run) for run in runs],
        f"# then sacreBLEU (tokenize=13a) of each test.hyp against {TEST_REF}"]
    assert not work.exists()


def test_cli_dry_run_without_moses_lists_the_problems(tmp_path):
    result = CliRunner().invoke(mert_moses, [str(TEST_SRC), str(TEST_REF), str(INI), "--work-dir",
                                             str(tmp_path / "w"), "--dry-run"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# problem: moses (the decoder) not found")
    assert lines[1].startswith("# problem: mert-moses.pl not found")
    assert lines[2] == f"moses -f {INI} -show-weights"
    assert lines[3].startswith(f"mert-moses.pl {TEST_SRC} {TEST_REF} moses {INI} --mertdir MERTDIR ")


@pytest.mark.parametrize("path, name, size", [
    (DATA / "tuned" / "tatoeba.mert-iter1.weights", "LexicalReordering0", 6),
    (DATA / "tuned" / "bartvm-europarl.moses.ini", "TranslationModel0", 4),
    (DATA / "moses-ini" / "phrase.TargetNGramFeature.moses.ini", "TranslationModel0", 12),
])
def test_weights_of_real_tuned_inis(path, name, size):
    weights = read_weights(str(path))
    assert len(weights[name]) == size


def test_weights_table_has_a_row_per_weight_and_a_column_per_run():
    tuned = {run: read_weights(str(TUNED[run])) for run in ("run1", "run2", "run3")}
    lines = format_weights(tuned).splitlines()
    assert lines[0].split() == ["weight", "run1", "run2", "run3"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["WordPenalty0"] == ["-0.148974", "-0.233879", "-0.148974"]
    assert rows["PhraseDictionaryMemory0[4]"] == ["-0.098314", "-0.103362", "-0.098314"]
    assert rows["PhraseDictionaryMemory1"] == ["0.131945", "0.017807", "0.131945"]
    assert len(rows) == 1 + 1 + 5 + 1


def test_weights_table_marks_weights_a_run_lacks():
    tuned = {"run1": {"LM0": (0.5,)}, "run2": {"LM0": (0.4,), "CSLM": (0.1,)}}
    assert format_weights(tuned).splitlines()[2].split() == ["CSLM", "-", "0.1"]


def test_corpus_bleu_of_a_perturbed_real_reference(tmp_path):
    hypothesis = tmp_path / "hyp"
    hypothesis.write_text(perturbed(TEST_REF, 5), encoding="utf-8")
    score, signature = corpus_bleu(str(hypothesis), str(TEST_REF))
    refs = TEST_REF.read_text(encoding="utf-8").splitlines()
    expected = sacrebleu.corpus_bleu(hypothesis.read_text(encoding="utf-8").splitlines(), [refs]).score
    assert score == pytest.approx(expected, abs=1e-9)
    assert 20 < score < 90 and signature.startswith("nrefs:1|case:mixed|eff:no|tok:13a")


def test_corpus_bleu_refuses_a_short_hypothesis(tmp_path):
    hypothesis = tmp_path / "hyp"
    hypothesis.write_text("un\ndeux\n")
    with pytest.raises(ValueError, match="has 2 lines but .* has 200"):
        corpus_bleu(str(hypothesis), str(TEST_REF))


def test_mean_and_sample_std():
    assert mean_std([20.0, 22.0, 24.0]) == (22.0, 2.0)
    assert mean_std([21.5]) == (21.5, None)


def test_bleu_report_format():
    text = format_bleu({"new": [23.1, 23.8, 23.3], "baseline": [22.0]}, "nrefs:1|tok:13a")
    assert text.splitlines() == [
        "Test BLEU, mean ± sample std over tuning runs (sacreBLEU nrefs:1|tok:13a)",
        "  new        23.40 ± 0.36   runs: 23.10, 23.80, 23.30",
        "  baseline   22.00 (1 run: no spread; use at least 3)   runs: 22.00",
        "  new − baseline: +1.40 BLEU (difference of the means)"]


def test_tuning_end_to_end_with_stand_in_programs(tmp_path, fake_moses):
    opts = options(tmp_path, test_src=str(TEST_SRC), test_ref=str(TEST_REF), baseline=str(BASELINE_INI))
    messages = []
    report = tune(opts, str(fake_moses / "bin"), str(fake_moses / "scripts"), log=messages.append)
    calls = (tmp_path / "fake" / "calls").read_text().splitlines()
    assert [c.split()[0] for c in calls[:2]] == ["moses", "moses"] and calls[0].endswith("-show-weights")
    assert [c.split()[0] for c in calls[2:8]] == ["mert-moses.pl"] * 6
    assert (tmp_path / "work" / "run2.log").read_text() == "fake tuning of run2 done\n"
    assert "Tuned weights (new system)" in report and "Tuned weights (baseline system)" in report
    refs = TEST_REF.read_text(encoding="utf-8").splitlines()
    expected = {}
    for run, every in DROP_EVERY.items():
        hyps = perturbed(TEST_REF, every).splitlines()
        expected.setdefault(run.split("-")[0] if "-" in run else "new", []).append(
            sacrebleu.corpus_bleu(hyps, [refs]).score)
    new_mean, new_std = statistics.mean(expected["new"]), statistics.stdev(expected["new"])
    assert f"  new       {new_mean:6.2f} ± {new_std:.2f}" in report
    base_mean = statistics.mean(expected["baseline"])
    assert f"  baseline  {base_mean:6.2f} ± " in report
    assert f"new − baseline: {new_mean - base_mean:+.2f} BLEU" in report
    assert any(message.startswith("tuning baseline run 3: ") for message in messages)


def test_cli_help_explains_every_option():
    text = CliRunner().invoke(mert_moses, ["--help"]).output
    for option in ("--work-dir", "--runs", "--threads", "--moses-bin", "--moses-scripts", "--mertdir",
                   "--batch-mira", "--nbest", "--maximum-iterations", "--return-best-dev", "--test-src",
                   "--test-ref", "--baseline", "--tokenize", "--dry-run"):
        assert option in text
