"""Tests of moses_integration.ini_paths and `moses-ini --absolute-paths`, on real moses.ini files.

Moses opens a relative path as given, i.e. against the directory it runs in; mert-moses.pl runs
it inside its working directory. The real inis: the 77 of Moses' regression tests (``${...}``
placeholders), the mini fr→en system (paths relative to its folder), the Tatoeba train-model.perl
ini, and the runnable Tatoeba system of the shared data (``../phrase-table.gz``).
"""
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SHARED_DATA, shared_file

from moses_integration.ini_paths import absolute_paths, file_paths
from moses_integration.mert_moses import relative_paths
from mosesrnn.cli.moses import moses_ini
from mosesrnn.formats.moses_ini import parse_ini

DATA = Path(__file__).parent / "data" / "moses"
REAL_INIS = sorted((DATA / "moses-ini").glob("*.ini")) + [DATA / "mini-system-fr-en.moses.ini",
                                                          DATA / "tatoeba-en-fr.moses.ini"]
MINI_INI = DATA / "mini-system-fr-en.moses.ini"
MINI_DIR = SHARED_DATA / "moses-regression-tests" / "mini-system-fr-en"  # the mini system's files
MINI_TABLE = DATA / "mini-system.phrase-table.rnn-unk.gz"
TATOEBA_SYSTEM = "tatoeba-moses-en-fr/system/moses.ini"
LEGACY = """[ttable-file]
0 0 0 5 model/phrase-table.gz sparse # a comment\r
[generation-file]
0 1 2 ../generation.0-1.gz
[lmodel-file]
8 0 3 ${LM_PATH}/europarl.en.srilm.gz
[distortion-file]
0-0 wbe-msd-bidirectional-fe-allff 6 ./model/reordering-table
"""


def path_tokens_removed(text: str) -> list[str]:
    """The text with every file path blanked out: what must not change."""
    lines = parse_ini(text)
    out = [line.raw for line in lines]
    for found in file_paths(lines):
        out[found.line.number - 1] = out[found.line.number - 1].replace(found.path, "<PATH>", 1)
    return out


@pytest.mark.parametrize("ini", REAL_INIS, ids=lambda path: path.name)
def test_real_inis_change_only_their_relative_paths(ini, tmp_path):
    text = ini.read_text(encoding="utf-8")
    new, changes = absolute_paths(text, str(tmp_path))
    assert path_tokens_removed(new) == path_tokens_removed(text)
    assert all(found.path.startswith(("/", "$")) for found in file_paths(parse_ini(new)))
    assert [c.old for c in changes] == [f.path for f in file_paths(parse_ini(text)) if not f.path.startswith("$")]
    assert absolute_paths(new, "/elsewhere") == (new, [])  # idempotent: nothing relative is left


def test_placeholder_inis_are_left_byte_for_byte():
    text = (DATA / "moses-ini" / "phrase.multi-factor.oldformat.moses.ini").read_text(encoding="utf-8")
    assert absolute_paths(text, "/x") == (text, [])


def test_mini_system_resolves_against_its_folder():
    shared_file("moses-regression-tests/mini-system-fr-en/moses.ini")
    new, changes = absolute_paths(MINI_INI.read_text(encoding="utf-8"), str(MINI_DIR))
    assert [(c.line_no, c.old, c.new, c.exists) for c in changes] == [
        (17, "europarl.en.lm", f"{MINI_DIR}/europarl.en.lm", True),
        (19, "reordering-table.msd-bidirectional-fe.0.5.0-0.gz",
         f"{MINI_DIR}/reordering-table.msd-bidirectional-fe.0.5.0-0.gz", True),
        (22, "phrase-table.0-0.gz", f"{MINI_DIR}/phrase-table.0-0.gz", True)]
    assert f"PhraseDictionaryMemory input-factor=0 output-factor=0 path={MINI_DIR}/phrase-table.0-0.gz " \
           "num-features=5 table-limit=20 \n" in new


def test_runnable_tatoeba_system_resolves_dot_dot_and_finds_every_file(tmp_path):
    ini = shared_file(TATOEBA_SYSTEM)
    text, changes = absolute_paths(ini.read_text(), str(ini.parent))
    (tmp_path / "moses.ini").write_text(text)
    root = ini.parent.parent
    assert [(c.old, c.new, c.exists) for c in changes] == [
        ("../phrase-table.gz", f"{root}/phrase-table.gz", True),
        ("lm.fr.trie.kenlm", f"{root}/system/lm.fr.trie.kenlm", True)]
    assert relative_paths(str(tmp_path / "moses.ini")) == []  # what mert-moses refused before


def test_default_base_is_the_current_directory_and_missing_files_are_flagged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "phrase-table.0-0.gz").write_text("")
    _, changes = absolute_paths(MINI_INI.read_text(encoding="utf-8"))
    assert [(c.new, c.exists) for c in changes] == [
        (f"{tmp_path}/europarl.en.lm", False),
        (f"{tmp_path}/reordering-table.msd-bidirectional-fe.0.5.0-0.gz", False),
        (f"{tmp_path}/phrase-table.0-0.gz", True)]


def test_a_compact_table_prefix_counts_as_existing(tmp_path):
    (tmp_path / "pt.minphr").write_text("")
    _, changes = absolute_paths("[feature]\nPhraseDictionaryCompact path=pt num-features=4\n", str(tmp_path))
    assert changes[0].exists


def test_legacy_file_lines_keep_their_other_fields_comments_and_endings():
    new, changes = absolute_paths(LEGACY, "/base/dir")
    assert new == """[ttable-file]
0 0 0 5 /base/dir/model/phrase-table.gz sparse # a comment\r
[generation-file]
0 1 2 /base/generation.0-1.gz
[lmodel-file]
8 0 3 ${LM_PATH}/europarl.en.srilm.gz
[distortion-file]
0-0 wbe-msd-bidirectional-fe-allff 6 /base/dir/model/reordering-table
"""
    assert [c.line_no for c in changes] == [2, 4, 8]


def test_cli_absolute_paths_alone(tmp_path):
    shared_file("moses-regression-tests/mini-system-fr-en/moses.ini")
    out = tmp_path / "abs.ini"
    result = CliRunner().invoke(moses_ini, [str(MINI_INI), "--absolute-paths", "--relative-to", str(MINI_DIR),
                                            "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[:2] == [
        f"{out}: 3 relative path(s) made absolute against {MINI_DIR}",
        f"  line 17: europarl.en.lm -> {MINI_DIR}/europarl.en.lm"]
    assert "warning" not in result.stderr and relative_paths(str(out)) == []


def test_cli_warns_when_the_paths_resolve_to_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(moses_ini, [str(MINI_INI), "--absolute-paths", "-o", "abs.ini"])
    assert result.exit_code == 0, result.output
    assert f"warning: line 17: nothing at {tmp_path}/europarl.en.lm" in result.stderr
    assert "name it with --relative-to" in result.stderr


def test_cli_table_and_absolute_paths_together(tmp_path, monkeypatch):
    """--table is taken from the current directory, the ini's own paths from --relative-to."""
    monkeypatch.chdir(MINI_TABLE.parent)
    out = tmp_path / "rnn.ini"
    result = CliRunner().invoke(moses_ini, [str(MINI_INI), "--table", MINI_TABLE.name, "--absolute-paths",
                                            "--relative-to", "/models/mini", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert f"path={MINI_TABLE} num-features=7" in text and "path=/models/mini/europarl.en.lm" in text
    assert relative_paths(str(out)) == []
    assert f"{out}: 2 relative path(s) made absolute against /models/mini" in result.stderr


@pytest.mark.parametrize("args, message", [
    ([], "give --table (a scored phrase table to point at), --cslm, --bilm, --absolute-paths, or several"),
    (["--table", str(MINI_TABLE), "--relative-to", "."], "--relative-to goes with --absolute-paths"),
    (["--absolute-paths", "--weights", "0.1,-0.1"], "--weights only go with --table"),
])
def test_cli_option_mistakes_exit_2(args, message, tmp_path):
    result = CliRunner().invoke(moses_ini, [str(MINI_INI), *args, "-o", str(tmp_path / "out.ini")])
    assert result.exit_code == 2 and message in result.stderr


@pytest.mark.parametrize("how", ["table", "absolute"])
def test_a_path_with_a_space_is_refused(how, tmp_path):
    """Moses splits ini lines at spaces: path=/a b/t.gz would stop it ("Incorrect format for feature function arg")."""
    import gzip

    from moses_integration.ini_update import update_moses_ini
    folder = tmp_path / "my system"
    folder.mkdir()
    table = folder / "table.gz"
    with gzip.open(table, "wt", encoding="utf-8") as out:
        out.write("das Haus ||| the house ||| 0.5 0.5 0.5 0.5 0.3 2.7 ||| 0-0 1-1\n")
    ini = folder / "moses.ini"
    ini.write_text("[feature]\nPhraseDictionaryMemory name=TranslationModel0 num-features=4 path=pt.gz\n"
                   "KENLM name=LM0 factor=0 path=lm.kenlm order=5\n\n[weight]\nTranslationModel0= 0.2 0.2 0.2 0.2\n")
    output = tmp_path / "out.ini"
    with pytest.raises(ValueError, match="holds a space, and Moses splits moses.ini lines at spaces"):
        if how == "table":
            update_moses_ini(str(ini), str(table), str(output), features=["rnn", "unk"])
        else:
            absolute_paths(ini.read_text(), str(folder))
    assert not output.exists()
