"""``mosesrnn prune``: kept lines byte for byte and in order, the rankings, the reordering table along, refusals."""
from __future__ import annotations

import gzip
import math
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
    for entry in read_entries(str(path)):
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
    for source, entries in groups_of(margin).items():
        best = max(math.log(e.scores[2]) for e in groups_of(scored)[source])
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
    for source, entries in groups_of(out).items():
        def score(e):
            return sum(w * max(math.log(s), -100) for w, s in zip(weights, e.scores))
        assert [score(entries[0])] == pytest.approx([max(score(e) for e in groups_of(MINI_TABLE)[source])])
    refused = invoke("prune", MINI_TABLE, "--weights", DATA / "nbest" / "tatoeba.dev.mert-iter1.weights", "--top",
                     "1", "-o", tmp_path / "x.gz")
    assert refused.exit_code == 1 and "weight groups have the table's 5 scores" in refused.output


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
