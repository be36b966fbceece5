"""Tests of mosesrnn.analysis and the topk / perplexity / embed / report commands, on tiny models."""
import json
import math

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from scoring_helpers import TABLE

from mosesrnn.analysis import embeddings
from mosesrnn.analysis.perplexity import TextPair, perplexity, shuffled
from mosesrnn.analysis.report import read_columns, spearman
from mosesrnn.analysis.topk import choose_groups, rank_candidates, text_report, tsv_lines
from mosesrnn.cli import main
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries


@pytest.fixture(scope="module")
def trained(model_path):
    return load_encoder_decoder(model_path)


@pytest.fixture(scope="module")
def pairs():
    return list(dict.fromkeys(TextPair(e.source, e.target) for e in read_entries(TABLE)))[:200]


def test_perplexity_is_exp_of_the_mean_token_nll(trained, pairs):
    result = perplexity(trained, pairs, seed=3)
    log_p = RNNFeature(trained).values(pairs)
    tokens = sum(len(trained.output_codec.ids(pair.target)) + 1 for pair in pairs)
    assert result.tokens == tokens and result.pairs == len(pairs)
    assert result.ppl == pytest.approx(math.exp(-sum(log_p) / tokens), rel=1e-9)
    shuffled_log_p = RNNFeature(trained).values(shuffled(pairs, 3))
    assert result.shuffled_ppl == pytest.approx(math.exp(-sum(shuffled_log_p) / tokens), rel=1e-9)
    assert "shuffled" in result.summary()


def test_shuffle_moves_one_side_only_and_is_seeded(pairs):
    moved = shuffled(pairs, 5)
    assert [p.target for p in moved] == [p.target for p in pairs]
    assert sorted(p.source for p in moved) == sorted(p.source for p in pairs)
    assert moved == shuffled(pairs, 5) != shuffled(pairs, 6)
    assert [p.source for p in shuffled(pairs, 5, side=1)] == [p.source for p in pairs]


def test_perplexity_without_usable_pairs_is_an_error(trained):
    with pytest.raises(ValueError, match="no pair"):
        perplexity(trained, [TextPair("", "x")])


@pytest.mark.parametrize("vectors, query, expected", [
    ([[1, 0], [0.9, 0.1], [0, 1], [-1, 0]], "a", ["b", "c", "d"]),
    ([[1, 0], [0.9, 0.1], [0, 1], [-1, 0]], "d", ["c", "b", "a"]),
    ([[1, 1], [2, 2], [1, -1], [0, 0]], "a", ["b", "c", "d"]),  # scale-free; a zero vector is last
])
def test_neighbours_by_cosine(vectors, query, expected):
    found = embeddings.neighbours(["a", "b", "c", "d"], np.array(vectors, dtype=float), query, k=3)
    assert [label for label, _ in found] == expected


def test_word_and_phrase_vectors_and_projections(trained):
    labels, vectors = embeddings.word_vectors(trained, 40)
    assert labels == trained.input_codec.vocabulary.itos[3:43] and vectors.shape == (40, 8)
    phrases = ["the house", "he", "what is this"]
    c = embeddings.phrase_vectors(trained, phrases, batch_size=2)
    with torch.inference_mode():
        one = trained.model.encode(torch.tensor([trained.input_codec.ids("he")]), torch.tensor([1])).c
    assert c.shape == (3, 16) and np.allclose(c[1], one[0].numpy(), atol=1e-6)
    for method in embeddings.PROJECTIONS:
        points = embeddings.project(vectors, method, seed=1)
        assert points.shape == (40, 2) and np.allclose(points, embeddings.project(vectors, method, seed=1))
    with pytest.raises(ValueError, match="projection"):
        embeddings.project(vectors, "umap")


@pytest.mark.parametrize("x, y, rho", [
    ([1, 2, 3, 4], [10, 20, 30, 40], 1.0),
    ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
    ([1, 2, 3, 4], [1, 3, 2, 4], 0.8),
])
def test_spearman(x, y, rho):
    assert spearman(np.array(x), np.array(y)) == pytest.approx(rho)


def test_topk_ranks_the_tables_candidates_both_ways(trained):
    groups = choose_groups(TABLE, count=4, min_words=2, seed=1)
    assert len(groups) == 4 and all(len(g[0].source.split()) >= 2 for g in groups)
    assert choose_groups(TABLE, count=4, min_words=2, seed=1) == groups
    rankings = rank_candidates(trained, groups, k=2)
    for ranking, group in zip(rankings, groups):
        assert [c.tm for c in ranking.by_tm] == sorted((e.scores[2] for e in group), reverse=True)[:2]
        assert [c.rnn for c in ranking.by_rnn] == sorted((c.rnn for c in ranking.by_rnn), reverse=True)
    assert len(tsv_lines(rankings)) == 1 + sum(len(r.by_tm) + len(r.by_rnn) for r in rankings)
    assert groups[0][0].source in text_report(rankings)
    chosen = choose_groups(TABLE, sources=[groups[1][0].source])
    assert chosen == [groups[1]]
    with pytest.raises(ValueError, match="no lines"):
        choose_groups(TABLE, sources=["not a phrase of the table"])


def test_perplexity_topk_embed_and_report_commands(model_path, tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["perplexity", "-m", model_path, str(TABLE), "--max-pairs", "100", "-q"])
    assert result.exit_code == 0 and "perplexity" in result.output, result.output
    result = runner.invoke(main, ["topk", str(TABLE), "-m", model_path, "-k", "2", "--num-sources", "2",
                                  "--tsv", str(tmp_path / "top.tsv"), "-q"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "top.tsv").read_text().startswith("source\tranker\trank")
    result = runner.invoke(main, ["embed", "-m", model_path, "--words", "50", "--projection", "pca",
                                  "-o", str(tmp_path / "words"), "--query", "the", "-q"])
    assert result.exit_code == 0 and result.output.startswith("the: "), result.output
    assert len((tmp_path / "words.tsv").read_text().splitlines()) == 51
    assert (tmp_path / "words.png").read_bytes()[:4] == b"\x89PNG"
    scored = tmp_path / "scored.gz"
    assert runner.invoke(main, ["score", str(TABLE), "-m", model_path, "-o", str(scored), "-q"]).exit_code == 0
    result = runner.invoke(main, ["report", str(scored), "-o", str(tmp_path / "report.png"), "-q"])
    assert result.exit_code == 0 and "Spearman" in result.output, result.output
    assert (tmp_path / "report.png").read_bytes()[:4] == b"\x89PNG"


def test_report_finds_the_rnn_column_from_the_sidecar(model_path, tmp_path):
    scored = tmp_path / "scored.gz"
    CliRunner().invoke(main, ["score", str(TABLE), "-m", model_path, "--features", "rnn,unk", "-o", str(scored), "-q"])
    assert json.loads((tmp_path / "scored.gz.json").read_text())["appended_columns"] == ["rnn", "unk"]
    columns = read_columns(str(scored), max_lines=50)
    entries = list(read_entries(str(scored)))[:50]
    assert columns.rnn_column == 4 and columns.tm_column == 2
    assert np.allclose(columns.rnn, [max(math.log(e.scores[4]), -100) for e in entries])
    assert np.allclose(columns.tm, [math.log(e.scores[2]) for e in entries])


@pytest.mark.parametrize("family", ["encoder-decoder", "cslm", "joint"])
def test_perplexity_max_pairs_measures_the_first_lines_of_every_family(family, model_path, tmp_path):
    """`--max-pairs 10` measured every pair with a CSLM and a joint model."""
    from conftest import DATA
    from scoring_helpers import save_tiny_joint_model
    from test_cslm import tiny_lm

    from mosesrnn.cslm.model_file import save_cslm
    source, target, alignment = (str(DATA / f"tatoeba.train2k.{suffix}") for suffix in ("tok.en", "tok.fr", "align"))
    if family == "cslm":
        lm = tiny_lm()
        save_cslm(str(tmp_path / "lm.pt"), lm.model, lm.codec)
        model, inputs = str(tmp_path / "lm.pt"), [target]
    elif family == "joint":
        model, inputs = save_tiny_joint_model(str(tmp_path / "bilm.pt")), [source, target, alignment]
    else:
        model, inputs = model_path, [source, target]
    result = CliRunner().invoke(main, ["perplexity", "-m", model, *inputs, "--max-pairs", "10", "-q"])
    assert result.exit_code == 0, result.output
    with open(target, encoding="utf-8") as lines:
        first = [next(lines) for _ in range(10)]
    assert f" {sum(len(line.split()) for line in first) + 10} " in result.output, result.output
