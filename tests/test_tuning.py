"""MERT: BLEU statistics against sacrebleu, envelope case tables, exact line search, seeds, the commands, and
Moses' own mert on its regression data."""
import re
import shutil
import subprocess
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import built_program
from moses_stats import read_moses_init, read_moses_stats
from sacrebleu.metrics.bleu import BLEU

from mosesrnn.cli.mert import mert as mert_command
from mosesrnn.cli.mert import rerank as rerank_command
from mosesrnn.formats.moses_ini import read_weights, weights_text
from mosesrnn.formats.nbest import NbestError, group_by_sentence, read_nbest
from mosesrnn.tuning.bleu import BleuStatistics, bleu_scores
from mosesrnn.tuning.envelope import upper_envelope, upper_envelopes
from mosesrnn.tuning.mert import MertOptions, evaluate, line_search, mert
from mosesrnn.tuning.problem import TuningProblem, load_nbest
from mosesrnn.tuning.rerank import rerank
from mosesrnn.tuning.vectors import named_weights, weights_vector

DATA = Path(__file__).parent / "data" / "nbest"
TATOEBA = [str(DATA / "tatoeba.dev30.untuned.100best.gz"), str(DATA / "tatoeba.dev30.mert-iter1.100best.gz")]
TATOEBA_REFS = DATA / "tatoeba.dev30.fr"
NO_SMOOTHING = partial(bleu_scores, smooth_method="none")


def references(path=TATOEBA_REFS):
    return [path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def tatoeba():
    """The first 30 dev sentences of the Tatoeba system, both 100-best lists pooled, and their BLEU."""
    bleu = BleuStatistics(references())
    return load_nbest(TATOEBA, bleu), bleu


# --- BLEU statistics ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("smooth_method, smooth_value", [("none", None), ("exp", None), ("floor", 0.1),
                                                          ("add-k", 1)])
def test_vectorised_bleu_equals_sacrebleu(smooth_method, smooth_value):
    rng = np.random.default_rng(0)
    total = rng.integers(0, 30, size=(300, 4))
    correct = np.minimum(total, rng.integers(0, 12, size=(300, 4)))
    stats = np.concatenate([total[:, :1], rng.integers(0, 40, size=(300, 1)), correct, total], axis=1)
    stats[:5, 2:6] = 0  # no match at all
    stats[5:10, 6:] = 0  # no n-grams
    expected = [BLEU.compute_bleu(list(row[2:6]), list(row[6:]), int(row[0]), int(row[1]), smooth_method,
                                  smooth_value).score for row in stats]
    np.testing.assert_allclose(bleu_scores(stats, smooth_method, smooth_value), expected, rtol=1e-9, atol=1e-9)


def test_statistics_sum_to_sacrebleus_corpus_score():
    bleu = BleuStatistics(references())
    fourth = [entries[3].hypothesis for _, entries in group_by_sentence(read_nbest(TATOEBA[0]))]
    stats = sum(bleu.hypothesis_stats(sentence, [text])[0] for sentence, text in enumerate(fourth))
    expected = BLEU(tokenize="none").corpus_score(fourth, references())
    assert bleu.score(stats).score == pytest.approx(expected.score, abs=1e-12)
    assert bleu.scores(stats[None, :])[0] == pytest.approx(expected.score, abs=1e-9)
    assert bleu.signature.startswith("nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:")


# --- envelopes -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("intercepts, slopes, breakpoints, hypotheses", [
    ([0, 0, -1], [-1, 1, 0], [0.0], [0, 1]),  # a V; the flat line stays below
    ([0, 1, 0.5], [-1, 0, 1], [-1.0, 0.5], [0, 1, 2]),  # three lines, three segments
    ([0, 0, 0], [-1, 0, 1], [0.0], [0, 2]),  # three lines through one point: the middle one never wins
    ([1, 2, 2], [0, 0, 0], [], [1]),  # parallel: the highest, the first of equals
    ([1, 3], [1, 1], [], [1]),  # parallel with slope
    ([5, 5], [2, 2], [], [0]),  # identical lines: the lowest index
    ([7], [-3], [], [0]),  # one hypothesis
    ([0, -10, 0, 1], [0, 1, 0, -1], [1.0, 10.0], [3, 0, 1]),  # a duplicate (2 = 0) and a line on top at -inf
], ids=["v", "three-segments", "common-point", "parallel-flat", "parallel-sloped", "identical", "single",
        "duplicate"])
def test_envelope_case_table(intercepts, slopes, breakpoints, hypotheses):
    envelope = upper_envelope(np.array(intercepts, float), np.array(slopes, float))
    np.testing.assert_allclose(envelope.breakpoints, breakpoints)
    assert envelope.hypotheses.tolist() == hypotheses


def test_batched_envelopes_match_the_argmax_between_breakpoints():
    rng = np.random.default_rng(3)
    intercepts = np.round(rng.normal(size=(50, 12)), 1)
    slopes = np.round(rng.normal(size=(50, 12)), 1)  # rounding makes ties and parallel lines
    intercepts[::7, 8:] = -np.inf  # padding
    points = upper_envelopes(intercepts, slopes)
    for s in range(50):
        mine = points.sentence == s
        gamma = points.gamma[mine]
        assert np.all(np.diff(gamma) >= 0)
        tops = np.concatenate([[points.first[s]], points.after[mine]])
        probes = np.concatenate([[gamma[0] - 1 if gamma.size else 0.0], (gamma[:-1] + gamma[1:]) / 2,
                                 [gamma[-1] + 1] if gamma.size else []])
        for probe, top in zip(probes, tops):
            scores = intercepts[s] + probe * slopes[s]
            assert scores[top] == pytest.approx(scores.max(), abs=1e-9)


# --- line search and MERT on a constructed problem -------------------------------------------------------

def tiny_problem():
    """4 sentences of 3-5 hypotheses, 3 features, made-up BLEU statistics."""
    rng = np.random.default_rng(7)
    sizes = [3, 5, 4, 4]
    total = rng.integers(4, 12, size=(sum(sizes), 4))
    correct = np.minimum(total, rng.integers(0, 8, size=(sum(sizes), 4)))
    stats = np.concatenate([total[:, :1], np.full((sum(sizes), 1), 8), correct, total], axis=1)
    return TuningProblem((("a", 2), ("b", 1)), np.round(rng.normal(size=(sum(sizes), 3)), 2), stats,
                         np.concatenate([[0], np.cumsum(sizes)]), np.zeros(sum(sizes)), np.zeros(sum(sizes), int))


@pytest.mark.parametrize("direction", [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, -0.3, 0.2]])
def test_exact_line_search_matches_or_beats_a_fine_grid(direction):
    problem, metric = tiny_problem(), NO_SMOOTHING
    point, direction = np.array([0.2, -0.1, 0.3]), np.array(direction, float)
    optimum = line_search(problem, metric, point, direction)
    grid = max(evaluate(problem, metric, point + gamma * direction) for gamma in np.linspace(-20, 20, 40001))
    assert optimum.score >= grid - 1e-12
    assert evaluate(problem, metric, point + optimum.gamma * direction) == pytest.approx(optimum.score, abs=1e-12)


def test_same_seed_same_weights_and_no_worse_than_the_start():
    problem, metric = tiny_problem(), NO_SMOOTHING
    start = np.array([0.2, -0.1, 0.3])
    first = mert(problem, metric, start, MertOptions(restarts=3, seed=5))
    again = mert(problem, metric, start, MertOptions(restarts=3, seed=5))
    np.testing.assert_array_equal(first.weights, again.weights)
    assert first.score >= first.initial_score == pytest.approx(evaluate(problem, metric, start))
    assert np.abs(first.weights).sum() == pytest.approx(1.0)
    assert evaluate(problem, metric, first.weights) == pytest.approx(first.score)


def test_mert_on_moses_own_statistics():
    """Moses' mert.basic regression data: FEATSTAT, SCORESTAT, INIT (10 sentences, 100-best, 14 features)."""
    problem = read_moses_stats(str(DATA / "mert.basic.FEATSTAT.txt"), str(DATA / "mert.basic.SCORESTAT.txt"))
    initial, low, high = read_moses_init(str(DATA / "mert.basic.INIT"))
    assert problem.groups == (("d", 7), ("lm", 1), ("tm", 5), ("w", 1))
    assert problem.features.shape == (1000, 14) and problem.num_sentences == 10
    assert problem.stats[0].tolist() == [14, 18, 6, 1, 0, 0, 14, 13, 12, 11]  # Moses: 6 14 1 13 0 12 0 11 18
    metric = NO_SMOOTHING  # Moses' corpus BLEU has no smoothing
    result = mert(problem, metric, initial, MertOptions(restarts=2, seed=1, bounds=(low, high)))
    assert result.score > result.initial_score


#: How Moses' regression test mert.basic runs Moses' own mert on those files (its ``command``): 20 random restarts
#: between INIT's bounds, seed 1000.
MOSES_MERT_BASIC = ["--scfile", "mert.basic.SCORESTAT.txt", "--ffile", "mert.basic.FEATSTAT.txt", "--ifile",
                    "mert.basic.INIT", "-d", "14", "-n", "20", "-r", "1000"]


def moses_best_point(text: str) -> tuple[np.ndarray, float]:
    """Moses mert's ``Best point: w1 ... w14  => 0.304339`` line: the weights and BLEU (0..1)."""
    found = re.search(r"Best point: ([^=]+)=> ([0-9.]+)", text)
    assert found, f"no 'Best point' line in Moses mert's output: {text[-500:]!r}"
    return np.array(found.group(1).split(), dtype=np.float64), float(found.group(2))


@pytest.fixture(scope="module")
def mert_basic():
    """Our MERT on mert.basic as Moses' regression test runs Moses' own: from INIT, 20 random restarts between its
    bounds, BLEU without smoothing (Moses' corpus BLEU); the problem and the result of seeds 1, 2 and 3."""
    problem = read_moses_stats(str(DATA / "mert.basic.FEATSTAT.txt"), str(DATA / "mert.basic.SCORESTAT.txt"))
    initial, low, high = read_moses_init(str(DATA / "mert.basic.INIT"))
    return problem, {seed: mert(problem, NO_SMOOTHING, initial, MertOptions(restarts=20, seed=seed, bounds=(low, high)))
                     for seed in (1, 2, 3)}


def test_mert_reaches_the_bleu_of_moses_regression_truth(mert_basic):
    """Moses' mert.basic truth (what Moses' own mert prints on these files, shipped in tests/data): our MERT reaches
    its BLEU for every seed, and our BLEU of Moses' best point is the BLEU Moses prints for it."""
    problem, results = mert_basic
    weights, moses_bleu = moses_best_point((DATA / "mert.basic.truth.txt").read_text())
    assert moses_bleu == 0.304339
    for seed, result in results.items():
        assert result.initial_score == pytest.approx(20.399, abs=1e-3)
        assert result.score >= 100 * moses_bleu - 1e-3, (seed, result.score)
    assert evaluate(problem, NO_SMOOTHING, weights) == pytest.approx(100 * moses_bleu, abs=5e-5)  # 6 digits printed


def test_mert_against_moses_own_mert(tmp_path, mert_basic):
    """Moses' own mert run here on the same FEATSTAT, SCORESTAT and INIT as its regression test runs it: it prints the
    regression truth, and our MERT's BLEU is no lower (seeds 1, 2, 3)."""
    program = built_program("mert")
    for name in ("mert.basic.SCORESTAT.txt", "mert.basic.FEATSTAT.txt", "mert.basic.INIT"):
        shutil.copy(DATA / name, tmp_path / name)  # mert writes its weights.txt into the folder it runs in
    done = subprocess.run([program, *MOSES_MERT_BASIC], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    weights, moses_bleu = moses_best_point(done.stdout + done.stderr)
    truth_weights, truth_bleu = moses_best_point((DATA / "mert.basic.truth.txt").read_text())
    assert moses_bleu == truth_bleu and np.allclose(weights, truth_weights, rtol=1e-5)
    problem, results = mert_basic
    for seed, result in results.items():
        assert result.score >= 100 * moses_bleu - 1e-3, (seed, result.score, moses_bleu)
    assert evaluate(problem, NO_SMOOTHING, weights) == pytest.approx(100 * moses_bleu, abs=5e-5)


# --- n-best files, weights, rerank --------------------------------------------------------------------------

def test_pooled_lists_and_the_decoders_weights(tatoeba):
    problem, _ = tatoeba
    assert problem.num_sentences == 30 and problem.dimension == 14
    assert [name for name, _ in problem.groups] == ["LexicalReordering0", "Distortion0", "LM0", "WordPenalty0",
                                                    "PhrasePenalty0", "TranslationModel0"]
    assert len(problem.features) < 6000  # duplicates across the two lists are kept once
    fitted, share = problem.decoder_weights()
    moses, _ = weights_vector(problem.groups, read_weights(str(DATA / "tatoeba.dev.mert-iter1.weights")))
    np.testing.assert_allclose(fitted, moses, atol=2e-5)
    assert share > 0.9


def test_weights_file_round_trip_and_moses_ini(tmp_path):
    groups = (("LM0", 1), ("TranslationModel0", 2))
    path = tmp_path / "w.txt"
    path.write_text(weights_text(named_weights(groups, np.array([0.5, -0.25, 0.125]))))
    assert path.read_text() == "LM0= 0.5\nTranslationModel0= -0.25 0.125\n"
    ini = tmp_path / "moses.ini"
    ini.write_text("[feature]\nKENLM name=LM0\n\n[weight]\n# comment\nLM0= 0.5\nWordPenalty0= -1\n[other]\nx\n")
    assert read_weights(str(ini)) == {"LM0": (0.5,), "WordPenalty0": (-1.0,)}
    ini.write_text("[weight]\nLM0= 0.5\nbroken line\n")
    with pytest.raises(ValueError, match=r"moses.ini:3: expected 'Name= v1 v2 ...'"):
        read_weights(str(ini))


def test_rerank_with_the_decoders_weights_gives_its_1_best():
    weights = read_weights(str(DATA / "tatoeba.dev.mert-iter1.weights"))
    best = list(rerank(TATOEBA[1], weights))
    first = [entries[0].hypothesis for _, entries in group_by_sentence(read_nbest(TATOEBA[1]))]
    assert len(best) == 30
    assert sum(a == b for a, b in zip(best, first)) >= 28  # the rest: Moses' unknown-word penalty, not listed


def test_errors_name_the_file_and_line(tmp_path):
    gap = tmp_path / "gap.nbest"
    gap.write_text("0 ||| a ||| LM0= -1 ||| -1\n2 ||| b ||| LM0= -2 ||| -2\n")
    with pytest.raises(NbestError, match=r"gap.nbest:2: sentence 1 has no hypotheses"):
        list(rerank(str(gap), {"LM0": (1.0,)}))
    refs = tmp_path / "refs"
    refs.write_text("a\n")
    with pytest.raises(NbestError, match=r"gap.nbest:2: sentence id 2, but the references have 1 lines"):
        load_nbest([str(gap)], BleuStatistics(references(refs)))
    sizes = tmp_path / "sizes.nbest"
    sizes.write_text("0 ||| a ||| LM0= -1 ||| -1\n0 ||| b ||| LM0= -2 -3 ||| -2\n")
    with pytest.raises(NbestError, match=r"sizes.nbest:2: feature LM0 has 2 values here, 1 on earlier lines"):
        load_nbest([str(sizes)], BleuStatistics(references(refs)))


# --- the commands, end to end ----------------------------------------------------------------------------

def test_mert_then_rerank_end_to_end(tmp_path):
    runner = CliRunner()
    weights = tmp_path / "weights.txt"
    result = runner.invoke(mert_command, [*TATOEBA, "--refs", str(TATOEBA_REFS), "-o", str(weights),
                                          "--restarts", "2", "--seed", "1"])
    assert result.exit_code == 0, result.output
    before = float(re.search(r"dev BLEU before: BLEU = ([\d.]+)", result.output)[1])
    after = float(re.search(r"dev BLEU after:  BLEU = ([\d.]+)", result.output)[1])
    assert after >= before
    assert "nrefs:1|case:mixed|eff:no|tok:none|smooth:exp" in result.output
    tuned = read_weights(str(weights))
    assert list(tuned) == ["LexicalReordering0", "Distortion0", "LM0", "WordPenalty0", "PhrasePenalty0",
                           "TranslationModel0"]
    assert sum(abs(v) for values in tuned.values() for v in values) == pytest.approx(1.0, abs=1e-6)
    for path in TATOEBA:
        output = tmp_path / "1best.fr"
        result = runner.invoke(rerank_command, [path, "--weights", str(weights), "-o", str(output)])
        assert result.exit_code == 0, result.output
        assert len(output.read_text(encoding="utf-8").splitlines()) == 30
    again = runner.invoke(mert_command, [*TATOEBA, "--refs", str(TATOEBA_REFS), "-o", str(tmp_path / "w2.txt"),
                                         "--restarts", "2", "--seed", "1"])
    assert (tmp_path / "w2.txt").read_text() == weights.read_text()
    assert again.exit_code == 0


def test_rerank_of_one_list_scores_what_mert_reported(tmp_path):
    """On a single list (no pooling) the reranked 1-best has the BLEU that mert prints."""
    runner = CliRunner()
    weights, output = tmp_path / "weights.txt", tmp_path / "1best.fr"
    result = runner.invoke(mert_command, [TATOEBA[0], "--refs", str(TATOEBA_REFS), "-o", str(weights),
                                          "--restarts", "1"])
    assert result.exit_code == 0, result.output
    after = float(re.search(r"dev BLEU after:  BLEU = ([\d.]+)", result.output)[1])
    assert runner.invoke(rerank_command, [TATOEBA[0], "--weights", str(weights), "-o", str(output)]).exit_code == 0
    hypotheses = output.read_text(encoding="utf-8").splitlines()
    assert BLEU(tokenize="none").corpus_score(hypotheses, references()).score == pytest.approx(after, abs=0.01)


def test_bad_input_is_a_clean_error(tmp_path):
    bad = tmp_path / "bad.nbest"
    bad.write_text("0 ||| a ||| LM0= x ||| -1\n")
    result = CliRunner().invoke(mert_command, [str(bad), "--refs", str(TATOEBA_REFS), "-o", str(tmp_path / "w")])
    assert result.exit_code == 1
    assert f"Error: {bad}:1: feature score 'x' is not a number" in result.output
    assert not (tmp_path / "w").exists()


def test_significance_says_the_direction_and_no_gain_for_no_difference():
    """Identical outputs are no evidence: p = 1 and no agreeing pair (sacreBLEU alone gives its smallest p);
    a system worse in every run agrees with a negative Δ; a run pair counts only in Δ's direction."""
    from mosesrnn.tuning.significance import compare_runs, paired_p_value
    references = (Path(__file__).parent.parent / "examples" / "test.tok.fr").read_text(encoding="utf-8").splitlines()
    good = list(references)
    bad = [" ".join(line.split()[:2]) for line in references]  # every sentence cut to its first two words
    assert paired_p_value(good, good, references, "none", samples=200) == (0.0, 1.0)
    same = compare_runs([good, good], [100.0, 100.0], [good, good], [100.0, 100.0], references, "none")
    assert (same.delta, same.p_value, same.pairs_agreeing) == (0.0, 1.0, 0)
    worse = compare_runs([bad, bad], [10.0, 10.0], [good, good], [100.0, 100.0], references, "none")
    assert worse.delta < 0 and worse.p_value < 0.05 and worse.pairs_agreeing == 4
    better = compare_runs([good, good], [100.0, 100.0], [bad, bad], [10.0, 10.0], references, "none")
    assert better.delta > 0 and better.pairs_agreeing == 4
