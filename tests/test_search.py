"""Tests of mosesrnn.encdec.search and the sample / translate / augment commands, on tiny random models."""
import itertools
import math
from types import SimpleNamespace

import pytest
import torch
from click.testing import CliRunner
from scoring_helpers import TABLE, save_tiny_model

from mosesrnn.cli import main
from mosesrnn.encdec import search
from mosesrnn.encdec.batching import pad
from mosesrnn.encdec.generate import Searcher, Translation, nbest_line
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.pipeline.augment import augment_table
from mosesrnn.text.vocab import EOS_ID, UNK_ID

SOURCES = ["the house", "i am here .", "what is this", "he", "we do not know what to do .", "tom"]


@pytest.fixture(scope="module", params=[0, 1, 2])
def trained(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / f"tiny{request.param}.pt"
    return load_encoder_decoder(save_tiny_model(str(path), seed=request.param))


@pytest.fixture(scope="module")
def batch(trained):
    return pad([trained.input_codec.ids(text) for text in SOURCES])


def test_beam_1_is_greedy(trained, batch):
    greedy = search.greedy(trained.model, *batch)
    beam = search.beam_search(trained.model, *batch, 1, with_greedy=False)
    for g, (b,) in zip(greedy, beam):
        assert g.ids == b.ids
        assert g.log_prob == pytest.approx(b.log_prob, abs=1e-4)


@pytest.mark.parametrize("beam_size", [2, 3, 5, 10])
@pytest.mark.parametrize("length_normalize", [False, True])
def test_beam_never_scores_below_greedy(trained, batch, beam_size, length_normalize):
    greedy = search.greedy(trained.model, *batch)
    best = search.beam_search(trained.model, *batch, beam_size, length_normalize=length_normalize)
    for g, (b, *_) in zip(greedy, best):
        greedy_score = g.log_prob / (len(g.ids) + 1) if length_normalize else g.log_prob
        assert b.score >= greedy_score - 1e-6


def test_hypotheses_are_scored_as_the_scorer_scores_them(trained, batch):
    found = search.beam_search(trained.model, *batch, 4, nbest=4, with_greedy=False)
    hyps = [(source, hyp) for source, hyps in zip(SOURCES, found) for hyp in hyps]
    pairs = [SimpleNamespace(source=source, target=trained.output_codec.text(hyp.ids)) for source, hyp in hyps]
    for value, (_, hyp) in zip(RNNFeature(trained).values(pairs), hyps):
        assert value == pytest.approx(hyp.log_prob, abs=1e-4)


def test_nbest_lists_are_distinct_sorted_unk_free_and_batch_independent(trained, batch):
    together = search.beam_search(trained.model, *batch, 5, nbest=5)
    for index, hyps in enumerate(together):
        assert len(hyps) == 5 and len({hyp.ids for hyp in hyps}) == 5
        assert [hyp.score for hyp in hyps] == sorted((hyp.score for hyp in hyps), reverse=True)
        assert all(UNK_ID not in hyp.ids and EOS_ID not in hyp.ids for hyp in hyps)
        alone = search.beam_search(trained.model, *pad([trained.input_codec.ids(SOURCES[index])]), 5, nbest=5)[0]
        assert [hyp.ids for hyp in alone] == [hyp.ids for hyp in hyps]
        assert [hyp.log_prob for hyp in alone] == pytest.approx([hyp.log_prob for hyp in hyps], abs=1e-4)


def test_length_limit_ends_every_hypothesis(trained, batch):
    limit = torch.full((len(SOURCES),), 2)
    for hyps in search.beam_search(trained.model, *batch, 3, nbest=3, limit=limit):
        assert all(len(hyp.ids) <= 2 for hyp in hyps)
    assert all(len(s.ids) <= 2 for row in search.sample(trained.model, *batch, 5, limit=limit) for s in row)


def test_a_wide_beam_finds_the_exact_best_on_a_tiny_vocabulary(tmp_path):
    """Enumerate every target of at most 2 words over 4 words (no UNK): the beam must find the argmax."""
    trained = load_encoder_decoder(save_tiny_model(str(tmp_path / "v4.pt"), vocab_size=4))
    words = [i for i in range(len(trained.output_codec.vocabulary)) if i not in (0, UNK_ID, EOS_ID)]
    targets = [list(t) for n in range(3) for t in itertools.product(words, repeat=n)]
    for source in SOURCES[:3]:
        src, lengths = pad([trained.input_codec.ids(source)])
        trg, trg_lengths = pad(targets, append_eos=True)
        with torch.inference_mode():
            log_p = trained.model.log_prob(src.expand(len(targets), -1), lengths.expand(len(targets)),
                                           trg, trg_lengths)
        best = search.beam_search(trained.model, src, lengths, len(targets), limit=torch.tensor([2]))[0][0]
        assert best.log_prob == pytest.approx(log_p.max().item(), abs=1e-4)
        assert list(best.ids) == targets[int(log_p.argmax())]


def test_sampling_with_a_seed_is_reproducible(trained, batch):
    def draw(seed):
        return search.sample(trained.model, *batch, 8, generator=torch.Generator().manual_seed(seed))

    assert draw(3) == draw(3)
    assert draw(3) != draw(4)
    pairs = [SimpleNamespace(source=source, target=trained.output_codec.text(s.ids))
             for source, row in zip(SOURCES, draw(3)) for s in row]
    expected = [s.log_prob for row in draw(3) for s in row]
    assert RNNFeature(trained).values(pairs) == pytest.approx(expected, abs=1e-4)


def test_searcher_ranks_distinct_samples_and_keeps_empty_lines(trained):
    searcher = Searcher(trained, batch_size=2)
    samples = searcher.sample(["the house", ""], 30, top=5, seed=7)
    assert samples[1] == [] and 1 <= len(samples[0]) <= 5
    assert len({s.text for s in samples[0]}) == len(samples[0])
    assert [s.log_prob for s in samples[0]] == sorted((s.log_prob for s in samples[0]), reverse=True)
    assert searcher.sample(["the house", ""], 30, top=5, seed=7) == samples
    # as Moses: an empty input line keeps its sentence id with one empty hypothesis
    assert searcher.translate(["", "he"], beam_size=3)[0] == [Translation("", 0.0, 0.0)]


def test_nbest_line_is_moses_format():
    from mosesrnn.encdec.generate import Translation
    assert nbest_line(0, Translation("la maison", -3.25, -1.0833333)) == "0 ||| la maison ||| RNN0= -3.25 ||| -1.08333"


def test_translate_command_writes_one_best_and_nbest(tmp_path):
    model = save_tiny_model(str(tmp_path / "m.pt"))
    (tmp_path / "in.txt").write_text("the house\n\ni am here .\n")
    one = CliRunner().invoke(main, ["translate", "-m", model, str(tmp_path / "in.txt"), "--beam", "3", "-q"])
    assert one.exit_code == 0, one.output
    assert len(one.output.splitlines()) == 3 and one.output.splitlines()[1] == ""
    out = tmp_path / "out.nbest"
    result = CliRunner().invoke(main, ["translate", "-m", model, str(tmp_path / "in.txt"), "--beam", "3",
                                       "--nbest", "2", "--length-normalize", "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert [line.split(" ||| ")[0] for line in lines] == ["0", "0", "1", "2", "2"]
    assert lines[2] == "1 |||  ||| RNN0= 0 ||| 0"
    for line in lines:
        _, hyp, features, total = line.split(" ||| ")
        name, value = features.split()
        assert name == "RNN0=" and float(total) == pytest.approx(float(value) / (len(hyp.split()) + 1), rel=1e-4)


def test_sample_command_is_reproducible(tmp_path):
    model = save_tiny_model(str(tmp_path / "m.pt"))
    args = ["sample", "-m", model, "--source", "the house", "-n", "20", "--top", "3", "--seed", "5", "--tsv", "-q"]
    first, second = CliRunner().invoke(main, args), CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    assert first.output == second.output and 1 <= len(first.output.splitlines()) <= 3


def test_augment_writes_lines_the_reader_and_score_accept(tmp_path):
    model = save_tiny_model(str(tmp_path / "m.pt"))
    out = tmp_path / "aug.gz"
    summary = augment_table(TABLE, str(out), Searcher(load_encoder_decoder(model)), beam_size=3, per_source=2,
                            max_sources=20)
    original = list(read_entries(TABLE))
    augmented = list(read_entries(str(out)))  # the reader validates every line (same score count)
    assert summary.searched_sources == 20 and summary.new_pairs == len(augmented) - len(original) > 0
    assert summary.new_pairs + summary.proposals_in_table <= 20 * 2
    assert all(len(entry.scores) == len(original[0].scores) + 1 for entry in augmented)
    old = [entry for entry in augmented if entry.fields[3].strip()]
    assert [(e.source, e.target, e.scores[:-1]) for e in old] == [(e.source, e.target, e.scores) for e in original]
    groups = [source for source, _ in itertools.groupby(entry.source for entry in augmented)]
    assert len(groups) == len(set(groups))  # new lines sit inside their source's group
    listed = (tmp_path / "aug.gz.new.tsv").read_text().splitlines()
    assert len(listed) == summary.new_pairs + 1
    result = CliRunner().invoke(main, ["score", str(out), "-m", model, "-o", str(tmp_path / "rescored.gz"), "-q"])
    assert result.exit_code == 0, result.output
    rescored = list(read_entries(str(tmp_path / "rescored.gz")))
    for entry in rescored:  # the appended rnn column equals score's own
        assert math.log(entry.scores[-3]) == pytest.approx(math.log(entry.scores[-2]), abs=1e-4)
