"""Tests of moses_integration.mert_report and `mosesrnn mert-report`: a stopped tuning's iterations.

Moses is not installed here. The working directories are laid out as mert-moses.pl leaves them
(see the module docstring) from real files: the Tatoeba ini train-model.perl wrote (the initial
weights), the [weight] section mert-moses.pl wrote after its first iteration on that system, and
the real Tatoeba test set standing in for the dev set. The optimiser logs hold the one line
mert-moses.pl reads from them (``Best point: ... => BLEU`` for MERT, ``Best BLEU = `` for kbmira).
"""
from pathlib import Path

import pytest
import sacrebleu
from click.testing import CliRunner

from moses_integration.mert_moses import MERTDIR_PROGRAMS, MertSettings, find_tools, run_mert
from moses_integration.mert_report import apply_iteration, choose_iteration, format_tuning, read_tuning
from moses_integration.tools import MosesToolError
from mosesrnn.cli.moses import mert_report
from mosesrnn.formats.moses_ini import MosesIniError, read_weights, replace_weights

DATA = Path(__file__).parent / "data" / "moses"
FULL_INI = DATA / "tatoeba-en-fr.moses.ini"  # untuned: iteration 1's weights
ITER1_WEIGHTS = DATA / "tuned" / "tatoeba.mert-iter1.weights"  # found by iteration 1: iteration 2's
DEV_SRC, DEV_REF = DATA / "tatoeba.test200.tok.en", DATA / "tatoeba.test200.tok.fr"
POINT = "0.0879781 0.0115506 0.0728954 0.112805 0.0698364 0.0328172 0.0683526 0.113806 -0.105596 0.0601509"


def perturbed(every: int, lines: int | None = None) -> str:
    """The reference with every ``every``-th token dropped (a plausible hypothesis), cut to ``lines``."""
    refs = DEV_REF.read_text(encoding="utf-8").splitlines()[:lines]
    return "".join(" ".join(t for i, t in enumerate(line.split(), 1) if i % every) + "\n" for line in refs)


def bleu(text: str) -> float:
    refs = DEV_REF.read_text(encoding="utf-8").splitlines()
    return sacrebleu.corpus_bleu(text.splitlines(), [refs], tokenize="none").score


def ini_with_weights(weights_text: str) -> str:
    text = FULL_INI.read_text(encoding="utf-8")
    return "# MERT optimized configuration\n" + text[:text.index("[weight]")] + weights_text


ITER2_INI = ini_with_weights(ITER1_WEIGHTS.read_text(encoding="utf-8"))
ITER3_INI = ITER2_INI.replace("LM0= 0.113806", "LM0= 0.2")


@pytest.fixture
def stopped(tmp_path) -> Path:
    """Stopped while decoding iteration 3: run3.out is a third of the dev set, no moses.ini."""
    work = tmp_path / "mert-work"
    work.mkdir()
    (work / "run1.moses.ini").write_text(FULL_INI.read_text())
    (work / "run2.moses.ini").write_text(ITER2_INI)
    (work / "run3.moses.ini").write_text(ITER3_INI)
    (work / "run1.out").write_text(perturbed(3))
    (work / "run2.out").write_text(perturbed(6))
    (work / "run3.out").write_text(perturbed(9, lines=70))
    (work / "run1.mert.log").write_text(f"shard 0 done\nBest point: {POINT} => 0.251234\n")
    (work / "run2.mert.log").write_text(f"Best point: {POINT} => 0.273100\nStopping\n")
    return work


def test_each_iteration_gets_its_weights_and_both_dev_bleus(stopped):
    tuning = read_tuning(str(stopped), str(DEV_REF))
    assert not tuning.finished and [it.number for it in tuning.iterations] == [1, 2, 3]
    first, second, third = tuning.iterations
    assert first.weights == read_weights(str(FULL_INI)) and second.weights == read_weights(str(ITER1_WEIGHTS))
    assert third.weights["LM0"] == (0.2,)
    assert [it.estimated_bleu for it in tuning.iterations] == [None, pytest.approx(25.1234), pytest.approx(27.31)]
    assert first.dev_bleu == pytest.approx(bleu(perturbed(3)), abs=1e-9)
    assert second.dev_bleu == pytest.approx(bleu(perturbed(6)), abs=1e-9)
    assert third.dev_bleu is None  # decoding was stopped part way


def test_best_is_the_decoded_bleu_then_the_estimate(stopped):
    assert choose_iteration(read_tuning(str(stopped), str(DEV_REF)), "best").number == 2
    assert choose_iteration(read_tuning(str(stopped)), "best").number == 3
    assert choose_iteration(read_tuning(str(stopped)), "last").number == 3
    assert choose_iteration(read_tuning(str(stopped)), "1").number == 1


@pytest.mark.parametrize("which, message", [
    ("7", "no iteration '7'; choose best, last or one of 1, 2, 3"),
    ("two", "no iteration 'two'"),
])
def test_unknown_iteration_is_refused(stopped, which, message):
    with pytest.raises(ValueError, match=message):
        choose_iteration(read_tuning(str(stopped)), which)


def test_no_logged_bleu_means_no_best(stopped):
    for log in stopped.glob("*.mert.log"):
        log.unlink()
    tuning = read_tuning(str(stopped))
    with pytest.raises(ValueError, match="no dev BLEU known"):
        choose_iteration(tuning, "best")
    assert format_tuning(tuning).endswith("best: unknown (no dev BLEU logged yet)")


def test_batch_mira_log(stopped):
    (stopped / "run1.mert.log").write_text("iteration 1\nBest BLEU = 0.2601 (all n-best)\n")
    assert read_tuning(str(stopped)).iterations[1].estimated_bleu == pytest.approx(26.01)


def test_report_table(stopped):
    lines = format_tuning(read_tuning(str(stopped), str(DEV_REF))).splitlines()
    assert lines[0] == f"{stopped}: 3 iterations, stopped before the end (no moses.ini)"
    assert lines[1].split() == ["weight", "iter1", "iter2", "iter3"]
    rows = {line.rsplit(None, 3)[0]: line.rsplit(None, 3)[1:] for line in lines[2:-1]}
    assert rows["LM0"] == ["0.5", "0.113806", "0.2"]
    assert rows["TranslationModel0[3]"] == ["0.2", "0.0177458", "0.0177458"]
    assert rows["dev BLEU, optimiser's estimate"] == ["-", "25.12", "27.31"]
    assert rows["dev BLEU of runK.out"] == [f"{bleu(perturbed(3)):.2f}", f"{bleu(perturbed(6)):.2f}", "-"]
    assert lines[-1] == f"best: iteration 2 ({stopped / 'run2.moses.ini'})"


def test_apply_writes_the_full_ini_with_the_chosen_weights_and_nothing_else(stopped, tmp_path):
    out = tmp_path / "tuned.ini"
    apply_iteration(choose_iteration(read_tuning(str(stopped)), "2"), str(FULL_INI), str(out))
    assert read_weights(str(out)) == read_weights(str(ITER1_WEIGHTS))
    old, new = FULL_INI.read_text().splitlines(), out.read_text().splitlines()
    changed = [(a, b) for a, b in zip(old, new) if a != b]
    assert len(old) == len(new) and len(changed) == 6  # UnknownWordPenalty0= 1 stays as written
    assert ("LM0= 0.5", "LM0= 0.113806") in changed
    assert "path=phrase-table.gz" in out.read_text()  # the full table, not the filtered one


def test_replace_weights_keeps_comments_and_endings_and_adds_missing_lines():
    text = "[feature]\nLM name=LM0\n[weight]\r\nLM0= 0.5 # the LM\r\nWordPenalty0= -1\r\n\n[verbose]\n2\n"
    new = replace_weights(text, {"LM0": (0.25,), "PhrasePenalty0": (0.1,)})
    assert new == ("[feature]\nLM name=LM0\n[weight]\r\nLM0= 0.25 # the LM\r\nWordPenalty0= -1\r\n"
                   "PhrasePenalty0= 0.1\n\n[verbose]\n2\n")


@pytest.mark.parametrize("text, weights, message", [
    ("[weight]\nTM0= 0.2 0.2\n", {"TM0": (0.1,)}, "moses.ini:2: TM0 has 2 weights here but 1 are given"),
    ("[weight-t]\n0.2\n", {"TM0": (0.1,)}, "no \\[weight\\] section"),
])
def test_replace_weights_refuses_another_system(text, weights, message):
    with pytest.raises(MosesIniError, match=message):
        replace_weights(text, weights)


def test_cli_reports_and_applies_the_best(stopped, tmp_path):
    out = tmp_path / "tuned.ini"
    result = CliRunner().invoke(mert_report, [str(stopped), "--dev-ref", str(DEV_REF), "--apply", "best",
                                              "--ini", str(FULL_INI), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{stopped}: 3 iterations, stopped")
    assert f"wrote {out}: {FULL_INI} with the weights of iteration 2" in result.stderr
    assert read_weights(str(out)) == read_weights(str(ITER1_WEIGHTS))


def test_cli_reports_every_run_of_a_mosesrnn_work_dir_but_applies_to_one(stopped, tmp_path):
    work = tmp_path / "tune"
    (work / "run10").mkdir(parents=True)
    stopped.rename(work / "run2")
    (work / "run10" / "run1.moses.ini").write_text(FULL_INI.read_text())
    (work / "run10" / "moses.ini").write_text(FULL_INI.read_text())
    (work / "run2.log").write_text("mert-moses.pl output\n")
    result = CliRunner().invoke(mert_report, [str(work)])
    assert result.exit_code == 0, result.output
    headers = [line for line in result.stdout.splitlines() if line.startswith(str(work))]
    assert headers == [f"{work / 'run2'}: 3 iterations, stopped before the end (no moses.ini)",
                       f"{work / 'run10'}: 1 iteration, finished (moses.ini written)"]
    result = CliRunner().invoke(mert_report, [str(work), "--apply", "last", "--ini", str(FULL_INI), "-o",
                                              str(tmp_path / "x.ini")])
    assert result.exit_code == 1 and f"holds 2 tunings: --apply to one of them, e.g. {work / 'run2'}" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--apply", "best"], "--apply needs --ini (the full moses.ini) and -o"),
    (["--ini", str(FULL_INI)], "--ini and -o go with --apply"),
])
def test_cli_option_mistakes_exit_2(stopped, args, message):
    result = CliRunner().invoke(mert_report, [str(stopped), *args])
    assert result.exit_code == 2 and message in result.stderr


def test_cli_not_a_working_directory_exits_1(tmp_path):
    result = CliRunner().invoke(mert_report, [str(tmp_path)])
    assert result.exit_code == 1
    assert "no run*.moses.ini here or in its subfolders: not a mert-moses.pl working directory" in result.stderr


def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def test_a_tuning_killed_by_its_time_limit_can_be_reported(tmp_path, monkeypatch):
    """The issue's run: mert-moses.pl stopped in iteration 2 (SIGTERM); `mert-report` shows what it did."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("MOSES_BIN", raising=False)
    root = tmp_path / "mosesdecoder"
    executable(root / "bin" / "moses", "#!/bin/sh\necho 'TranslationModel0= 0.2 0.2 0.2 0.2'\n")
    for program in MERTDIR_PROGRAMS:
        executable(root / "bin" / program, "#!/bin/sh\n")
    (tmp_path / "run2.ini").write_text(ITER2_INI)
    executable(root / "scripts" / "training" / "mert-moses.pl", f"""#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = "--working-dir" ] && work="$2"; shift; done
mkdir -p "$work" && cd "$work" || exit 1
cp {FULL_INI} run1.moses.ini && echo "Best point: {POINT} => 0.2512" > run1.mert.log
cp {tmp_path / 'run2.ini'} run2.moses.ini
kill -TERM $$
""")
    ini = DATA / "moses-ini" / "phrase.basic-surface-only.moses.ini"
    tools, _ = find_tools(str(root / "bin"), str(root / "scripts"))
    (tmp_path / "tune").mkdir()
    with pytest.raises(MosesToolError) as error:
        run_mert(tools, MertSettings(), str(DEV_SRC), str(DEV_REF), str(ini), str(tmp_path / "tune" / "run1"),
                 log=lambda message: None)
    assert "command killed by signal SIGTERM (15)" in str(error.value)
    assert str(error.value).endswith(f"the iterations done so far: mosesrnn mert-report {tmp_path / 'tune' / 'run1'}")
    result = CliRunner().invoke(mert_report, [str(tmp_path / "tune")])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == f"{tmp_path / 'tune' / 'run1'}: 2 iterations, stopped before the end " \
                                            "(no moses.ini)"
    assert result.stdout.splitlines()[-1] == f"best: iteration 2 ({tmp_path / 'tune' / 'run1' / 'run2.moses.ini'})"


def test_registered_on_the_mosesrnn_command():
    import click

    from mosesrnn.cli import main
    assert main.get_command(click.Context(main), "mert-report") is mert_report
    text = CliRunner().invoke(main, ["mert-report", "--help"]).output
    for option in ("Example:", "--dev-ref", "--tokenize", "--apply", "--ini", "--output"):
        assert option in text
