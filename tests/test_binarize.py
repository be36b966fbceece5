"""Tests of moses_integration.binarize: command construction, program lookup, errors.

Moses is not installed here; where a program must run, a two-line shell script stands in for it
and records its arguments.
"""
import gzip
from pathlib import Path

import pytest
from click.testing import CliRunner

from moses_integration.binarize import binarize_table, default_output
from moses_integration.cli import binarize
from moses_integration.tools import MosesToolError

DATA = Path(__file__).parent / "data" / "moses"
MINI_TABLE = str(DATA / "mini-system.phrase-table.rnn-unk.gz")  # 7 scores
TATOEBA_TABLE = str(DATA / "tatoeba.phrase-table.rnn-unk.gz")  # 6 scores


@pytest.fixture(autouse=True)
def no_moses(monkeypatch, tmp_path):
    """No Moses anywhere: an empty PATH and no MOSES_BIN."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("MOSES_BIN", raising=False)


def fake_program(folder: Path, name: str, exit_code: int = 0) -> Path:
    """An executable that writes its arguments, one per line, to ``folder/name.args``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{folder}/{name}.args"\nexit {exit_code}\n')
    path.chmod(0o755)
    return path


def test_compact_command_has_the_counted_scores():
    result = binarize_table(MINI_TABLE, "compact", threads=4, dry_run=True)
    stem = MINI_TABLE[:-3]
    assert result.command == ("processPhraseTableMin", "-in", MINI_TABLE, "-out", stem,
                              "-nscores", "7", "-threads", "4")
    assert result.output == stem + ".minphr" and result.num_scores == 7 and not result.ran


def test_ondisk_command_has_the_counted_scores():
    result = binarize_table(TATOEBA_TABLE, "ondisk", output="/models/pt.ondisk", dry_run=True)
    assert result.command == ("CreateOnDiskPt", "1", "1", "6", "100", "2", TATOEBA_TABLE, "/models/pt.ondisk")


@pytest.mark.parametrize("output", ["/models/pt.minphr", "/models/pt"])
def test_compact_output_is_the_minphr_file_and_the_command_gets_its_prefix(output):
    result = binarize_table(MINI_TABLE, "compact", output=output, dry_run=True)
    assert result.command[3:5] == ("-out", "/models/pt") and result.output == "/models/pt.minphr"


@pytest.mark.parametrize("table, fmt, expected", [
    ("phrase-table.rnn.gz", "compact", "phrase-table.rnn.minphr"),
    ("phrase-table.rnn.gz", "ondisk", "phrase-table.rnn.ondisk"),
    ("phrase-table.txt", "compact", "phrase-table.txt.minphr"),
])
def test_default_output(table, fmt, expected):
    assert default_output(table, fmt) == expected


def test_missing_program_names_it_and_prints_the_command(tmp_path):
    with pytest.raises(MosesToolError) as error:
        binarize_table(MINI_TABLE, "compact", moses_bin=str(tmp_path / "bin"))
    message = str(error.value)
    assert message.startswith(f"processPhraseTableMin not found (searched --moses-bin {tmp_path / 'bin'}, "
                              "$MOSES_BIN (not set), PATH)")
    assert "set MOSES_BIN" in message
    assert message.endswith(f"The command to run is:\n  processPhraseTableMin -in {MINI_TABLE} -out "
                            f"{MINI_TABLE[:-3]} -nscores 7 -threads 1")


@pytest.mark.parametrize("where", ["--moses-bin", "MOSES_BIN", "PATH"])
def test_program_is_found_and_run(where, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    program = fake_program(bin_dir, "CreateOnDiskPt")
    if where == "MOSES_BIN":
        monkeypatch.setenv("MOSES_BIN", str(bin_dir))
    elif where == "PATH":
        monkeypatch.setenv("PATH", str(bin_dir))
    moses_bin = str(bin_dir) if where == "--moses-bin" else None
    result = binarize_table(TATOEBA_TABLE, "ondisk", output=str(tmp_path / "pt"), moses_bin=moses_bin)
    assert result.ran and result.command[0] == str(program)
    args = (bin_dir / "CreateOnDiskPt.args").read_text().split("\n")[:-1]
    assert args == ["1", "1", "6", "100", "2", TATOEBA_TABLE, str(tmp_path / "pt")]


def test_failing_program_is_an_error(tmp_path):
    fake_program(tmp_path / "bin", "processPhraseTableMin", exit_code=3)
    with pytest.raises(MosesToolError, match="exit code 3: .*processPhraseTableMin -in"):
        binarize_table(MINI_TABLE, moses_bin=str(tmp_path / "bin"))


def test_cli_dry_run_prints_the_exact_command():
    result = CliRunner().invoke(binarize, [TATOEBA_TABLE, "--format", "ondisk", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"CreateOnDiskPt 1 1 6 100 2 {TATOEBA_TABLE} {TATOEBA_TABLE[:-3]}.ondisk\n"


def test_cli_runs_the_program(tmp_path):
    fake_program(tmp_path / "bin", "processPhraseTableMin")
    result = CliRunner().invoke(binarize, [MINI_TABLE, "--moses-bin", str(tmp_path / "bin"),
                                           "--threads", "2"])
    assert result.exit_code == 0, result.output
    assert f"wrote {MINI_TABLE[:-3]}.minphr (7 scores)" in result.stderr


def test_cli_missing_program_exits_1_with_the_command():
    result = CliRunner().invoke(binarize, [MINI_TABLE])
    assert result.exit_code == 1
    assert "Error: processPhraseTableMin not found" in result.stderr
    assert f"processPhraseTableMin -in {MINI_TABLE}" in result.stderr


def test_cli_refuses_a_table_of_raw_log_probabilities(tmp_path):
    """moses.md: a negative score becomes NaN in Moses; the score counter rejects it."""
    table = tmp_path / "logprob.gz"
    with gzip.open(table, "wt", encoding="utf-8") as out:
        out.write("das Haus ||| the house ||| 0.8 0.6 0.7 0.5 -3.2\n")
    result = CliRunner().invoke(binarize, [str(table), "--dry-run"])
    assert result.exit_code == 1
    assert f"{table}:1: score '-3.2' is negative" in result.stderr


def test_cli_help_explains_every_option():
    text = CliRunner().invoke(binarize, ["--help"]).output
    for option in ("--format", "--output", "--threads", "--moses-bin", "--dry-run"):
        assert option in text
