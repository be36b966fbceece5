"""Tests of moses_integration.binarize: command construction, program lookup, errors.

Moses is not installed here; where a program must run, a two-line shell script stands in for it
and records its arguments.
"""
import gzip
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from moses_integration.binarize import binarize_table, default_output, with_empty_alignment
from moses_integration.tools import MosesToolError, describe_exit
from mosesrnn.cli.moses import binarize
from mosesrnn.formats.phrase_table import PhraseTableError, format_line, read_entries

DATA = Path(__file__).parent / "data" / "moses"
MINI_TABLE = str(DATA / "mini-system.phrase-table.rnn-unk.gz")  # 7 scores, no alignment field
TATOEBA_TABLE = str(DATA / "tatoeba.phrase-table.rnn-unk.gz")  # 6 scores, alignment and counts


@pytest.fixture(autouse=True)
def no_moses(monkeypatch, tmp_path):
    """No Moses anywhere: an empty PATH and no MOSES_BIN."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("MOSES_BIN", raising=False)


def fake_program(folder: Path, name: str, exit_code: int = 0, then: str = "") -> Path:
    """An executable that writes its arguments, one per line, to ``folder/name.args``, runs the
    shell code ``then`` and exits with ``exit_code``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{folder}/{name}.args"\n{then}\nexit {exit_code}\n')
    path.chmod(0o755)
    return path


# What the real programs do first: processPhraseTableMin -in T -out P creates P.minphr,
# CreateOnDiskPt 1 1 N 100 R T OUT creates the folder OUT. The compact one also keeps its input.
# (PATH is empty here: the shell's own commands, or absolute paths.)
WRITES_MINPHR = '/bin/cp "$2" "${0%/*}/input.gz"; echo partial > "$4.minphr"'
WRITES_FOLDER = '/bin/mkdir -p "$7" && echo partial > "$7/Misc.dat"'
# How processPhraseTableMin dies on a line without alignment: abort() (no core file, please).
ABORTS = "ulimit -c 0; kill -ABRT $$"


def args_of(folder: Path, name: str) -> list[str]:
    return (folder / f"{name}.args").read_text().split("\n")[:-1]


def test_compact_command_has_the_counted_scores_and_ranks_by_p_e_given_f():
    result = binarize_table(TATOEBA_TABLE, "compact", threads=4, dry_run=True)
    stem = TATOEBA_TABLE[:-3]
    assert result.command == ("processPhraseTableMin", "-in", TATOEBA_TABLE, "-out", stem,
                              "-nscores", "6", "-threads", "4", "-rankscore", "2")
    assert result.output == stem + ".minphr" and result.num_scores == 6 and not result.ran


def test_ondisk_command_has_the_counted_scores():
    result = binarize_table(TATOEBA_TABLE, "ondisk", output="/models/pt.ondisk", dry_run=True)
    assert result.command == ("CreateOnDiskPt", "1", "1", "6", "100", "2", TATOEBA_TABLE, "/models/pt.ondisk")


@pytest.mark.parametrize("output", ["/models/pt.minphr", "/models/pt"])
def test_compact_output_is_the_minphr_file_and_the_command_gets_its_prefix(output):
    result = binarize_table(TATOEBA_TABLE, "compact", output=output, dry_run=True)
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
        binarize_table(TATOEBA_TABLE, "compact", moses_bin=str(tmp_path / "bin"))
    message = str(error.value)
    assert message.startswith(f"processPhraseTableMin not found (searched --moses-bin {tmp_path / 'bin'}, "
                              "$MOSES_BIN (not set), PATH)")
    assert "set MOSES_BIN" in message
    assert message.endswith(f"The command to run is:\n  processPhraseTableMin -in {TATOEBA_TABLE} -out "
                            f"{TATOEBA_TABLE[:-3]} -nscores 6 -threads 1 -rankscore 2")


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
        binarize_table(TATOEBA_TABLE, output=str(tmp_path / "pt"), moses_bin=str(tmp_path / "bin"))


def test_cli_dry_run_prints_the_exact_command():
    result = CliRunner().invoke(binarize, [TATOEBA_TABLE, "--format", "ondisk", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"CreateOnDiskPt 1 1 6 100 2 {TATOEBA_TABLE} {TATOEBA_TABLE[:-3]}.ondisk\n"


def test_cli_runs_the_program(tmp_path):
    fake_program(tmp_path / "bin", "processPhraseTableMin")
    out = tmp_path / "pt.minphr"
    result = CliRunner().invoke(binarize, [TATOEBA_TABLE, "--moses-bin", str(tmp_path / "bin"),
                                           "--threads", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out} (6 scores, ranked by score 2)" in result.stderr


def test_cli_missing_program_exits_1_with_the_command():
    result = CliRunner().invoke(binarize, [TATOEBA_TABLE])
    assert result.exit_code == 1
    assert "Error: processPhraseTableMin not found" in result.stderr
    assert f"processPhraseTableMin -in {TATOEBA_TABLE}" in result.stderr


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
    for option in ("--format", "--output", "--threads", "--rankscore", "--add-empty-alignment", "--moses-bin",
                   "--dry-run"):
        assert option in text


# Frictions of a real Moses run (issue #10).

def test_compact_refuses_a_table_without_alignment_before_running(tmp_path):
    """processPhraseTableMin aborts ("wrong format") on a line with 3 fields: say so before running."""
    fake_program(tmp_path / "bin", "processPhraseTableMin", then=WRITES_MINPHR)
    with pytest.raises(PhraseTableError) as error:
        binarize_table(MINI_TABLE, output=str(tmp_path / "pt"), moses_bin=str(tmp_path / "bin"))
    assert str(error.value) == (
        f"{MINI_TABLE}:1: 3 fields (source ||| target ||| scores), but processPhraseTableMin needs a 4th, "
        "the word alignment, and aborts without it: pass --add-empty-alignment to binarize a copy with an "
        "empty alignment field")
    assert not (tmp_path / "bin" / "processPhraseTableMin.args").exists()
    assert sorted(os.listdir(tmp_path)) == ["bin", "empty-path"]


def test_ondisk_takes_a_table_without_alignment():
    result = binarize_table(MINI_TABLE, "ondisk", output="/models/pt", dry_run=True)
    assert result.command == ("CreateOnDiskPt", "1", "1", "7", "100", "2", MINI_TABLE, "/models/pt")


def test_add_empty_alignment_binarizes_a_streamed_copy_then_removes_it(tmp_path):
    bin_dir = tmp_path / "bin"
    fake_program(bin_dir, "processPhraseTableMin", then=WRITES_MINPHR)
    result = binarize_table(MINI_TABLE, output=str(tmp_path / "pt"), moses_bin=str(bin_dir),
                            add_empty_alignment=True)
    copy = str(tmp_path / "pt.with-alignment.gz")
    assert result.copy == copy and args_of(bin_dir, "processPhraseTableMin")[:4] == ["-in", copy, "-out",
                                                                                       str(tmp_path / "pt")]
    assert not os.path.exists(copy) and (tmp_path / "pt.minphr").exists()
    with gzip.open(MINI_TABLE, "rt", encoding="utf-8") as original, \
            gzip.open(bin_dir / "input.gz", "rt", encoding="utf-8") as given:
        assert given.read().splitlines() == [line + " |||" for line in original.read().splitlines()]


def test_empty_alignment_is_added_only_where_missing():
    lines = [format_line(with_empty_alignment(entry)) for entry in read_entries(TATOEBA_TABLE)]
    with gzip.open(TATOEBA_TABLE, "rt", encoding="utf-8", newline="") as stream:
        assert lines == stream.read().splitlines(keepends=True)
    with read_entries(MINI_TABLE) as entries:
        entry = next(entries)
    assert format_line(with_empty_alignment(entry)).endswith(" 2.718 0.135335283 1.0 |||\n")
    assert len(with_empty_alignment(entry).fields) == 4


def test_a_signal_is_named_and_the_partial_file_removed(tmp_path):
    fake_program(tmp_path / "bin", "processPhraseTableMin", then=WRITES_MINPHR + "\n" + ABORTS)
    with pytest.raises(MosesToolError) as error:
        binarize_table(MINI_TABLE, output=str(tmp_path / "pt"), moses_bin=str(tmp_path / "bin"),
                       add_empty_alignment=True)
    message = str(error.value)
    assert message.startswith("command killed by signal SIGABRT (6): ")
    assert message.endswith(f"(removed the partial output {tmp_path / 'pt.minphr'})")
    assert not (tmp_path / "pt.minphr").exists() and not (tmp_path / "pt.with-alignment.gz").exists()


def test_a_failed_ondisk_run_removes_its_partial_folder(tmp_path):
    fake_program(tmp_path / "bin", "CreateOnDiskPt", exit_code=1, then=WRITES_FOLDER)
    with pytest.raises(MosesToolError, match="(?s)exit code 1: .*removed the partial output"):
        binarize_table(TATOEBA_TABLE, "ondisk", output=str(tmp_path / "pt"), moses_bin=str(tmp_path / "bin"))
    assert not (tmp_path / "pt").exists()


def test_an_existing_output_the_program_did_not_touch_is_kept(tmp_path):
    (tmp_path / "pt.minphr").write_text("an older table")
    fake_program(tmp_path / "bin", "processPhraseTableMin", exit_code=2)
    with pytest.raises(MosesToolError) as error:
        binarize_table(TATOEBA_TABLE, output=str(tmp_path / "pt"), moses_bin=str(tmp_path / "bin"))
    assert "removed" not in str(error.value)
    assert (tmp_path / "pt.minphr").read_text() == "an older table"


@pytest.mark.parametrize("scores, rankscore, expected", [
    (7, None, "2"), (6, 4, "4"), (4, None, "2"), (1, None, "0"), (6, 0, "0"),
])
def test_rankscore(scores, rankscore, expected, tmp_path):
    table = tmp_path / "t.gz"
    with gzip.open(table, "wt", encoding="utf-8") as out:
        out.write(f"das Haus ||| the house ||| {' '.join(['0.5'] * scores)} ||| 0-0 1-1\n")
    compact = binarize_table(str(table), rankscore=rankscore, dry_run=True)
    ondisk = binarize_table(str(table), "ondisk", rankscore=rankscore, dry_run=True)
    assert compact.command[-2:] == ("-rankscore", expected) and ondisk.command[5] == expected


@pytest.mark.parametrize("alignment, encoding", [
    (" ||| 0-0 1-1", None),         # aligned: processPhraseTableMin's default encoding (PREnc)
    (" ||| ", ("-encoding", "None")),  # empty: PREnc would abort ("Use -encoding None")
    (" ||| 0", ("-encoding", "None")),  # one character counts as empty for it too
])
def test_an_empty_alignment_is_binarized_without_prenc(alignment, encoding, tmp_path):
    table = tmp_path / "t.gz"
    with gzip.open(table, "wt", encoding="utf-8") as out:
        out.write(f"das Haus ||| the house ||| 0.5 0.5 0.5 0.5{alignment}\n")
    command = binarize_table(str(table), dry_run=True).command
    assert (command[-2:] == encoding) if encoding else ("-encoding" not in command)
    assert "-encoding" not in binarize_table(str(table), "ondisk", dry_run=True).command


def test_rankscore_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"--rankscore 6 is not a score of .*: it has 6 \(indices 0-5\)"):
        binarize_table(TATOEBA_TABLE, rankscore=6, dry_run=True)


def test_cli_dry_run_with_empty_alignment_says_what_it_writes_first():
    result = CliRunner().invoke(binarize, [MINI_TABLE, "--add-empty-alignment", "--rankscore", "4",
                                           "--dry-run"])
    assert result.exit_code == 0, result.output
    stem = MINI_TABLE[:-3]
    assert result.stdout.splitlines() == [
        f"# first: {MINI_TABLE} with an empty alignment field written to {stem}.with-alignment.gz "
        "(removed after the run)",
        f"processPhraseTableMin -in {stem}.with-alignment.gz -out {stem} -nscores 7 -threads 1 -rankscore 4 "
        "-encoding None"]


def test_cli_table_without_alignment_exits_1_naming_the_option():
    result = CliRunner().invoke(binarize, [MINI_TABLE, "--dry-run"])
    assert result.exit_code == 1
    assert "needs a 4th, the word alignment" in result.stderr and "--add-empty-alignment" in result.stderr


@pytest.mark.parametrize("code, text", [
    (3, "exit code 3"), (-6, "killed by signal SIGABRT (6)"), (-9, "killed by signal SIGKILL (9)"),
    (-99, "killed by signal 99"),
])
def test_exit_status_names_signals(code, text):
    assert describe_exit(code) == text
