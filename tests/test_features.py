"""Feature values as Moses will read them: max(ln(x), -100)."""
import math

import pytest

from mosesrnn.features import UnknownWordFeature, moses_exp
from mosesrnn.phrase_table import parse_line
from mosesrnn.vocab import Vocabulary, VocabularyPair

VOCABULARIES = VocabularyPair(Vocabulary(["the", "house", "is"]), Vocabulary(["la", "maison", "est"]))


def moses_view(written: str) -> float:
    """What Moses stores for a written score (LoaderStandard: FloorScore(TransformScore(x)))."""
    value = float(written)
    return max(math.log(value), -100.0) if value > 0 else -100.0


# source, target, unknown source words, unknown target words (counted by hand)
CASES = [
    ("the house", "la maison", 0, 0),
    ("the castle", "le château", 1, 2),
    ("the|DT house|NN is", "la|DT maison|NN", 0, 0),   # factor 0 is looked up
    ("&apos;s house", "est &amp; la", 1, 1),
    ("<unk> is", "est", 1, 0),                          # a literal <unk> is an unknown word
    ("a b c d e f g", "h i j k l m n", 7, 7),
]


@pytest.mark.parametrize("source, target, n_source, n_target", CASES)
@pytest.mark.parametrize("side", ["source", "target", "both"])
def test_moses_reads_the_unknown_word_count_exactly(source, target, n_source, n_target, side):
    feature = UnknownWordFeature(VOCABULARIES, side)
    [written] = feature.compute([parse_line(f"{source} ||| {target} ||| 1", "t", 1)])
    expected = {"source": n_source, "target": n_target, "both": n_source + n_target}[side]
    assert abs(moses_view(written) - expected) < 1e-9


@pytest.mark.parametrize("log_p", [-0.001, -3.0, -42.123456789, -99.9])
def test_rnn_style_values_keep_nine_significant_digits(log_p):
    assert moses_view(moses_exp(log_p, digits=9)) == pytest.approx(log_p, abs=1e-8)


def test_values_below_e_minus_100_are_floored_by_moses():
    assert moses_view(moses_exp(-150.0, digits=9)) == -100.0
    assert moses_view(moses_exp(-800.0, digits=9)) == -100.0  # underflows to 0, floored too


def test_unknown_side_is_checked():
    with pytest.raises(ValueError, match="side must be one of"):
        UnknownWordFeature(VOCABULARIES, "left")
