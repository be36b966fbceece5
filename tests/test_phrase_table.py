"""Phrase-table I/O: lossless round trips on real tables, and clear errors on bad input."""
import gzip
import math

import pytest
from conftest import DATA, MOSES_TABLES, shared_file

from mosesrnn.formats.phrase_table import (
    PhraseTableError,
    count_scores,
    format_line,
    parse_line,
    read_entries,
)
from mosesrnn.io.compressed import atomic_output
from mosesrnn.text.tokenizers import words

REAL_TABLES = [
    DATA / "tatoeba.en-fr.3k.gz",                      # alignment, counts, two empty trailing fields
    DATA / "news.de-en.phrase-table.align-counts.gz",  # alignment and counts, no trailing fields
    MOSES_TABLES / "europarl.fr-en.5scores.300.gz",     # scores only
    MOSES_TABLES / "zh-en.6scores.91.gz",               # U+0085 inside a phrase
    MOSES_TABLES / "toy.sparse-features.gz",            # sparse field
    # The whole tables, where ../shared/data is present:
    "moses-regression-tests/phrase-tables/europarl.fr-en.phrase-table.5scores.gz",
    "moses-regression-tests/phrase-tables/zh-en.phrase-table.6scores.gz",
]


def _lines(data: bytes) -> list[str]:
    # Split on "\n" only: the zh-en table has U+0085 inside phrases, which str.splitlines() cuts at.
    return [line + "\n" for line in data.decode("utf-8").split("\n")[:-1]]


def _path(table):
    return table if not isinstance(table, str) else shared_file(table)


@pytest.mark.parametrize("table", REAL_TABLES, ids=lambda t: str(t).rsplit("/", 1)[-1])
def test_round_trip_of_real_tables_changes_nothing_but_the_appended_values(table, tmp_path):
    path = _path(table)
    original = _lines(gzip.open(path, "rb").read())
    out = tmp_path / "out.gz"
    with atomic_output(str(out)) as stream:
        for entry in read_entries(str(path)):
            stream.write(format_line(entry, ["7.5", "1"]).encode("utf-8"))
    rewritten = _lines(gzip.open(out, "rb").read())
    assert len(rewritten) == len(original)
    for before, after in zip(original, rewritten):
        old_fields, new_fields = before.split("|||"), after.split("|||")
        assert len(new_fields) == len(old_fields)
        assert old_fields[:2] == new_fields[:2] and old_fields[3:] == new_fields[3:]
        assert new_fields[2].split() == old_fields[2].split() + ["7.5", "1"]
        assert new_fields[2].replace(" 7.5 1", "", 1) == old_fields[2]


@pytest.mark.parametrize("line", [
    "das Haus ||| the house ||| 0.8 0.6 0.7 0.5 ||| 0-0 1-1 ||| 10 12 8 ||| |||\n",
    "a ||| me ||| 0.1 0.2 ||| ||| ||| sp 2",
    "x ||| y ||| 1\r\n",
    "  spaced   out ||| target  |||  1  2  ||| \n",
])
def test_parse_and_format_are_exact_inverses(line):
    assert format_line(parse_line(line, "t", 1)) == line


def test_values_are_appended_inside_the_scores_field():
    entry = parse_line("das Haus ||| the house ||| 0.8 0.6 ||| 0-0 1-1 ||| |||\n", "t", 1)
    assert format_line(entry, ["1", "2.5"]) == "das Haus ||| the house ||| 0.8 0.6 1 2.5 ||| 0-0 1-1 ||| |||\n"
    last = parse_line("a ||| b ||| 0.5", "t", 1)
    assert format_line(last, ["3"]) == "a ||| b ||| 0.5 3"


@pytest.mark.parametrize("phrase, expected", [
    ("das|ART Haus|NN", ["das", "Haus"]),
    ("&apos;s &#124; &amp;", ["&apos;s", "&#124;", "&amp;"]),
    ("a\u00a0b c", ["a\u00a0b", "c"]),  # Moses splits on space and tab only
    ("  a \t b ", ["a", "b"]),
])
def test_words_follow_moses_tokenisation_and_keep_factor_zero(phrase, expected):
    assert words(phrase) == expected


BAD_LINES = [
    ("a ||| b\n", "expected at least 3 '|||'-separated fields, found 2"),
    ("   ||| b ||| 1\n", "empty source phrase"),
    ("a |||  ||| 1\n", "empty target phrase"),
    ("a ||| b ||| 0.5 x\n", "score 'x' is not a number"),
    ("a ||| b ||| nan\n", "score 'nan' is not finite"),
    ("a ||| b ||| -0.2\n", "score '-0.2' is negative"),
    ("a ||| b ||| \n", "empty scores field"),
    ("a ||| b ||| 1 2 3\n", "3 scores, but the first line has 2"),
]


def _write_gz(path, text: bytes):
    with gzip.open(path, "wb") as stream:
        stream.write(text)
    return path


@pytest.mark.parametrize("bad, message", BAD_LINES)
def test_bad_lines_name_file_line_and_problem(bad, message, tmp_path):
    table = _write_gz(tmp_path / "bad.gz", ("ok ||| fine ||| 0.5 0.5\n" + bad).encode())
    with pytest.raises(PhraseTableError) as error:
        list(read_entries(str(table)))
    assert str(error.value) == f"{table}:2: {message}" or str(error.value).startswith(f"{table}:2: {message}")


@pytest.mark.parametrize("table, lines", [
    (MOSES_TABLES / "europarl.de-en.latin1.2100.gz", 2100),
    ("moses-regression-tests/phrase-tables/europarl.de-en.phrase-table.latin1.gz", 52567),
], ids=["slice", "whole"])
def test_latin1_table_is_rejected_with_a_line_number_unless_asked_for(table, lines):
    table = _path(table)
    with pytest.raises(PhraseTableError, match=r"latin1\.(2100\.)?gz:2019: not valid utf-8 at byte \d+"):
        list(read_entries(str(table)))
    entries = list(read_entries(str(table), encoding="latin-1"))
    assert len(entries) == lines
    assert any("ä" in entry.source or "ü" in entry.source for entry in entries)


def test_truncated_gzip_is_an_error(tmp_path, tatoeba_table):
    data = tatoeba_table.read_bytes()
    table = tmp_path / "truncated.gz"
    table.write_bytes(data[: len(data) // 2])
    with pytest.raises(PhraseTableError, match=r"truncated\.gz:\d+: cannot read compressed data"):
        list(read_entries(str(table)))


def test_count_scores_reads_the_first_line(tatoeba_table):
    assert count_scores(str(tatoeba_table)) == 4
    assert count_scores(str(MOSES_TABLES / "zh-en.6scores.91.gz")) == 6


def test_resuming_skips_lines_but_keeps_the_score_count_check(tmp_path):
    table = _write_gz(tmp_path / "t.gz", b"a ||| b ||| 1 2\nc ||| d ||| 3 4\ne ||| f ||| 5\n")
    with pytest.raises(PhraseTableError, match=":3: 1 scores, but the first line has 2"):
        list(read_entries(str(table), start_line=3))
    good = _write_gz(tmp_path / "good.gz", b"a ||| b ||| 1 2\nc ||| d ||| 3 4\ne ||| f ||| 5 6\n")
    assert [entry.source for entry in read_entries(str(good), start_line=2)] == ["c", "e"]


def test_atomic_output_leaves_nothing_behind_on_error(tmp_path):
    out = tmp_path / "out.gz"
    with pytest.raises(RuntimeError):
        with atomic_output(str(out)) as stream:
            stream.write(b"half a table\n")
            raise RuntimeError("crash")
    assert list(tmp_path.iterdir()) == []


def test_scores_are_parsed_as_moses_does():
    entry = parse_line("a ||| b ||| 1 2.718 1e-50 0 ||| |||", "t", 1)
    assert entry.scores == (1.0, 2.718, 1e-50, 0.0)
    assert max(math.log(entry.scores[2]), -100) == -100
