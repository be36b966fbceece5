"""The command line end to end: vocab, then score --features unk, and bad input."""
import gzip
import json
import math

import pytest
from click.testing import CliRunner
from conftest import MOSES_TABLES

from mosesrnn.cli import main


@pytest.fixture
def vocab_dir(tmp_path, tatoeba_table):
    result = CliRunner().invoke(main, ["vocab", str(tatoeba_table), "-o", str(tmp_path / "vocab"), "--size", "300"])
    assert result.exit_code == 0, result.output
    assert "unique phrase pairs; shortlists cover" in result.output
    return tmp_path / "vocab"


def test_help_explains_every_command():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for command in ("vocab", "train", "score", "merge", "moses-ini", "binarize", "tune", "mert-report"):
        assert command in result.output
        sub = CliRunner().invoke(main, [command, "--help"])
        assert sub.exit_code == 0 and "Example:" in sub.output


def test_vocab_writes_shortlists_of_the_requested_size(vocab_dir):
    lines = (vocab_dir / "source.vocab").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "#mosesrnn vocabulary version: 1" and len(lines) == 301


def test_score_unk_appends_one_column_moses_reads_as_the_count(vocab_dir, tatoeba_table, tmp_path):
    from mosesrnn.text.tokenizers import words
    from mosesrnn.text.vocab import VocabularyPair
    out = tmp_path / "scored.gz"
    result = CliRunner().invoke(main, ["score", str(tatoeba_table), "--vocab", str(vocab_dir),
                                       "--features", "unk", "-o", str(out), "--unk-side", "target"])
    assert result.exit_code == 0, result.output
    vocabularies = VocabularyPair.load(str(vocab_dir))
    before = gzip.open(tatoeba_table, "rt", encoding="utf-8").read().split("\n")
    after = gzip.open(out, "rt", encoding="utf-8").read().split("\n")
    assert len(after) == len(before)
    for old, new in zip(before[:-1], after[:-1]):
        old_fields, new_fields = old.split(" ||| "), new.split(" ||| ")
        assert new_fields[:2] == old_fields[:2] and new_fields[3:] == old_fields[3:]
        *scores, unk = new_fields[2].split()
        assert scores == old_fields[2].split()
        expected = vocabularies.target.count_unknown(words(old_fields[1]))
        assert abs(max(math.log(float(unk)), -100) - expected) < 1e-9
    sidecar = json.loads((tmp_path / "scored.gz.json").read_text())
    assert sidecar["lines"] == len(before) - 1 and sidecar["appended_columns"] == ["unk"]
    assert sidecar["signature"].startswith("mosesrnn:") and "unk(side=target" in sidecar["signature"]


def test_score_to_stdout(vocab_dir, tatoeba_table):
    result = CliRunner().invoke(main, ["score", str(tatoeba_table), "--vocab", str(vocab_dir), "-q",
                                       "--features", "unk", "-o", "-"])
    assert result.exit_code == 0
    assert result.stdout.count("\n") == 3001


BAD_LINES = {  # each comes after 5,000 good lines, so some chunks were already written
    "missing-field": (b"c ||| d\n", ":5001: expected at least 3"),
    "negative": (b"c ||| d ||| -1 1\n", ":5001: score '-1' is negative"),
    "count": (b"c ||| d ||| 1\n", ":5001: 1 scores, but the first line has 2"),
    "not-utf8": (b"caf\xe9 ||| d ||| 1 1\n", ":5001: not valid utf-8 at byte 3"),
}


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_bad_input_fails_cleanly_and_leaves_no_output(name, vocab_dir, tmp_path):
    bad_line, message = BAD_LINES[name]
    table = tmp_path / f"{name}.gz"
    table.write_bytes(gzip.compress(b"a ||| b ||| 0.5 1\n" * 5000 + bad_line + b"e ||| f ||| 1 1\n"))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    result = CliRunner().invoke(main, ["score", str(table), "--vocab", str(vocab_dir), "--features", "unk",
                                       "-o", str(out_dir / "scored.gz"), "--chunk-lines", "1000"])
    assert result.exit_code == 1
    assert f"Error: {table}{message}" in result.output
    assert list(out_dir.iterdir()) == []


def test_latin1_table_needs_encoding(vocab_dir, tmp_path):
    table = MOSES_TABLES / "europarl.de-en.latin1.2100.gz"
    out = tmp_path / "scored.gz"
    args = ["score", str(table), "--vocab", str(vocab_dir), "--features", "unk", "-o", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "not valid utf-8" in result.output and not out.exists()
    result = CliRunner().invoke(main, args + ["--encoding", "latin-1"])
    assert result.exit_code == 0, result.output
    assert ", für ||| favour |||" in gzip.open(out, "rt", encoding="utf-8").read()


def test_missing_input_and_unknown_feature(vocab_dir, tmp_path):
    result = CliRunner().invoke(main, ["score", str(tmp_path / "nope.gz"), "--vocab", str(vocab_dir),
                                       "--features", "unk", "-o", str(tmp_path / "o.gz")])
    assert result.exit_code == 1 and "nope.gz: no such file" in result.output
    result = CliRunner().invoke(main, ["score", str(tmp_path / "nope.gz"), "--features", "bleu",
                                       "-o", str(tmp_path / "o.gz")])
    assert result.exit_code == 2 and "unknown feature 'bleu'" in result.output
