"""Feature values as Moses will read them: max(ln(x), -100)."""
import inspect
import math
from pathlib import Path

import pytest

from mosesrnn.features.unk import UnknownWordFeature
from mosesrnn.formats.phrase_table import parse_line, table_value
from mosesrnn.text.vocab import Vocabulary, VocabularyPair

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
    [value] = feature.values([parse_line(f"{source} ||| {target} ||| 1", "t", 1)])
    written = table_value(value, feature.spec.table_digits)
    expected = {"source": n_source, "target": n_target, "both": n_source + n_target}[side]
    assert abs(moses_view(written) - expected) < 1e-9


@pytest.mark.parametrize("log_p", [-0.001, -3.0, -42.123456789, -99.9])
def test_rnn_style_values_keep_nine_significant_digits(log_p):
    assert moses_view(table_value(log_p, digits=9)) == pytest.approx(log_p, abs=1e-8)


def test_values_below_e_minus_100_are_floored_by_moses():
    assert moses_view(table_value(-150.0, digits=9)) == -100.0
    assert moses_view(table_value(-800.0, digits=9)) == -100.0  # underflows to 0, floored too


def test_unknown_side_is_checked():
    with pytest.raises(ValueError, match="side must be one of"):
        UnknownWordFeature(VOCABULARIES, "left")


def test_registry_is_what_moses_integration_and_the_cli_read():
    from moses_integration.new_columns import DEFAULT_FEATURES, DEFAULT_WEIGHTS
    from mosesrnn.features.registry import FEATURES, default_features
    assert DEFAULT_WEIGHTS == {name: spec.default_weight for name, spec in FEATURES.items()}
    assert DEFAULT_WEIGHTS["rnn"] > 0 > DEFAULT_WEIGHTS["unk"]  # reward probable pairs, penalise unknown words
    assert DEFAULT_FEATURES == default_features({"model"}) == ("rnn", "unk")
    assert default_features() == ("unk",)
    assert default_features({"model", "reverse_model"}) == ("rnn", "rnn-rev", "unk")


@pytest.mark.parametrize("text, message", [
    ("rnn,bleu", "unknown feature 'bleu'"),
    ("unk,unk", "feature unk named twice"),
    (" , ", "no feature named"),
])
def test_feature_names_are_checked(text, message):
    from mosesrnn.features.registry import parse_feature_names
    with pytest.raises(ValueError, match=message):
        parse_feature_names(text)


def test_every_feature_reports_exactly_the_settings_its_registry_entry_lists(tmp_path):
    from scoring_helpers import save_tiny_joint_model, save_tiny_model
    from test_cslm import tiny_lm

    from mosesrnn.bilm.orientation import JOINT_FEATURES
    from mosesrnn.cslm.model_file import save_cslm
    from mosesrnn.features.options import FeatureOptions
    from mosesrnn.features.registry import FEATURES, describe
    from mosesrnn.features.selection import select_features
    lm = tiny_lm()
    save_cslm(str(tmp_path / "lm.pt"), lm.model, lm.codec)
    options = FeatureOptions(features=tuple(FEATURES), model=save_tiny_model(str(tmp_path / "m.pt")),
                             reverse_model=save_tiny_model(str(tmp_path / "r.pt"), "target-to-source"),
                             lm=str(tmp_path / "lm.pt"),
                             **{o.option: save_tiny_joint_model(str(tmp_path / f"{name}.pt"), feature=name)
                                for name, o in JOINT_FEATURES.items()})
    features = select_features(options)
    for feature in features:
        text = describe(feature)
        assert text.startswith(feature.spec.name + "(")
        assert [item.split("=")[0] for item in text[len(feature.spec.name) + 1:-1].split(",")] == \
            list(feature.spec.settings)
    rnn, unk = features[0], features[2]
    assert rnn.trained.vocabularies.source is unk.vocabularies.source  # the model file is loaded once


@pytest.mark.parametrize("option,given", [("--normalizer skip", dict(normalizer="skip")),
                                          ("--length-normalize", dict(length_normalize=True))])
def test_a_setting_no_computed_column_takes_is_refused(tmp_path, option, given):
    """`score --features unk --normalizer skip` wrote the unk column alone and said nothing of the option."""
    from scoring_helpers import save_tiny_model

    from mosesrnn.features.options import FeatureOptions
    from mosesrnn.features.selection import select_features
    model = save_tiny_model(str(tmp_path / "m.pt"))
    with pytest.raises(ValueError, match=rf"{option} changes only the rnn and rnn-rev columns, and none is computed "
                                         r"\(columns: unk\)"):
        select_features(FeatureOptions(features="unk", model=model, **given))
    taken = FeatureOptions(features="rnn,unk", model=model, length_normalize=True)
    assert [feature.spec.name for feature in select_features(taken)] == ["rnn", "unk"]


def test_feature_options_model_fields_are_the_model_registrys_options():
    """FeatureOptions is written out (go-to-definition, rename and type checkers see it): its model fields, after
    ``features`` and before ``vocab``, are MODEL_OPTIONS' names in the registry's order, each None by default."""
    import dataclasses

    from mosesrnn.features.options import FeatureOptions
    from mosesrnn.models import MODEL_OPTIONS
    names = [field.name for field in dataclasses.fields(FeatureOptions)]
    model_fields = names[names.index("features") + 1:names.index("vocab")]
    assert model_fields == list(MODEL_OPTIONS)
    assert all(FeatureOptions.__dataclass_fields__[name].default is None for name in model_fields)
    assert "make_dataclass" not in Path(inspect.getsourcefile(FeatureOptions)).read_text(encoding="utf-8")
    assert inspect.getsource(FeatureOptions).startswith("@dataclass(frozen=True)\nclass FeatureOptions:")
