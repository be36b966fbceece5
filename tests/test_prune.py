"""``mosesrnn prune``: kept lines byte for byte and in order, the rankings, the reordering table along, refusals."""
from __future__ import annotations

import gzip
import json
import math
import os
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DATA
from scoring_helpers import TABLE, save_tiny_model

from mosesrnn.cli import main
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.formats.sidecar import read_sidecar
from mosesrnn.pipeline.prune import Selection

MINI_TABLE = DATA / "moses" / "mini-system.phrase-table.2k.gz"
MINI_REORDERING = DATA / "moses" / "mini-system.reordering-table.2k.gz"
MINI_INI = DATA / "moses" / "mini-system-fr-en.moses.ini"
TUNED_INI = DATA / "moses" / "tuned" / "bartvm-europarl.moses.ini"  # TranslationModel0: 4, LexicalReordering0: 6


def lines(path) -> list[bytes]:
    return gzip.decompress(Path(path).read_bytes()).splitlines(keepends=True)


def invoke(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args])


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> Path:
    """The 3k-line Tatoeba slice scored with a tiny model: an rnn column named by its sidecar."""
    folder = tmp_path_factory.mktemp("scored")
    model = save_tiny_model(str(folder / "model.pt"))
    assert invoke("score", TABLE, "-m", model, "-o", folder / "scored.gz").exit_code == 0
    return folder / "scored.gz"


def groups_of(path) -> dict[str, list]:
    found = defaultdict(list)
    with read_entries(str(path)) as entries:
        for entry in entries:
            found[entry.source].append(entry)
    return found


def test_the_top_targets_by_the_rnn_stay_byte_for_byte_and_in_order(scored, tmp_path):
    out = tmp_path / "top2.gz"
    result = invoke("prune", scored, "--top", "2", "-o", out)
    assert result.exit_code == 0, result.output
    kept, every = lines(out), lines(scored)
    position = {line: number for number, line in enumerate(every)}
    assert all(line in position for line in kept)  # byte for byte
    assert [position[line] for line in kept] == sorted(position[line] for line in kept)  # in order
    before, after = groups_of(scored), groups_of(out)
    assert set(after) == set(before)  # every source keeps a target
    for source, entries in before.items():
        rnn = sorted(entries, key=lambda e: (-max(math.log(e.scores[-2]), -100), e.line_no))  # Moses floors at -100
        assert [e.target for e in after[source]] == [e.target for e in sorted(rnn[:2], key=lambda e: e.line_no)]
    sidecar = read_sidecar(str(out))
    assert sidecar.appended_columns == ("rnn", "unk") and sidecar.lines == len(kept)
    assert sidecar.pruned["by"] == "the rnn column" and sidecar.pruned["selection"] == "top 2"
    assert sidecar.pruned["lines"] == len(every) and sidecar.pruned["kept"] == len(kept)


def test_a_margin_and_a_share(scored, tmp_path):
    margin = tmp_path / "margin.gz"
    assert invoke("prune", scored, "--margin", "1.5", "--column", "2", "-o", margin).exit_code == 0
    every = groups_of(scored)
    for source, entries in groups_of(margin).items():
        best = max(math.log(e.scores[2]) for e in every[source])
        assert all(best - math.log(e.scores[2]) <= 1.5 for e in entries)
    half = tmp_path / "half.gz"
    result = invoke("prune", scored, "--share", "0.5", "-o", half)
    assert result.exit_code == 0, result.output
    share = len(lines(half)) / len(lines(scored))
    assert 0.45 <= share <= 0.6 and "margin" in result.stderr  # sources keep their best: a little more than half


def test_the_decoders_ranking_from_a_tuned_moses_ini(tmp_path):
    ini = tmp_path / "moses.ini"
    ini.write_text("[weight]\nLM0= 0.5\nTranslationModel0= 0.2 0.1 0.6 0.1 -0.2\n")
    out = tmp_path / "out.gz"
    result = invoke("prune", MINI_TABLE, "--weights", ini, "--top", "1", "-o", out)
    assert result.exit_code == 0, result.output
    weights = (0.2, 0.1, 0.6, 0.1, -0.2)

    def score(e):
        return sum(w * max(math.log(s), -100) for w, s in zip(weights, e.scores))
    every = groups_of(MINI_TABLE)
    for source, entries in groups_of(out).items():
        assert [score(entries[0])] == pytest.approx([max(score(e) for e in every[source])])
    refused = invoke("prune", MINI_TABLE, "--weights", DATA / "nbest" / "tatoeba.dev.mert-iter1.weights", "--top",
                     "1", "-o", tmp_path / "x.gz")
    assert refused.exit_code == 1
    assert "tatoeba.dev.mert-iter1.weights: the phrase table TranslationModel0 has 4 weights, but " \
           f"{MINI_TABLE} has 5 scores a line" in refused.output


def test_the_reordering_table_keeps_exactly_the_kept_pairs(tmp_path):
    out, reordering = tmp_path / "pt.gz", tmp_path / "ro.gz"
    result = invoke("prune", MINI_TABLE, "--column", "2", "--top", "3", "-o", out, "--reordering", MINI_REORDERING,
                    "--reordering-output", reordering)
    assert result.exit_code == 0, result.output
    pairs = [line.split(b" ||| ")[:2] for line in lines(out)]
    assert [line.split(b" ||| ")[:2] for line in lines(reordering)] == pairs  # both tables agree
    assert set(lines(reordering)) <= set(lines(MINI_REORDERING))
    assert "reordering table: kept" in result.stderr
    assert read_sidecar(str(out)).pruned["reordering_kept"] == len(pairs)


def test_an_unsorted_table_is_refused_naming_the_line(tmp_path):
    every = lines(MINI_TABLE)
    shuffled = every[:10] + every[500:510] + every[10:500]
    table = tmp_path / "unsorted.gz"
    table.write_bytes(gzip.compress(b"".join(shuffled)))
    result = invoke("prune", table, "--column", "2", "--top", "1", "-o", tmp_path / "out.gz")
    assert result.exit_code == 1 and f"{table}:21: out of order" in result.output and "LC_ALL=C sort" in result.output
    assert not (tmp_path / "out.gz").exists()


def test_a_table_without_an_rnn_column_says_what_to_give(tmp_path):
    result = invoke("prune", MINI_TABLE, "--top", "1", "-o", tmp_path / "out.gz")
    assert result.exit_code == 1 and "no rnn column named in its sidecar" in result.output
    assert "--column" in result.output


@pytest.mark.parametrize("scores, selection, kept", [
    ([1.0, 3.0, 2.0], Selection(top=2), [False, True, True]),
    ([2.0, 2.0, 1.0], Selection(top=1), [True, False, False]),  # a tie keeps table order
    ([0.0, -1.0, -3.0], Selection(margin=1.0), [True, True, False]),
])
def test_selections(scores, selection, kept):
    assert selection.keep(scores) == kept


def test_exactly_one_selection():
    with pytest.raises(ValueError, match="give one of --top K, --margin NATS, --share FRACTION"):
        Selection(top=2, margin=1.0)


# -- what must agree: the sidecar and its table, the weights and the columns, the two tables ------------------------


def refused(result, *mentions) -> str:
    """The one Error line of a refused run, which mentions each of ``mentions``."""
    assert result.exit_code == 1, (result.output, result.exception)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    for mention in mentions:
        assert str(mention) in errors[0], (mention, errors[0])
    return errors[0]


def listing(folder) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(Path(folder).iterdir())}


@pytest.mark.parametrize("ranking", [(), ("--column", "2")])
def test_the_sidecar_of_a_six_score_table_beside_a_four_score_table_is_refused(scored, tmp_path, ranking):
    """Today's trap: the 4-score table was believed to have the 6-score table's rnn column (and, ranked by a
    column, the pruned table's sidecar would have claimed its columns)."""
    table = tmp_path / "table.gz"
    table.write_bytes(Path(TABLE).read_bytes())
    (tmp_path / "table.gz.json").write_bytes(Path(f"{scored}.json").read_bytes())
    before = listing(tmp_path)
    result = invoke("prune", table, "--top", "2", *ranking, "-o", tmp_path / "out.gz")
    refused(result, f"{table}.json describes a table of 6 scores a line, but {table} has 4 scores a line",
            "score it again, or remove")
    assert listing(tmp_path) == before


def test_a_damaged_sidecar_is_named_not_taken_for_one_without_an_rnn_column(scored, tmp_path):
    table = tmp_path / "table.gz"
    table.write_bytes(Path(scored).read_bytes())
    (tmp_path / "table.gz.json").write_text('{"signature": "mosesrnn', encoding="utf-8")  # cut short
    result = invoke("prune", table, "--top", "2", "-o", tmp_path / "out.gz")
    error = refused(result, f"{table}: its sidecar cannot say which column is the rnn's", f"{table}.json:1:")
    assert "no rnn column" not in error and not (tmp_path / "out.gz").exists()


def test_the_sidecar_of_another_table_with_as_many_scores_is_refused(scored, tmp_path):
    table = tmp_path / "other.gz"
    table.write_bytes(gzip.compress(b"".join(lines(scored)[1:])))  # the same columns, another first line
    (tmp_path / "other.gz.json").write_bytes(Path(f"{scored}.json").read_bytes())
    result = invoke("prune", table, "--top", "2", "-o", tmp_path / "out.gz")
    refused(result, f"{table}.json does not describe {table}: the table's first 65536 bytes of text differ")
    assert not (tmp_path / "out.gz").exists()


def test_the_sidecar_follows_its_table_recompressed_and_an_old_sidecar_is_checked_by_size(scored, tmp_path):
    """The identity is of the text: a table gzipped again keeps its sidecar. A sidecar written before the identity
    is checked by the table's size, which every sidecar records."""
    again = tmp_path / "again.gz"
    again.write_bytes(gzip.compress(gzip.decompress(Path(scored).read_bytes()), compresslevel=9))
    (tmp_path / "again.gz.json").write_bytes(Path(f"{scored}.json").read_bytes())
    assert os.path.getsize(again) != os.path.getsize(scored)
    assert invoke("prune", again, "--top", "2", "-o", tmp_path / "out.gz").exit_code == 0
    record = json.loads(Path(f"{scored}.json").read_text())
    assert record["identity"]["scores"] == 6 and len(record["identity"]["head_sha256"]) == 64
    del record["identity"]
    (tmp_path / "again.gz.json").write_text(json.dumps(record))  # an old sidecar, of the table before
    result = invoke("prune", again, "--top", "2", "-o", tmp_path / "out2.gz")
    refused(result, f"{again}.json describes a table of {os.path.getsize(scored)} bytes, but {again} has "
                    f"{os.path.getsize(again)}")
    old = tmp_path / "old.gz"
    old.write_bytes(Path(scored).read_bytes())
    (tmp_path / "old.gz.json").write_text(json.dumps(record))  # an old sidecar beside its own table
    assert invoke("prune", old, "--top", "2", "-o", tmp_path / "out3.gz").exit_code == 0


def test_a_pruned_table_has_a_sidecar_of_its_own_text(scored, tmp_path):
    out = tmp_path / "top1.gz"
    assert invoke("prune", scored, "--top", "1", "-o", out).exit_code == 0
    assert invoke("prune", out, "--top", "1", "-o", tmp_path / "again.gz").exit_code == 0  # its sidecar fits it
    assert read_sidecar(str(out)).identity["scores"] == 6


def test_the_sidecar_it_reads_is_not_an_output(scored, tmp_path):
    """``-o TABLE.json``, or an output whose own sidecar is the input's (through a link), would overwrite the
    sidecar that names the rnn column: refused like any input."""
    table = tmp_path / "scored.gz"
    table.write_bytes(Path(scored).read_bytes())
    (tmp_path / "scored.gz.json").write_bytes(Path(f"{scored}.json").read_bytes())
    os.symlink(tmp_path / "scored.gz.json", tmp_path / "link.gz.json")
    before = listing(tmp_path)
    result = invoke("prune", table, "--top", "2", "-o", tmp_path / "scored.gz.json")
    refused(result, f"{table}.json is read with the input {table}: writing it would destroy it")
    assert listing(tmp_path) == before
    result = invoke("prune", table, "--top", "2", "-o", tmp_path / "link.gz")
    refused(result, f"{tmp_path / 'link.gz.json'} ({table}.json) is read with the input {table}")
    assert listing(tmp_path) == before


def test_a_moses_ini_whose_phrase_table_has_other_weights_than_the_columns_is_refused(scored, tmp_path):
    """The tuned ini of the 4-score system beside a 6-score scored table: its LexicalReordering0 has 6 weights,
    which were taken as the phrase table's."""
    before = listing(tmp_path)
    result = invoke("prune", scored, "--weights", TUNED_INI, "--top", "1", "-o", tmp_path / "out.gz")
    refused(result, f"{TUNED_INI}: the phrase table TranslationModel0 has 4 weights, but {scored} has 6 scores a "
                    "line", "`mosesrnn moses-ini`")
    result = invoke("prune", scored, "--weights", TUNED_INI, "--feature", "LexicalReordering0", "--top", "1",
                    "-o", tmp_path / "out.gz")
    refused(result, f"{TUNED_INI}: LexicalReordering0 is not a phrase table (its phrase tables: TranslationModel0)")
    assert listing(tmp_path) == before


def test_a_phrase_table_named_as_moses_names_it(tmp_path):
    """mini-system's PhraseDictionaryMemory has no name=: Moses calls it PhraseDictionaryMemory0."""
    out = tmp_path / "out.gz"
    result = invoke("prune", MINI_TABLE, "--weights", MINI_INI, "--top", "1", "-o", out)
    assert result.exit_code == 0, result.output
    assert read_sidecar(str(out)).pruned["by"] == "the PhraseDictionaryMemory0 weights of mini-system-fr-en.moses.ini"


def _pair(line: bytes) -> str:
    return "'" + " ||| ".join(field.strip() for field in line.decode().split("|||")[:2]) + "'"


@pytest.mark.parametrize("case", ["another pair", "shorter", "longer"])
def test_a_reordering_table_of_other_pairs_is_refused_naming_the_first_line_that_differs(tmp_path, case):
    """Refused before the outputs appear: half-way through the pass, the atomic writers remove what was written."""
    pairs, reorderings = lines(MINI_TABLE), lines(MINI_REORDERING)
    table, reordering = tmp_path / "pt.gz", tmp_path / "ro.gz"
    if case == "another pair":
        other = reorderings[499].replace(b"|||", b"||| autre", 1)
        table_lines, reordering_lines = pairs, reorderings[:499] + [other] + reorderings[500:]
        wanted = f"{reordering}:500: {_pair(other)}, but {table}:500 holds {_pair(pairs[499])}"
    elif case == "shorter":
        table_lines, reordering_lines = pairs, reorderings[:1500]
        wanted = f"{reordering}:1501: the reordering table ends, but {table}:1501 holds {_pair(pairs[1500])}"
    else:
        table_lines, reordering_lines = pairs[:1500], reorderings
        wanted = f"{reordering}:1501: {_pair(reorderings[1500])}, but the phrase table {table} ends at line 1500"
    table.write_bytes(gzip.compress(b"".join(table_lines)))
    reordering.write_bytes(gzip.compress(b"".join(reordering_lines)))
    before = listing(tmp_path)
    result = invoke("prune", table, "--column", "2", "--top", "3", "-o", tmp_path / "out" / "pt.gz",
                    "--reordering", reordering, "--reordering-output", tmp_path / "out" / "ro.gz")
    refused(result, wanted, "line for line")
    assert listing(tmp_path) == before  # no output, no temporary file, no folder made
