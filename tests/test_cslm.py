"""The CSLM (C14 Sec. 5.1.1): its equations, n-grams, training, NPLM export, and the real NPLM and Moses.

The tests with the real binaries find NPLM's ``testNeuralLM`` and a Moses built ``--with-nplm``
through ``$NPLM_BIN`` / ``$MOSES_BIN``, then ``~/moses/nplm/bin`` and ``~/moses/mosesdecoder/bin``
(where ``build-moses.sh`` puts them), then PATH; where they are absent they are skipped, saying so.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import shutil
import subprocess

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from conftest import DATA, TESTS, built_program
from scoring_helpers import save_tiny_model

from moses_integration.neural_lm import add_neural_lm
from moses_integration.nplm_check import HEAPS
from mosesrnn.cli import main
from mosesrnn.cslm.config import CSLMConfig
from mosesrnn.cslm.data import BOS, lm_vocabulary, load_lm_data, ngrams
from mosesrnn.cslm.export import cslm_network
from mosesrnn.cslm.model import CSLM
from mosesrnn.cslm.model_file import TrainedCSLM, load_cslm, save_cslm
from mosesrnn.cslm.scoring import sentence_scores, text_stats
from mosesrnn.cslm.task import CSLMTrainConfig, train_cslm
from mosesrnn.formats.moses_ini import MosesIniError
from mosesrnn.formats.nbest import read_nbest
from mosesrnn.formats.nplm import read_nplm, write_nplm
from mosesrnn.text.codec import Codec
from mosesrnn.text.tokenizers import MosesWords
from mosesrnn.text.vocab import EOS_ID, PAD_ID, Vocabulary
from mosesrnn.train.validation import target_counts, unigram_perplexity

CORPUS = DATA / "tatoeba.train2k.tok.fr"  # 2,000 tokenised French training sentences of the Tatoeba system
DEV = DATA / "nbest" / "tatoeba.dev30.fr"
SOURCES = DATA / "nbest" / "tatoeba.dev30.tok.en"


def tiny_lm(hidden=(16,), order=4, seed=0) -> TrainedCSLM:
    """Random weights (std 0.3, so that scores differ) over the corpus' 300 most frequent words."""
    counts = __import__("collections").Counter(w for line in open(CORPUS, encoding="utf-8") for w in line.split())
    vocabulary = lm_vocabulary(counts, 300)
    torch.manual_seed(seed)
    model = CSLM(CSLMConfig(len(vocabulary), order=order, embed_dim=6, hidden_dims=hidden))
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.3)
    return TrainedCSLM(model.eval(), Codec(MosesWords(), vocabulary), {}, "tiny")


def self_normalised(trained: TrainedCSLM) -> TrainedCSLM:
    """``trained`` with its output biases shifted by the mean log Z on dev text (so that its raw scores are
    log-probabilities on average, as self-normalised training makes them), and that measure recorded as
    training records it."""
    stats = text_stats(trained, dev_sentences())
    with torch.no_grad():
        trained.model.output.bias -= stats.log_z_mean
    after = text_stats(trained, dev_sentences())
    return TrainedCSLM(trained.model, trained.codec, {"log_z_mean": after.log_z_mean, "log_z_std": after.log_z_std},
                     trained.digest)


@pytest.fixture(scope="module")
def lm_file(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("lm") / "lm.pt")
    trained = self_normalised(tiny_lm())
    save_cslm(path, trained.model, trained.codec, trained.info)
    return path


def dev_sentences(count=20) -> list[str]:
    return DEV.read_text(encoding="utf-8").splitlines()[:count]


# -- the model, its data, its training -------------------------------------------------------------


def test_scores_follow_the_equations():
    """scores = O relu(H2 relu(H1 [e(w1); e(w2); e(w3)] + b1) + b2) + bO, written out by hand."""
    model = tiny_lm(hidden=(16, 8)).model
    context = torch.tensor([[3, 10, 11], [3, 3, 3]])
    x = torch.cat([model.embed.weight[context[:, i]] for i in range(3)], dim=1)  # (2, 18)
    h1 = torch.clamp(x @ model.hidden[0].weight.T + model.hidden[0].bias, min=0)
    h2 = torch.clamp(h1 @ model.hidden[1].weight.T + model.hidden[1].bias, min=0)
    expected = h2 @ model.output.weight.T + model.output.bias
    torch.testing.assert_close(model(context), expected)


@pytest.mark.parametrize("normalized", [True, False])
def test_sentence_scores_sum_each_words_score_given_its_context(normalized):
    trained = tiny_lm(order=3)
    trained.model.output.bias.data[7] = -300.0  # a word whose raw score Moses floors at -100
    words = trained.codec.vocabulary.itos
    # n-best-like: hypotheses sharing their first words (so their contexts), an empty one, unknown words
    sentences = ["je ne sais pas .", "je ne sais pas", "je ne le sais pas .", "", f"{words[5]} {words[7]} zzqx"]
    bos = trained.codec.vocabulary.stoi[BOS]
    expected = []
    for text in sentences:
        ids = [bos, bos, *trained.codec.ids(text), EOS_ID]
        total = 0.0
        for position in range(2, len(ids)):
            with torch.no_grad():
                scores = trained.model(torch.tensor([ids[position - 2:position]]))[0].double()
            value = (scores.log_softmax(0) if normalized else scores.clamp(min=-100.0))[ids[position]]
            total += float(value)
        expected.append(total)
    np.testing.assert_allclose(sentence_scores(trained, sentences, normalized=normalized, batch_size=2),
                               expected, rtol=1e-6)


def test_a_fresh_model_is_uniform_and_self_normalised():
    model = CSLM(CSLMConfig(1000, order=3, embed_dim=4, hidden_dims=(8,)))
    log_z = model(torch.tensor([[3, 3], [5, 9]])).logsumexp(1)
    assert log_z.abs().max() < 0.05  # the output bias starts at -log V
    assert all(p.abs().max() <= 0.01 for n, p in model.named_parameters() if n.endswith("weight"))


def test_ngrams_pad_with_sentence_starts_and_end_with_eos():
    vocabulary = Vocabulary([BOS, "a", "b"])  # ids: <pad> 0, <unk> 1, </s> 2, <s> 3, a 4, b 5
    data = ngrams([[4, 5], [5]], order=3, bos_id=3)
    context, targets = data.batch(np.arange(len(data)))
    assert context.tolist() == [[3, 3], [3, 4], [4, 5], [3, 3], [3, 5]]
    assert targets.tolist() == [4, 5, EOS_ID, 5, EOS_ID] and data.words == 3
    assert vocabulary.stoi[BOS] == 3


def test_vocabulary_keeps_the_most_frequent_words_and_never_a_special_token():
    vocabulary = lm_vocabulary(__import__("collections").Counter(
        {"b": 3, "a": 3, "c": 1, "<s>": 9, "<null>": 9, "<unk>": 9}), 2)
    assert vocabulary.itos == ["<pad>", "<unk>", "</s>", "<s>", "a", "b"]


def test_unigram_perplexity_by_hand():
    train, valid = ngrams([[4, 4]], 2, 3), ngrams([[5]], 2, 3)  # targets: 4 4 </s> | 5 </s>
    # add-one over the 4 predictable ids of 6 (not <pad>, not <s>): counts 4: 2, </s>: 1, 5: 0, <unk>: 0
    expected = math.exp(-(math.log(1 / 7) + math.log(2 / 7)) / 2)
    baseline = unigram_perplexity(target_counts(train.targets(), 6), valid.targets(), 4, never=(PAD_ID,))
    assert baseline == pytest.approx(expected, rel=1e-12)


def test_training_lowers_perplexity_and_self_normalises(tmp_path):
    config = dict(corpus=str(CORPUS), valid=str(DEV), preset="small", order=3, vocab_size=500, embed_dim=16,
                  hidden_dims=(32,), batch_size=64, valid_every=100, max_updates=200, learning_rate=1e-2, threads=1,
                  quiet=True)
    normalised = train_cslm(CSLMTrainConfig(str(tmp_path / "a"), self_norm=1.0, **config))
    free = train_cslm(CSLMTrainConfig(str(tmp_path / "b"), self_norm=0.0, **config))
    assert normalised.best["valid_ppl"] < 0.8 * normalised.unigram_ppl
    assert abs(normalised.best["log_z_mean"]) < 0.1 < abs(free.best["log_z_mean"])
    assert normalised.best["log_z_std"] < free.best["log_z_std"] / 5
    trained = load_cslm(normalised.best_path)
    assert trained.info["valid_ppl"] == pytest.approx(normalised.best["valid_ppl"])


def test_nce_training_lowers_perplexity_and_self_normalises(tmp_path):
    config = dict(corpus=str(CORPUS), valid=str(DEV), preset="small", order=3, vocab_size=500, embed_dim=16,
                  hidden_dims=(32,), batch_size=64, valid_every=100, max_updates=200, learning_rate=1e-2, threads=1,
                  quiet=True, estimator="nce", noise_samples=50, output_bias="unigram", dropout=0.1,
                  lr_decay="linear")
    result = train_cslm(CSLMTrainConfig(str(tmp_path), **config))
    assert result.best["valid_ppl"] < 0.8 * result.unigram_ppl
    assert abs(result.best["log_z_mean"]) < 0.5
    records = [json.loads(line) for line in open(tmp_path / "train.jsonl")]
    assert records[0]["recipe"]["estimator"] == "nce" and records[0]["loss"].startswith("NCE")


def test_the_moses_preset_trains_with_nce_and_the_others_as_before():
    moses, small = (CSLMTrainConfig("x", "corpus", preset=preset) for preset in ("moses", "small"))
    assert [moses.setting(name) for name in ("estimator", "noise_samples", "batch_size", "learning_rate", "dropout",
                                             "warmup", "lr_decay", "output_bias")] == \
        ["nce", 500, 512, 2e-3, 0.3, 100, "linear", "unigram"]
    assert [small.setting(name) for name in ("estimator", "batch_size", "learning_rate", "dropout", "lr_decay")] == \
        ["softmax", 128, 1e-3, 0.0, "none"]
    assert CSLMTrainConfig("x", "corpus", preset="moses", batch_size=64).setting("batch_size") == 64


def test_dropout_changes_training_only():
    model = CSLM(CSLMConfig(vocab_size=50, order=3, embed_dim=4, hidden_dims=(8,))).eval()
    torch.nn.init.normal_(model.output.weight)
    context = torch.randint(0, 50, (5, 2))
    assert torch.equal(model(context), model(context, dropout=0.5))  # evaluation: no dropout
    assert not torch.equal(model(context), model.train()(context, dropout=0.5))
    model.eval()
    words = torch.tensor([3, 7, 7])
    torch.testing.assert_close(model(context, words=words), model(context)[:, words])


@pytest.mark.parametrize("estimator", ["softmax", "nce"])
def test_training_resumes_exactly(tmp_path, estimator):
    config = dict(corpus=str(CORPUS), preset="small", order=3, vocab_size=300, embed_dim=8, hidden_dims=(16,),
                  batch_size=32, valid_every=10, threads=1, quiet=True, estimator=estimator, dropout=0.2,
                  lr_decay="linear", warmup=5, max_updates=30)
    straight = train_cslm(CSLMTrainConfig(str(tmp_path / "a"), **config))
    train_cslm(CSLMTrainConfig(str(tmp_path / "b"), **config), should_stop=lambda updates: updates >= 15)  # a crash
    resumed = train_cslm(CSLMTrainConfig(str(tmp_path / "b"), **config))
    a, b = (load_cslm(r.last_path).model.state_dict() for r in (straight, resumed))
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-6)


@pytest.mark.parametrize("lines, message", [
    ("", "no sentences"),
    ("\n  \n", "no sentences"),
    ("un deux\n", "too few to hold out"),
])
def test_bad_corpora_are_refused(tmp_path, lines, message):
    corpus = tmp_path / "corpus.fr"
    corpus.write_text(lines, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_lm_data(str(corpus), order=3, vocab_size=10)


def test_an_order_moses_cannot_hold_is_refused():
    with pytest.raises(ValueError, match="between 2 and 20"):
        CSLMConfig(100, order=21)
    result = CliRunner().invoke(main, ["lm", "train", str(CORPUS), "-o", "x", "--order", "21"])
    assert result.exit_code == 2 and "21 is not in the range 2<=x<=20" in result.output


# -- NPLM's format ---------------------------------------------------------------------------------


@pytest.mark.parametrize("hidden", [(16,), (16, 8)])
def test_the_nplm_file_holds_the_weights_in_nplms_layout(hidden):
    trained = tiny_lm(hidden=hidden)
    model, text = trained.model, io.StringIO()
    write_nplm(text, cslm_network(model, trained.codec.vocabulary.itos))
    head = text.getvalue().split("\n\n")[0].splitlines()
    assert head == ["\\config", "version 1", "ngram_size 4", "input_vocab_size 304", "output_vocab_size 304",
                    "input_embedding_dimension 6", f"num_hidden {0 if len(hidden) == 1 else 16}",
                    f"output_embedding_dimension {hidden[-1]}", "activation_function rectifier"]
    assert "\\vocab\n<null>\n<unk>\n</s>\n<s>\n" in text.getvalue()  # one vocabulary: input and output alike
    if len(hidden) == 1:
        assert "\\hidden_weights 2\n0\n\n" in text.getvalue()  # NPLM's num_hidden 0 form
    network = read_nplm(io.StringIO(text.getvalue()))
    assert network.order == 4 and list(network.input_words) == list(network.output_words)
    assert len(network.input_words) == 304 and network.input_words[:4] == ["<null>", "<unk>", "</s>", "<s>"]
    arrays = [(network.input_embeddings, model.embed.weight), (network.output_weights, model.output.weight),
              (network.output_biases, model.output.bias)]
    arrays += [(ours, theirs) for (w, b), layer in zip(network.hidden, model.hidden)
               for ours, theirs in ((w, layer.weight), (b, layer.bias))]
    assert len(network.hidden) == len(hidden)
    for ours, tensor in arrays:
        np.testing.assert_allclose(ours, tensor.detach().double().numpy(), rtol=1e-8, atol=0)


def test_an_export_is_not_overwritten_without_force(lm_file, tmp_path):
    out = tmp_path / "lm.nplm"
    assert CliRunner().invoke(main, ["lm", "export", "-m", lm_file, "-o", str(out)]).exit_code == 0
    again = CliRunner().invoke(main, ["lm", "export", "-m", lm_file, "-o", str(out)])
    assert again.exit_code == 1 and f"{out} exists" in again.output
    assert CliRunner().invoke(main, ["lm", "export", "-m", lm_file, "-o", str(out), "--force"]).exit_code == 0


def test_a_model_that_is_not_self_normalised_is_not_exported(tmp_path):
    """Moses' NeuralLM reads raw scores: a model whose log Z is far from 0 would be off by it on every word."""
    trained = tiny_lm()
    stats = text_stats(trained, dev_sentences())
    assert abs(stats.log_z_mean) > 0.5  # random weights: not normalised
    path = str(tmp_path / "lm.pt")
    save_cslm(path, trained.model, trained.codec, {"log_z_mean": stats.log_z_mean})
    result = CliRunner().invoke(main, ["lm", "export", "-m", path, "-o", str(tmp_path / "lm.nplm")])
    assert result.exit_code == 1 and "is not self-normalised: mean log Z" in result.output
    assert not (tmp_path / "lm.nplm").exists()
    save_cslm(path, trained.model, trained.codec)
    result = CliRunner().invoke(main, ["lm", "export", "-m", path, "-o", str(tmp_path / "lm.nplm")])
    assert result.exit_code == 1 and "not validated yet" in result.output


def test_moses_ini_adds_a_neural_lm_feature_and_its_weight():
    ini = (DATA / "moses" / "tatoeba-en-fr.moses.ini").read_text(encoding="utf-8")
    text, line = add_neural_lm(ini, "/abs/lm.nplm", 7, 0.1)
    added = [row for row in text.splitlines() if row not in ini.splitlines()]
    assert added == ["NeuralLM name=NeuralLM0 factor=0 order=7 path=/abs/lm.nplm", "NeuralLM0= 0.1"]
    assert text.index("NeuralLM name=") < text.index("[weight]") < text.index("NeuralLM0= 0.1")


@pytest.mark.parametrize("existing, refused", [("NeuralLM factor=0 order=5 path=/lm.nplm", True),
                                               ("NeuralLM name=CSLM factor=0 order=5 path=/lm.nplm", False),
                                               ("KENLM name=NeuralLM0 factor=0 order=5 path=/lm.arpa", True)])
def test_a_second_neural_lm_is_refused_only_where_moses_would_see_two_of_one_name(existing, refused):
    """Moses names an unnamed feature by its type and the unnamed ones of that type before it: an unnamed
    NeuralLM already is NeuralLM0, a named one is not."""
    ini = (DATA / "moses" / "tatoeba-en-fr.moses.ini").read_text(encoding="utf-8").replace(
        "[weight]", f"{existing}\n[weight]", 1)
    line_no = ini.splitlines().index(existing) + 1
    if refused:
        with pytest.raises(MosesIniError, match=rf"^moses.ini:{line_no}: there is already a feature NeuralLM0$"):
            add_neural_lm(ini, "/abs/lm.nplm", 7, 0.1)
    else:
        assert "NeuralLM name=NeuralLM0 factor=0 order=7" in add_neural_lm(ini, "/abs/lm.nplm", 7, 0.1)[0]


# -- the real NPLM and Moses -----------------------------------------------------------------------


@pytest.mark.parametrize("normalization", [1, 0])
def test_testneurallm_gives_our_sentence_scores(tmp_path, normalization):
    binary = built_program("testNeuralLM", "NPLM_BIN", "~/moses/nplm/bin")
    trained = tiny_lm(hidden=(16,))
    with open(tmp_path / "lm.nplm", "w", encoding="utf-8") as out:
        write_nplm(out, cslm_network(trained.model, trained.codec.vocabulary.itos))
    sentences = dev_sentences()
    (tmp_path / "test.fr").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    done = subprocess.run([binary, "--model_file", str(tmp_path / "lm.nplm"), "--test_file", str(tmp_path / "test.fr"),
                           "--normalization", str(normalization)], capture_output=True, text=True, check=True)
    theirs = [float(line) for line in done.stdout.split()]  # log10 per sentence
    ours = sentence_scores(trained, sentences, normalized=bool(normalization))
    assert len(theirs) == len(sentences)
    np.testing.assert_allclose(theirs, np.array(ours) / math.log(10), atol=1e-4, rtol=0)


def test_the_nplm_patch_fits_the_nplm_that_build_moses_builds(tmp_path):
    """fix-nplm.sh's patch applies to (or is already in) the NPLM source beside testNeuralLM's bin/."""
    binary = built_program("testNeuralLM", "NPLM_BIN", "~/moses/nplm/bin")
    source = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(binary))), "src", "neuralNetwork.h")
    if not os.path.isfile(source):
        pytest.skip(f"no NPLM source at {source}")
    patch = TESTS.parent / "moses_integration" / "nplm-skip-hidden.patch"
    (tmp_path / "src").mkdir()
    shutil.copy(source, tmp_path / "src")
    forward, backward = (subprocess.run(["patch", "-p1", "--dry-run", *flags, "-d", str(tmp_path), "-i", str(patch)],
                                        capture_output=True, text=True) for flags in ([], ["-R"]))
    assert (forward.returncode == 0) != (backward.returncode == 0), forward.stdout + backward.stdout


@pytest.mark.parametrize("heap", HEAPS)
@pytest.mark.parametrize("hidden", [(16,), (16, 8)])
def test_testneurallm_reads_either_shape_whatever_the_heap_held(tmp_path, hidden, heap):
    """NPLM decides whether to skip its second hidden layer from uninitialised memory unless fixed
    (moses_integration/fix-nplm.sh): MALLOC_PERTURB_ makes new allocations zeros (255) or 0x5a bytes (165),
    and an unfixed testNeuralLM gets one of the four cases wrong in each heap."""
    binary = built_program("testNeuralLM", "NPLM_BIN", "~/moses/nplm/bin")
    trained = tiny_lm(hidden=hidden)
    with open(tmp_path / "lm.nplm", "w", encoding="utf-8") as out:
        write_nplm(out, cslm_network(trained.model, trained.codec.vocabulary.itos))
    (tmp_path / "test.fr").write_text("\n".join(dev_sentences(5)) + "\n", encoding="utf-8")
    done = subprocess.run([binary, "--model_file", str(tmp_path / "lm.nplm"), "--test_file", str(tmp_path / "test.fr"),
                           "--normalization", "1"], capture_output=True, text=True, check=True,
                          env={**os.environ, "MALLOC_PERTURB_": heap})
    ours = np.array(sentence_scores(trained, dev_sentences(5))) / math.log(10)
    theirs = np.array([float(line) for line in done.stdout.split()])
    assert len(theirs) == 5
    assert np.abs(theirs - ours).max() < 1e-3, f"{binary} lacks NPLM's fix: run moses_integration/fix-nplm.sh"


@pytest.mark.parametrize("heap", HEAPS)
def test_moses_neurallm_values_are_our_scores(tmp_path, heap):
    """A real Moses decodes with the exported model; each hypothesis' NeuralLM0= is our raw sentence score,
    whatever new allocations hold (MALLOC_PERTURB_: an unfixed NPLM misreads the file in one of the heaps)."""
    moses = built_program("moses")
    trained = tiny_lm(hidden=(16,), order=5)
    with open(tmp_path / "lm.nplm", "w", encoding="utf-8") as out:
        write_nplm(out, cslm_network(trained.model, trained.codec.vocabulary.itos))
    table = DATA / "moses" / "tatoeba.dev5.phrase-table.gz"  # the Tatoeba table's lines for the 5 sentences
    ini = tmp_path / "moses.ini"
    ini.write_text("[input-factors]\n0\n[mapping]\n0 T 0\n[distortion-limit]\n6\n[feature]\nUnknownWordPenalty\n"
                   "WordPenalty\nPhrasePenalty\nPhraseDictionaryMemory name=TranslationModel0 num-features=4 "
                   f"path={table} input-factor=0 output-factor=0 table-limit=20\nDistortion\n"
                   f"NeuralLM name=NeuralLM0 factor=0 order=5 path={tmp_path / 'lm.nplm'}\n[weight]\n"
                   "UnknownWordPenalty0= 1\nWordPenalty0= -1\nPhrasePenalty0= 0.2\nTranslationModel0= 0.2 0.2 0.2 0.2\n"
                   "Distortion0= 0.3\nNeuralLM0= 0.5\n", encoding="utf-8")
    (tmp_path / "in.en").write_text("".join(SOURCES.read_text(encoding="utf-8").splitlines(True)[:5]))
    done = subprocess.run([moses, "-f", str(ini), "-input-file", str(tmp_path / "in.en"), "-n-best-list",
                           str(tmp_path / "nbest"), "20", "-threads", "1"], capture_output=True, text=True,
                          env={**os.environ, "MALLOC_PERTURB_": heap})
    if "NeuralLM" in done.stderr and done.returncode != 0:
        pytest.skip(f"this Moses was built without NPLM: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr[-2000:]
    entries = list(read_nbest(str(tmp_path / "nbest")))
    assert len(entries) > 20 and len({e.hypothesis for e in entries}) > 10
    moses_values = [dict(e.features)["NeuralLM0"][0] for e in entries]
    ours = sentence_scores(trained, [e.hypothesis for e in entries], normalized=False)
    np.testing.assert_allclose(moses_values, ours, atol=1e-3 + 1e-5 * np.abs(ours).max(), rtol=0,
                               err_msg="this Moses' NPLM lacks its fix: run moses_integration/fix-nplm.sh")


# -- the commands ----------------------------------------------------------------------------------


def test_lm_train_export_and_perplexity_from_the_command_line(tmp_path):
    model = tmp_path / "lm"
    result = CliRunner().invoke(main, ["lm", "train", str(CORPUS), "-o", str(model), "--valid", str(DEV),
                                       "--order", "3", "--vocab-size", "300", "--embed-dim", "8", "--hidden", "16",
                                       "--max-updates", "20", "--valid-every", "10", "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert "validation perplexity" in result.stdout and "log Z" in result.stdout
    for name in ("best.pt", "last.pt", "state.pt", "train.jsonl", "loss.png"):
        assert (model / name).exists(), name
    # what it was validated on, by content: `tune --select-on half` refuses a model validated on the dev set
    assert load_cslm(str(model / "best.pt")).info["validation"] == {
        "file": str(DEV), "sha256": hashlib.sha256(DEV.read_bytes()).hexdigest(), "lines": 30}
    shared = CliRunner().invoke(main, ["lm", "train", str(CORPUS), "-o", str(tmp_path / "shared"), "--valid-share",
                                       "0.05", "--order", "3", "--vocab-size", "300", "--embed-dim", "8", "--hidden",
                                       "16", "--max-updates", "2", "--valid-every", "1", "--threads", "1"])
    assert shared.exit_code == 0, shared.output
    assert load_cslm(str(tmp_path / "shared" / "best.pt")).info["validation"] == {"share": 0.05}
    result = CliRunner().invoke(main, ["perplexity", "-m", str(model / "best.pt"), str(DEV)])
    assert result.exit_code == 0 and f"{DEV}: 30 sentences" in result.stdout and "perplexity" in result.stdout


def test_nbest_adds_the_sentence_log_probability(lm_file, tmp_path):
    out = tmp_path / "out.gz"
    nbest = DATA / "nbest" / "tatoeba.dev30.untuned.100best.gz"
    result = CliRunner().invoke(main, ["nbest", str(nbest), "--source", str(SOURCES), "--lm", lm_file,
                                       "-o", str(out)])
    assert result.exit_code == 0, result.output
    entries = list(read_nbest(str(out)))
    assert [e.feature_names[-1] for e in entries[:3]] == ["CSLM0"] * 3
    expected = sentence_scores(load_cslm(lm_file), [e.hypothesis for e in entries[:300]])
    np.testing.assert_allclose([dict(e.features)["CSLM0"][0] for e in entries[:300]], expected, rtol=1e-5)
    assert gzip.decompress(out.read_bytes()).count(b"\n") == gzip.decompress(nbest.read_bytes()).count(b"\n")


def test_each_command_refuses_a_model_of_the_wrong_kind(lm_file, tmp_path):
    rnn = save_tiny_model(str(tmp_path / "rnn.pt"))
    table = DATA / "tatoeba.en-fr.3k.gz"
    cases = [
        (["score", str(table), "-m", lm_file, "-o", str(tmp_path / "o.gz")],
         f"{lm_file} is a CSLM (a target language model, from `mosesrnn lm train`), not an RNN Encoder-Decoder"),
        (["nbest", str(DATA / "nbest" / "tatoeba.dev30.untuned.100best.gz"), "--source", str(SOURCES), "--lm", rnn,
          "-o", str(tmp_path / "o.gz")], f"{rnn} is an RNN Encoder-Decoder (a translation model, from `mosesrnn "
                                         "train`), not a CSLM"),
        (["lm", "export", "-m", rnn, "-o", str(tmp_path / "o.nplm")], f"{rnn} is an RNN Encoder-Decoder"),
        (["moses-ini", str(DATA / "moses" / "tatoeba-en-fr.moses.ini"), "--cslm", lm_file, "-o",
          str(tmp_path / "o.ini")], f"{lm_file} is a mosesrnn model file (PyTorch); Moses reads NPLM"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1 and message in result.output, (args, result.output)
    assert not list(tmp_path.glob("o.*"))
    refused = CliRunner().invoke(main, ["score", str(table), "-m", rnn, "--features", "rnn,cslm", "-o",
                                        str(tmp_path / "o.gz")])
    assert refused.exit_code == 1 and "cslm scores whole sentences, not phrase pairs" in refused.output
