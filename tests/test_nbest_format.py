"""Moses n-best lists: exact round trip of both formats on real files, appending groups, bad lines."""
import gzip
import math
from pathlib import Path

import pytest

from mosesrnn.formats.nbest import NbestError, format_line, group_by_sentence, parse_line, read_nbest
from mosesrnn.formats.phrase_table import table_value

DATA = Path(__file__).parent / "data" / "nbest"
SHARED = Path(__file__).parent.parent.parent / "shared" / "data"
OLD_FORMAT = DATA / "mert.nbest.1.gz"  # "0||| hyp ||| d= ... lm= ... tm= ... w= ||| total"
NEW_FORMAT = DATA / "tatoeba.dev30.untuned.100best.gz"  # "0 ||| hyp  ||| LexicalReordering0= ... ||| total"

NEW_LINE = ("0 ||| pouvons-nous partir ?  ||| LexicalReordering0= -0.501372 0 0 -0.347543 0 0 Distortion0= 0 "
            "LM0= -13.7473 WordPenalty0= -3 PhrasePenalty0= 2 TranslationModel0= -1.85006 -2.39913 -2.83573 -7.49869 "
            "||| -1.44457\n")
WITH_ALIGNMENT = ("0 ||| beide Versäumnisse . ||| IRSTLM0= -112.888 Distortion0= 0 WordPenalty0= -9 "
                  "||| -549.862 ||| 0=0 1-2=1-2 ||| 0-0 1-1 2-2 \n")


@pytest.mark.parametrize("path", [OLD_FORMAT, NEW_FORMAT, DATA / "tatoeba.dev30.mert-iter1.100best.gz"],
                         ids=["old-format", "new-format", "new-format-tuned"])
def test_round_trip_is_exact(path):
    original = gzip.open(path, "rb").read()
    assert "".join(format_line(entry) for entry in read_nbest(str(path))).encode("utf-8") == original


@pytest.mark.parametrize("name", ["moses-regression-tests/nbest/mert.nbest.3.gz",
                                  "tatoeba-moses-en-fr/nbest/dev.mert-iter1.100best.gz"])
def test_round_trip_of_the_full_shared_files(name):
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared only exists on our machines and CI)")
    with gzip.open(path, "rb") as stream:
        assert all(format_line(entry).encode("utf-8") == line
                   for entry, line in zip(read_nbest(str(path)), stream, strict=True))


def test_new_format_groups():
    entry = parse_line(NEW_LINE)
    assert entry.sentence_id == 0 and entry.hypothesis == "pouvons-nous partir ?" and entry.total == -1.44457
    assert entry.feature_names == ("LexicalReordering0", "Distortion0", "LM0", "WordPenalty0", "PhrasePenalty0",
                                   "TranslationModel0")
    assert entry.features[5] == ("TranslationModel0", (-1.85006, -2.39913, -2.83573, -7.49869))


def test_old_format_groups_and_repeated_labels():
    with read_nbest(str(OLD_FORMAT)) as entries:
        entry = next(entries)
    assert entry.fields[0] == "0" and entry.feature_names == ("d", "lm", "tm", "w")
    assert entry.features[0] == ("d", (0.0, -3.30693, 0.0, 0.0, -2.83036, 0.0, 0.0))
    repeated = parse_line("3 ||| a b ||| d: -1 lm: -10 tm: -2 -3 lm: -20 w: -2 ||| -5")
    assert repeated.features == (("d", (-1.0,)), ("lm", (-10.0, -20.0)), ("tm", (-2.0, -3.0)), ("w", (-2.0,)))


@pytest.mark.parametrize("line, appended, expected_field", [
    (NEW_LINE, [("RNN0", [-12.5])], "TranslationModel0= -1.85006 -2.39913 -2.83573 -7.49869 RNN0= -12.5 "),
    (NEW_LINE, [("RNN0", [-12.5]), ("UNK0", [2.0])], "-7.49869 RNN0= -12.5 UNK0= 2 "),
    (WITH_ALIGNMENT, [("UNK0", [1.0, 0.25])], "WordPenalty0= -9 UNK0= 1 0.25 "),
    ("0||| a ||| d= 0 -3 w= -1 ||| -2\n", [("RNN0", ["-7.25"])], "w= -1 RNN0= -7.25 "),
], ids=["one", "two-groups", "alignment-fields-kept", "old-format-text-value"])
def test_append_a_group_and_parse_it_back(line, appended, expected_field):
    written = format_line(parse_line(line), appended)
    fields = written.split("|||")
    assert fields[2].endswith(expected_field)
    assert fields[:2] == line.split("|||")[:2] and fields[3:] == line.split("|||")[3:]
    again = parse_line(written)
    assert again.features[-len(appended):] == tuple((name, tuple(float(v) for v in values))
                                                     for name, values in appended)
    assert again.features[:-len(appended)] == parse_line(line).features


def test_appending_a_present_name_is_an_error():
    with pytest.raises(NbestError, match=r"^x.nbest:7: feature 'LM0' is already in the line"):
        format_line(parse_line(NEW_LINE, "x.nbest", 7), [("LM0", [1.0])])


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_value_that_is_not_a_number_is_never_written(value):
    with pytest.raises(NbestError, match=r"^x.nbest:7: feature RNN0 computed .* not a finite number"):
        format_line(parse_line(NEW_LINE, "x.nbest", 7), [("RNN0", [value])])


def test_word_scores_that_are_not_numbers_are_never_written():
    from mosesrnn.pipeline.nbest import word_score_line
    entry = parse_line(NEW_LINE, "x.nbest", 7)
    assert word_score_line(entry, [-1.5, -0.25]).endswith("||| -1.500000 -0.250000\n")
    with pytest.raises(NbestError, match=r"^x.nbest:7: the rnn model's word scores .* not all finite"):
        word_score_line(entry, [-1.5, math.nan])


def test_a_phrase_table_value_that_is_not_a_number_is_never_written():
    with pytest.raises(ValueError, match="NaN"):
        table_value(math.nan)


@pytest.mark.parametrize("text, problem", [
    ("0 ||| a b ||| LM0= -1\n", "expected at least 4 '|||'-separated fields, found 3"),
    ("x ||| a b ||| LM0= -1 ||| -1\n", "sentence id 'x' is not a non-negative integer"),
    ("-1 ||| a b ||| LM0= -1 ||| -1\n", "sentence id '-1' is not a non-negative integer"),
    ("0 ||| a b ||| LM0= -1 oops ||| -1\n", "feature score 'oops' is not a number"),
    ("0 ||| a b ||| LM0= nan ||| -1\n", "feature score 'nan' is not a number"),
    ("0 ||| a b ||| -3 LM0= -1 ||| -1\n", "feature score '-3' comes before any 'Name=' label"),
    ("0 ||| a b ||| LM0= -1 ||| total\n", "total score 'total' is not a number"),
], ids=["three-fields", "id-not-integer", "id-negative", "score-not-number", "score-nan", "score-before-label",
        "total-not-number"])
def test_bad_lines_are_rejected_with_path_and_line(tmp_path, text, problem):
    path = tmp_path / "bad.nbest"
    path.write_text(NEW_LINE + text)
    with pytest.raises(NbestError) as error:
        list(read_nbest(str(path)))
    assert str(error.value) == f"{path}:2: {problem}"


def test_decreasing_ids_are_rejected(tmp_path):
    path = tmp_path / "ids.nbest.gz"
    with gzip.open(path, "wt") as stream:
        stream.write(NEW_LINE.replace("0 |||", "1 |||", 1) + NEW_LINE)
    with pytest.raises(NbestError, match=r"ids.nbest.gz:2: sentence id 0 after 1"):
        list(read_nbest(str(path)))


def test_group_by_sentence_keeps_order():
    groups = list(group_by_sentence(read_nbest(str(OLD_FORMAT))))
    assert [sentence_id for sentence_id, _ in groups] == list(range(10))
    assert [len(entries) for _, entries in groups] == [100] * 10
    assert groups[3][1][0].line_no == 301
