"""Tests of moses_integration.ini_update, the moses.ini updater, on real moses.ini files (tests/data/moses/)."""
import difflib
import gzip
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from moses_integration.ini_update import rewrite_ini, update_moses_ini
from moses_integration.new_columns import DEFAULT_WEIGHTS, new_column_weights, scored_columns
from mosesrnn.cli.moses import moses_ini
from mosesrnn.formats.moses_ini import MosesIniError, declared_features, parse_ini, phrase_tables, read_weights
from mosesrnn.formats.sidecar import Sidecar, write_sidecar

DATA = Path(__file__).parent / "data" / "moses"
INI_DIR = DATA / "moses-ini"
EXAMPLES = Path(__file__).parent.parent / "examples"
MINI_INI = DATA / "mini-system-fr-en.moses.ini"
TATOEBA_INI = DATA / "tatoeba-en-fr.moses.ini"
MINI_TABLE = DATA / "mini-system.phrase-table.rnn-unk.gz"  # 5 Moses scores + rnn + unk
TATOEBA_TABLE = DATA / "tatoeba.phrase-table.rnn-unk.gz"  # 4 Moses scores + rnn + unk
ADDED = (0.1, -0.1)

CONVERTED = "converted"
# Refusals, by the words of their error message.
CHART = "chart or syntax decoding"
PROBING = "is a ProbingPT"
BINARY = "is a PhraseDictionaryBinary: the binary format Moses' documentation lists as obsolete"
UNTUNEABLE = "tuneable=false"
OTHER_TYPE = "mosesrnn can rewrite only"
SEVERAL = "several phrase tables"

# Every moses.ini of the Moses regression tests: the --feature we pass (files with several phrase
# tables name one) and what must happen.
EXPECTED = {
    "chart.hierarchical-withDALM.moses.ini": (None, CHART),
    "chart.hierarchical-withkenlm.moses.ini": (None, CHART),
    "chart.hierarchical.incremental.moses.ini": (None, CHART),
    "chart.hierarchical.ondisk.kenlm.moses.ini": (None, CHART),
    "chart.nbest-with-alignment.kenlm.moses.ini": (None, CHART),
    "chart.show-weights.target-syntax.moses.ini": (None, CHART),
    "chart.suffix-array.moses.ini": (None, CHART),
    "chart.target-syntax.moses.ini": (None, CHART),
    "chart.target-syntax.ondisk.moses.ini": (None, CHART),
    "misc.binarize-compress-pt.moses.ini": (None, CONVERTED),
    "moses2.basic-surface-only-probing.moses.ini": (None, PROBING),
    "moses2.basic-surface-only.moses.ini": (None, CONVERTED),
    "moses2.hierarchical-withkenlm-probing.moses.ini": (None, CHART),
    "moses2.hierarchical-withkenlm.moses.ini": (None, CHART),
    "moses2.lexicalized-reordering-probing-compactlexro.moses.ini": (None, PROBING),
    "moses2.lexicalized-reordering-probing.moses.ini": (None, PROBING),
    "phrase.2fac.moses.ini": (None, CONVERTED),
    "phrase.TargetNGramFeature.moses.ini": (None, BINARY),
    "phrase.basic-lm-oov.moses.ini": (None, CONVERTED),
    "phrase.basic-lm-oov.oldformat.moses.ini": (None, CONVERTED),
    "phrase.basic-surface-binptable.moses.ini": (None, BINARY),
    "phrase.basic-surface-binptable.oldformat.moses.ini": (None, BINARY),
    "phrase.basic-surface-ondisk.moses.ini": (None, CONVERTED),
    "phrase.basic-surface-only-probing.moses.ini": (None, PROBING),
    "phrase.basic-surface-only-withirstlm-binlm.moses.ini": (None, CONVERTED),
    "phrase.basic-surface-only-withirstlm-binlm.oldformat.moses.ini": (None, CONVERTED),
    "phrase.basic-surface-only-withirstlm.moses.ini": (None, CONVERTED),
    "phrase.basic-surface-only-withirstlm.oldformat.moses.ini": (None, CONVERTED),
    "phrase.basic-surface-only.moses.ini": (None, CONVERTED),
    "phrase.basic-surface-only.oldformat.moses.ini": (None, CONVERTED),
    "phrase.cache-multi-factor.moses.ini": ("PhraseDictionaryMemory0", CONVERTED),
    "phrase.compresspt.moses.ini": (None, CONVERTED),
    "phrase.compresspt.oldformat.moses.ini": (None, CONVERTED),
    "phrase.confusionNet-multi-factor.moses.ini": ("PhraseDictionaryBinary0", BINARY),
    "phrase.confusionNet-surface-only.binary.moses.ini": (None, BINARY),
    "phrase.confusionNet-surface-only.mem.moses.ini": (None, CONVERTED),
    "phrase.confusionNet-surface-only.moses.ini": (None, BINARY),
    "phrase.confusionNet-surface-only.ondisk.moses.ini": (None, CONVERTED),
    "phrase.consensus-decoding-surface.moses.ini": (None, CONVERTED),
    "phrase.consensus-decoding-surface.oldformat.moses.ini": (None, CONVERTED),
    "phrase.early-distortion-cost.kenlm.moses.ini": (None, CONVERTED),
    "phrase.lattice-distortion.moses.ini": (None, BINARY),
    "phrase.lattice-surface.moses.ini": (None, BINARY),
    "phrase.lattice.bin.moses.ini": (None, BINARY),
    "phrase.lattice.mem.moses.ini": (None, CONVERTED),
    "phrase.lattice.ondisk.moses.ini": (None, CONVERTED),
    "phrase.lexicalized-reordering-bin.moses.ini": (None, BINARY),
    "phrase.lexicalized-reordering-cn.moses.ini": (None, BINARY),
    "phrase.lexicalized-reordering-probing.moses.ini": (None, PROBING),
    "phrase.lexicalized-reordering-sparse.moses.ini": (None, CONVERTED),
    "phrase.lexicalized-reordering.moses.ini": (None, CONVERTED),
    "phrase.multi-factor-binptable.moses.ini": ("PhraseDictionaryBinary1", BINARY),
    "phrase.multi-factor-drop.moses.ini": ("PhraseDictionaryMemory0", CONVERTED),
    "phrase.multi-factor.moses.ini": ("PhraseDictionaryMemory0", CONVERTED),
    "phrase.multi-factor.oldformat.moses.ini": ("PhraseDictionaryMemory0", CONVERTED),
    "phrase.multi-lm.moses.ini": (None, BINARY),
    "phrase.multimodel-binptable.moses.ini": ("PhraseDictionaryMultiModel0", OTHER_TYPE),
    "phrase.multimodel.moses.ini": ("PhraseDictionaryMemory1", UNTUNEABLE),
    "phrase.multimodelcounts.moses.ini": ("PhraseDictionaryMultiModelCounts0", OTHER_TYPE),
    "phrase.nbest-multi-factor.distinct.moses.ini": ("PhraseDictionaryMemory0", CONVERTED),
    "phrase.nbest-multi-factor.moses.ini": ("PhraseDictionaryMemory0", CONVERTED),
    "phrase.nbest-with-alignment.moses.ini": (None, CONVERTED),
    "phrase.phrase-length-feature.moses.ini": (None, CONVERTED),
    "phrase.placeholder.moses.ini": (None, CONVERTED),
    "phrase.ptable-filtering.moses.ini": (None, CONVERTED),
    "phrase.show-weights.lex-reorder.moses.ini": (None, CONVERTED),
    "phrase.show-weights.lex-reorder.oldformat.moses.ini": (None, CONVERTED),
    "phrase.show-weights.moses.ini": (None, BINARY),
    "phrase.source-word-deletion.moses.ini": (None, CONVERTED),
    "phrase.source-word-deletion.nbest.moses.ini": (None, CONVERTED),
    "phrase.sparse-features.moses.ini": (None, BINARY),
    "phrase.sparse-phrase-table.moses.ini": (None, CONVERTED),
    "phrase.sparse-phrase-table.oldformat.moses.ini": (None, CONVERTED),
    "phrase.target-word-insertion.moses.ini": (None, CONVERTED),
    "phrase.word-translation.moses.ini": (None, CONVERTED),
    "phrase.xml-markup.moses.ini": (None, BINARY),
    "phrase.xml-markup.oldformat.moses.ini": (None, BINARY),
}


def table_with_columns(directory: Path, columns: int) -> str:
    """Real scored lines (7 columns) cut, or padded with e^0, to ``columns`` scores."""
    with gzip.open(MINI_TABLE, "rt", encoding="utf-8") as stream:
        lines = stream.read().splitlines()[:3]
    path = directory / f"table.{columns}.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for line in lines:
            source, target, scores = line.split(" ||| ")
            values = (scores.split() + ["1.0"] * columns)[:columns]
            out.write(f"{source} ||| {target} ||| {' '.join(values)}\n")
    return str(path)


def weight_t(text: str) -> list[str]:
    return [line.value for line in parse_ini(text) if line.section == "weight-t" and line.value]


def changed_blocks(old: str, new: str) -> list[tuple]:
    """The non-equal opcodes of a line diff: (tag, old start, old end, new start, new end), 0-based."""
    matcher = difflib.SequenceMatcher(None, old.splitlines(True), new.splitlines(True), autojunk=False)
    return [op for op in matcher.get_opcodes() if op[0] != "equal"]


def check_converted(old_text: str, new_text: str, name: str, table: str) -> None:
    """num-features, weight count, path, and that only the expected lines changed."""
    old_tables = {t.name: t for t in phrase_tables(parse_ini(old_text))}
    new_tables = {t.name: t for t in phrase_tables(parse_ini(new_text))}
    old, new = old_tables[name], new_tables[name]
    assert new.num_features == old.num_features + len(ADDED)
    assert new.path == table
    assert {n: t.num_features for n, t in new_tables.items() if n != name} == \
        {n: t.num_features for n, t in old_tables.items() if n != name}
    blocks = changed_blocks(old_text, new_text)
    if old.legacy:
        legacy = [t for t in old_tables.values() if t.legacy]
        end = sum(t.num_features for t in legacy[:legacy.index(old) + 1])
        old_weights = weight_t(old_text)
        assert weight_t(new_text) == old_weights[:end] + [repr(w) for w in ADDED] + old_weights[end:]
        assert len(weight_t(new_text)) == sum(t.num_features for t in new_tables.values())
        feature_line = old.line.number - 1
        assert blocks[0] == ("replace", feature_line, feature_line + 1, feature_line, feature_line + 1)
        assert [op[0] for op in blocks[1:]] == ["insert"] and blocks[1][4] - blocks[1][3] == len(ADDED)
    else:
        old_weights, new_weights = read_weights_text(old_text), read_weights_text(new_text)
        assert len(new_weights[name]) == new.num_features
        assert new_weights[name] == old_weights[name] + ADDED
        assert {k: v for k, v in new_weights.items() if k != name} == \
            {k: v for k, v in old_weights.items() if k != name}
        assert [op[0] for op in blocks] == ["replace", "replace"]
        assert all(op[2] - op[1] == 1 == op[4] - op[3] for op in blocks)
        assert blocks[0][1] == old.line.number - 1


def read_weights_text(text: str) -> dict:
    weights = {}
    for line in parse_ini(text):
        if line.section == "weight" and line.value:
            name, *values = line.value.split()
            weights[name[:-1]] = tuple(float(v) for v in values)
    return weights


def test_expected_covers_every_real_ini():
    assert sorted(EXPECTED) == sorted(p.name for p in INI_DIR.glob("*.ini"))
    assert len(EXPECTED) == 77


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_ini_converts_or_is_refused(name, tmp_path):
    feature, outcome = EXPECTED[name]
    source = INI_DIR / name
    old_text = source.read_text(encoding="utf-8")
    output = tmp_path / "new.ini"
    if outcome != CONVERTED:
        with pytest.raises(MosesIniError, match=outcome) as error:
            update_moses_ini(str(source), str(tmp_path / "absent.gz"), str(output), weights=ADDED,
                             feature=feature)
        assert str(error.value).startswith(f"{source}:")
        assert not output.exists()
        return
    tables = {t.name: t for t in phrase_tables(parse_ini(old_text))}
    chosen = feature or next(iter(tables))
    table = table_with_columns(tmp_path, tables[chosen].num_features + len(ADDED))
    update = update_moses_ini(str(source), table, str(output), weights=ADDED, feature=feature).update
    assert update.feature == chosen
    expected_path = table if tables[chosen].type == "PhraseDictionaryMemory" else update.table_path
    check_converted(old_text, output.read_text(encoding="utf-8"), chosen, expected_path)
    assert source.read_text(encoding="utf-8") == old_text


@pytest.mark.parametrize("name", sorted(n for n, (feature, _) in EXPECTED.items() if feature))
def test_several_tables_without_feature_are_refused_with_their_names(name):
    text = (INI_DIR / name).read_text(encoding="utf-8")
    with pytest.raises(MosesIniError, match=SEVERAL) as error:
        rewrite_ini(text, ADDED, "t.gz", path=name)
    for table in phrase_tables(parse_ini(text)):
        assert table.name in str(error.value)


GOLDEN = [  # (input ini, scored table, --feature, golden output)
    ("mini-system-fr-en.moses.ini", MINI_TABLE, None, "mini-system-fr-en.rnn-unk.moses.ini"),
    ("tatoeba-en-fr.moses.ini", TATOEBA_TABLE, None, "tatoeba-en-fr.rnn-unk.moses.ini"),
    ("moses-ini/phrase.basic-surface-only.oldformat.moses.ini", MINI_TABLE, None,
     "phrase.basic-surface-only.oldformat.rnn-unk.moses.ini"),
    ("moses-ini/phrase.compresspt.moses.ini", MINI_TABLE, None, "phrase.compresspt.rnn-unk.moses.ini"),
    ("moses-ini/misc.binarize-compress-pt.moses.ini", MINI_TABLE, None,
     "misc.binarize-compress-pt.rnn-unk.moses.ini"),
    ("moses-ini/phrase.lattice.ondisk.moses.ini", TATOEBA_TABLE, None,
     "phrase.lattice.ondisk.rnn-unk.moses.ini"),
    ("moses-ini/phrase.multi-factor.oldformat.moses.ini", MINI_TABLE, "PhraseDictionaryMemory0",
     "phrase.multi-factor.oldformat.rnn-unk.moses.ini"),
]


@pytest.mark.parametrize("ini, table, feature, golden", GOLDEN, ids=[g[3] for g in GOLDEN])
def test_golden_outputs(ini, table, feature, golden, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    local_table = "mini.rnn-unk.gz" if table == MINI_TABLE else "tatoeba.rnn-unk.gz"
    shutil.copy(table, local_table)
    update_moses_ini(str(DATA / ini), local_table, "new.ini", weights=ADDED, feature=feature)
    assert (tmp_path / "new.ini").read_bytes() == (DATA / "golden" / golden).read_bytes()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []


def test_features_are_named_as_moses_names_them():
    """FeatureFunction::ParseLine: ``name=``, else the type and a count of the unnamed ones of that type before it."""
    text = "[feature]\nNeuralLM name=CSLM order=5\nNeuralLM order=3\nKENLM order=5\nNeuralLM\n" \
           "BilingualNPLM name=NeuralLM1\n[weight]\nCSLM= 0.1\n"
    features = declared_features(parse_ini(text))
    assert [(f.type, f.name, f.line.number) for f in features] == [
        ("NeuralLM", "CSLM", 2), ("NeuralLM", "NeuralLM0", 3), ("KENLM", "KENLM0", 4), ("NeuralLM", "NeuralLM1", 5),
        ("BilingualNPLM", "NeuralLM1", 6)]
    assert features[1].args == {"order": "3"}
    assert [table.name for table in phrase_tables(parse_ini(MINI_INI.read_text()))] == ["PhraseDictionaryMemory0"]


def test_mini_system_matches_what_moses_loaded():
    """moses.md: 7 columns, num-features=7 and seven weights loaded in a real decoder."""
    golden = DATA / "golden" / "mini-system-fr-en.rnn-unk.moses.ini"
    assert phrase_tables(parse_ini(golden.read_text()))[0].num_features == 7
    assert len(read_weights(str(golden))["PhraseDictionaryMemory0"]) == 7


def test_a_tuned_ini_pointed_at_its_pruned_table_keeps_its_weights(tmp_path):
    """`mosesrnn prune` copies the scored table's sidecar (rnn, unk appended); the tuned ini counts them already."""
    tuned = tmp_path / "tuned.ini"
    update_moses_ini(str(MINI_INI), str(MINI_TABLE), str(tuned), weights=ADDED)
    pruned = table_with_columns(tmp_path, 7)
    write_sidecar(pruned, Sidecar(signature="mosesrnn:0.3.0|features:rnn(model=1a2b),unk(side=both,vocab=1a2b)|pruned",
                                  mosesrnn_version="0.3.0", input=str(MINI_TABLE), input_bytes=1234, shard="1/1",
                                  first_line=1, last_line=3, lines=3, total_lines=3, bytes=99,
                                  appended_columns=("rnn", "unk"), features=("rnn(model=1a2b)", "unk(side=both)")))
    update = update_moses_ini(str(tuned), pruned, str(tmp_path / "pruned.ini")).update
    assert update.weights == () and update.old_num_features == update.new_num_features == 7
    before, after = tuned.read_text(encoding="utf-8"), (tmp_path / "pruned.ini").read_text(encoding="utf-8")
    assert after == before.replace(str(MINI_TABLE), pruned)
    assert read_weights(str(tmp_path / "pruned.ini")) == read_weights(str(tuned))


def test_table_with_wrong_column_count_is_refused(tmp_path):
    output = tmp_path / "new.ini"
    with pytest.raises(MosesIniError) as error:
        update_moses_ini(str(MINI_INI), str(TATOEBA_TABLE), str(output), weights=ADDED)
    assert str(error.value) == (
        f"{TATOEBA_TABLE}:1: 6 score columns, but PhraseDictionaryMemory0 ({MINI_INI}:22) "
        "would have num-features=5+2=7")
    assert not output.exists()


def test_unknown_feature_lists_the_phrase_tables():
    with pytest.raises(MosesIniError, match=r"no phrase table named TM9; the phrase tables are: "
                                            r"TranslationModel0 \(PhraseDictionaryMemory\)"):
        rewrite_ini(TATOEBA_INI.read_text(), ADDED, "t.gz", "TM9")


def test_tuneable_components_are_extended():
    text = TATOEBA_INI.read_text().replace(
        "num-features=4 ", "num-features=4 tuneable-components=true,false,true,true ")
    update = rewrite_ini(text, ADDED, "t.gz")
    assert "tuneable-components=true,false,true,true,true,true path=t.gz" in update.text


def test_comment_and_crlf_endings_survive():
    text = TATOEBA_INI.read_text().replace("TranslationModel0= 0.2 0.2 0.2 0.2",
                                           "TranslationModel0= 0.2 0.2 0.2 0.2 # tm")
    text = text.replace("\n", "\r\n")
    new = rewrite_ini(text, ADDED, "t.gz").text
    assert "TranslationModel0= 0.2 0.2 0.2 0.2 0.1 -0.1 # tm\r\n" in new
    assert new.count("\r\n") == text.count("\r\n") and "\n" not in new.replace("\r\n", "")


def test_legacy_weights_go_after_the_chosen_table():
    """The second of two legacy tables: new [weight-t] lines follow its own five weights."""
    text = (INI_DIR / "phrase.multi-factor.oldformat.moses.ini").read_text()
    text = text.replace("1 1 1 5 ${MODEL_PATH}", "0 0 0 5 ${MODEL_PATH}")  # binary 1-1 table as memory 0-0
    update = rewrite_ini(text, ADDED, "t.gz", "PhraseDictionaryMemory1")
    assert weight_t(update.text) == ["0.2"] * 10 + ["0.1", "-0.1"]
    assert "0 0 0 7 t.gz" in update.text


def test_table_not_translating_surface_words_is_refused():
    text = MINI_INI.read_text().replace("PhraseDictionaryMemory input-factor=0",
                                        "PhraseDictionaryMemory input-factor=1")
    with pytest.raises(MosesIniError, match="input-factor=1: it does not translate surface words"):
        rewrite_ini(text, ADDED, "t.gz")


def test_inconsistent_input_is_refused():
    text = MINI_INI.read_text().replace("PhraseDictionaryMemory0= 0.2 0.2 0.2 0.2 0.2",
                                        "PhraseDictionaryMemory0= 0.2")
    with pytest.raises(MosesIniError, match=r":30: PhraseDictionaryMemory0 has num-features=5 but 1 weights"):
        rewrite_ini(text, ADDED, "t.gz", path="mini.ini")


@pytest.mark.parametrize("edit, problem", [
    (lambda t: t.replace("[feature]", "[ttable-file]\n0 0 0 5 /pt.gz\n\n[feature]"),
     "phrase tables in both [feature] and legacy [ttable-file]"),
    (lambda t: t.replace("PhraseDictionaryMemory input-factor", "WordPenalty input-factor"),
     "no phrase table in [feature] or [ttable-file]"),
    (lambda t: t.replace("PhraseDictionaryMemory0= 0.2 0.2 0.2 0.2 0.2", ""),
     "no [weight] line 'PhraseDictionaryMemory0= ...'"),
    (lambda t: t.replace(" num-features=5", ""), ":22: PhraseDictionaryMemory0 has no num-features="),
    (lambda t: t.replace("num-features=5", "num-features=five"), ":22: num-features 'five' is not a whole"),
])
def test_named_edge_cases_are_refused(edit, problem):
    with pytest.raises(MosesIniError, match=re.escape(problem)):
        rewrite_ini(edit(MINI_INI.read_text()), ADDED, "t.gz", path="mini.ini")


def test_binary_path_only_for_binarized_tables():
    compact = (INI_DIR / "phrase.compresspt.moses.ini").read_text()
    assert rewrite_ini(compact, ADDED, "t.gz", binary="/models/pt.minphr").table_path == "/models/pt.minphr"
    assert rewrite_ini(compact, ADDED, "t.gz").table_path == "t.minphr"
    ondisk = (INI_DIR / "phrase.basic-surface-ondisk.moses.ini").read_text()
    assert rewrite_ini(ondisk, ADDED, "t.gz").table_path == "t.ondisk"
    with pytest.raises(MosesIniError, match="--binary is only for"):
        rewrite_ini(MINI_INI.read_text(), ADDED, "t.gz", binary="x.minphr")


@pytest.mark.parametrize("add, features, weights, expected", [
    (None, None, None, (0.1, -0.1)),
    (2, None, None, (0.1, -0.1)),
    (None, ["unk", "rnn"], None, (-0.1, 0.1)),
    (1, ["rnn"], None, (0.1,)),
    (None, None, [0.3, -0.05], (0.3, -0.05)),
    (2, ["rnn", "unk"], [0.3, -0.05], (0.3, -0.05)),
    (1, None, None, r"--add 1, but the appended columns are rnn,unk \(2\)"),
    (None, ["rnn", "bleu"], None, "no default weight for column\\(s\\) bleu"),
    (3, None, [0.1, 0.2], "--add 3, but 2 weights were given"),
    (None, ["rnn"], [0.1, 0.2], "--features names 1 columns but --weights gives 2"),
    (None, None, [float("nan")], "finite"),
])
def test_initial_weights(add, features, weights, expected):
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=expected):
            new_column_weights(add, features, weights)
    else:
        assert new_column_weights(add, features, weights) == expected


def test_column_names_come_from_the_scorers_sidecar(tmp_path):
    """`mosesrnn score --features unk` wrote one column and TABLE.json says so: weight -0.1."""
    table = table_with_columns(tmp_path, 6)
    write_sidecar(table, Sidecar(signature="mosesrnn:0.3.0|features:unk(side=both,vocab=1a2b)|encoding:utf-8",
                                 mosesrnn_version="0.3.0", input="/data/table.gz", input_bytes=1234, shard="1/1",
                                 first_line=1, last_line=2, lines=2, total_lines=2, bytes=99,
                                 appended_columns=("unk",), features=("unk(side=both,vocab=1a2b)",)))
    assert scored_columns(table) == ("unk",)
    update = update_moses_ini(str(MINI_INI), table, str(tmp_path / "new.ini")).update
    assert update.weights == (-0.1,) and update.new_num_features == 6
    explicit = update_moses_ini(str(MINI_INI), table, str(tmp_path / "new2.ini"), features=["rnn"]).update
    assert explicit.weights == (0.1,)
    with pytest.raises(ValueError, match=r"--add 2, but the appended columns are unk \(1\)"):
        update_moses_ini(str(MINI_INI), table, str(tmp_path / "new3.ini"), add=2)
    with gzip.open(table, "wt", encoding="utf-8") as out:  # the table changed since: its sidecar names nothing
        out.write("la maison ||| the house ||| 1 1 1 1 1 1\n")
    with pytest.raises(ValueError, match="the sidecar of another table, or the table changed since"):
        scored_columns(table)


def test_unreadable_sidecar_is_refused(tmp_path):
    table = table_with_columns(tmp_path, 6)
    Path(table + ".json").write_text('["unk"]')
    with pytest.raises(ValueError, match=r"table.6.gz.json: not the JSON record `mosesrnn score` writes"):
        scored_columns(table)
    assert scored_columns(str(MINI_TABLE)) is None


def test_default_weights_have_the_helpful_signs():
    """Moses sees log p <= 0 for rnn (reward probable pairs: +) and n >= 0 for unk (penalise: -)."""
    assert DEFAULT_WEIGHTS["rnn"] > 0 > DEFAULT_WEIGHTS["unk"]


def test_read_weights_of_real_tuned_ini():
    weights = read_weights(str(DATA / "tuned" / "bartvm-europarl.moses.ini"))
    assert weights["TranslationModel0"] == (0.0739275424061457, 0.0498598133480913, 0.150962508519994,
                                            0.0230490504260922)
    assert weights["CSLM"] == (0.0,) and len(weights["LexicalReordering0"]) == 6


def test_cli_writes_the_ini_and_reports(tmp_path):
    output = tmp_path / "new.ini"
    result = CliRunner().invoke(moses_ini, [str(MINI_INI), "--table", str(MINI_TABLE), "--add", "2",
                                            "--features", "rnn,unk", "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert "PhraseDictionaryMemory0 (PhraseDictionaryMemory, line 22)" in result.stderr
    assert read_weights(str(output))["PhraseDictionaryMemory0"] == (0.2,) * 5 + ADDED


def test_cli_weights_override_and_binarize_hint(tmp_path):
    output = tmp_path / "new.ini"
    ini = INI_DIR / "phrase.compresspt.moses.ini"
    result = CliRunner().invoke(moses_ini, [str(ini), "--table", str(MINI_TABLE), "--weights", "-0.05,0.2",
                                            "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert read_weights(str(output))["PhraseDictionaryCompact0"][-2:] == (-0.05, 0.2)
    binary = str(MINI_TABLE)[:-3] + ".minphr"
    assert f"mosesrnn binarize {MINI_TABLE} --format compact -o {binary}" in result.stderr


def test_cli_errors_exit_1_with_file_and_line(tmp_path):
    result = CliRunner().invoke(moses_ini, [str(MINI_INI), "--table", str(TATOEBA_TABLE),
                                            "-o", str(tmp_path / "x")])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {TATOEBA_TABLE}:1: 6 score columns")
    result = CliRunner().invoke(moses_ini, [str(MINI_INI), "--table", str(MINI_TABLE), "--weights", "a,b",
                                            "-o", str(tmp_path / "x")])
    assert result.exit_code == 2 and "not a comma-separated list of numbers" in result.stderr


def test_cli_help_explains_every_option():
    text = CliRunner().invoke(moses_ini, ["--help"]).output
    for option in ("--table", "--add", "--features", "--weights", "--feature", "--binary", "--output"):
        assert option in text
    assert "rnn +0.1, rnn-rev +0.1, unk -0.1" in " ".join(text.split())


def test_the_table_the_ini_reads_already_is_refused(tmp_path):
    """`moses-ini INI --table T` with the very table INI reads (unscored: its columns counted already) would
    change nothing and exit 0; a user who forgot to give the scored table is told, and no ini is written."""
    shutil.copy(EXAMPLES / "moses.ini", tmp_path / "moses.ini")
    shutil.copy(EXAMPLES / "phrase-table.gz", tmp_path / "phrase-table.gz")
    output = tmp_path / "moses.rnn.ini"
    result = CliRunner().invoke(moses_ini, [str(tmp_path / "moses.ini"), "--table", str(tmp_path / "phrase-table.gz"),
                                            "-o", str(output)])
    assert result.exit_code == 1 and "reads this table already, with its 4 score columns" in result.output
    assert not output.exists()
    shutil.copy(EXAMPLES / "phrase-table.gz", tmp_path / "pruned.gz")  # another table, counted already: re-pointed
    result = CliRunner().invoke(moses_ini, [str(tmp_path / "moses.ini"), "--table", str(tmp_path / "pruned.gz"),
                                            "-o", str(output)])
    assert result.exit_code == 0 and "its weights kept" in result.output
