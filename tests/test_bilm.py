"""The neural network joint model (Devlin et al. 2014) for Moses' BilingualNPLM: its examples are the n-grams
the decoder queries (affiliation, windows, padding, ids), its export is what BilingualNPLM reads, its
scores are the feature's, and with real Moses (where built --with-nplm) the decoder's values equal ours.

The real-Moses test finds a Moses built ``--with-nplm`` through ``$MOSES_BIN``, then
``~/moses/mosesdecoder/bin``, then PATH, and skips with the reason where there is none.
"""
from __future__ import annotations

import io
import json
import os
import subprocess

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from conftest import DATA, built_program, shared_file

from moses_integration.bilingual_lm import read_joint_export, with_bilingual_lm
from moses_integration.nplm_check import HEAPS
from mosesrnn.bilm.data import (
    JointVocabulary,
    affiliations,
    aligned_sentences,
    examples,
    joint_vocabulary,
    load_joint_data,
    read_alignment,
)
from mosesrnn.bilm.export import joint_network
from mosesrnn.bilm.model_file import load_joint
from mosesrnn.bilm.scoring import aligned, sentence_scores, translation_affiliations
from mosesrnn.cli import main
from mosesrnn.formats.errors import FileLineError
from mosesrnn.formats.nbest import read_nbest
from mosesrnn.formats.nplm import read_nplm, write_nplm

SOURCE, TARGET, ALIGNMENT = (DATA / f"tatoeba.train2k.{suffix}" for suffix in ("tok.en", "tok.fr", "align"))
TINY = ["--preset", "small", "--vocab-size", "300", "--source-vocab-size", "300", "--embed-dim", "8", "--hidden", "16",
        "--max-updates", "60", "--valid-every", "30", "--valid-share", "0.05", "--batch-size", "64",
        "--noise-samples", "50", "--threads", "1", "-q"]


def vocabulary(source_words: str, target_words: str) -> JointVocabulary:
    return JointVocabulary(("<unk>", "<null>", "<s>", "</s>", *target_words.split()),
                           ("<unk>", "<s>", "</s>", *source_words.split()))


# -- the examples: what BilingualNPLM queries ------------------------------------------------------


def test_affiliation_is_the_middle_link_else_the_nearest_linked_neighbour_right_first():
    links = [[], [3, 1, 2], [], [0], [5, 4], []]
    # 0: none, its right neighbour's middle (1 2 3 -> 2); 2: right (3) before left (1) -> 0;
    # 4: an even count takes the lower middle -> 4; 5: none on the right, its left neighbour's -> 4
    assert affiliations(links) == [2, 2, 0, 0, 4, 4]
    assert affiliations([[], []]) == [None, None]


def test_the_examples_are_source_window_target_history_and_target_with_moses_padding():
    voc = vocabulary("a b c", "x y")
    s = {w: len(voc.target) + i for i, w in enumerate(voc.source)}  # source ids follow the target words
    t = {w: i for i, w in enumerate(voc.target)}
    pairs = [(["a", "b", "c"], ["x", "y"], read_alignment("0-0 2-1", 3, 2))]
    grams = examples(pairs, voc, window=1, order=3).grams
    assert grams.tolist() == [
        [s["<s>"], s["a"], s["b"], t["<s>"], t["<s>"], t["x"]],  # x with a: the window starts before the source
        [s["b"], s["c"], s["</s>"], t["<s>"], t["x"], t["y"]],  # y with c
        [s["c"], s["</s>"], s["</s>"], t["x"], t["y"], t["</s>"]],  # </s> with the source's end
    ]
    assert t["<unk>"] == 0 and s["<unk>"] == len(voc.target)  # <unk> first in each list, as BilingualNPLM reads them
    unknown = examples([(["zz"], ["qq"], read_alignment("0-0", 1, 1))], voc, window=0, order=2).grams
    assert unknown.tolist()[0] == [s["<unk>"], t["<s>"], t["<unk>"]]


def test_the_corpus_files_must_agree_line_for_line(tmp_path):
    short = tmp_path / "short.align"
    short.write_text("".join(ALIGNMENT.read_text(encoding="utf-8").splitlines(True)[:100]), encoding="utf-8")
    with pytest.raises(FileLineError, match=r"short.align:101: ends here, but .*tok.en and .*tok.fr go on"):
        load_joint_data(str(SOURCE), str(TARGET), str(short), window=1, order=2, target_size=50, source_size=50)
    short_source = tmp_path / "short.en"  # the file that ends is named, not one that goes on
    short_source.write_text("".join(SOURCE.read_text(encoding="utf-8").splitlines(True)[:100]), encoding="utf-8")
    with pytest.raises(FileLineError, match=r"short.en:101: ends here, but .*tok.fr and .*align go on"):
        load_joint_data(str(short_source), str(TARGET), str(ALIGNMENT), window=1, order=2, target_size=50,
                        source_size=50)
    wrong = tmp_path / "wrong.align"
    wrong.write_text("0-0 9-9\n" * 2000, encoding="utf-8")
    with pytest.raises(FileLineError, match=r"wrong.align:1: link 9-9 is outside the sentence pair"):
        load_joint_data(str(SOURCE), str(TARGET), str(wrong), window=1, order=2, target_size=50, source_size=50)


def test_a_corpus_makes_one_example_per_target_word_and_end():
    data = load_joint_data(str(SOURCE), str(TARGET), str(ALIGNMENT), window=2, order=3, target_size=500,
                           source_size=400, valid_share=0.05)
    words = sum(len(line.split()) for line in TARGET.read_text(encoding="utf-8").splitlines())
    lines = len(TARGET.read_text(encoding="utf-8").splitlines())
    assert len(data.train) + len(data.valid) == words + lines
    assert data.train.grams.shape[1] == 2 * 2 + 1 + 3
    assert len(data.vocabulary.target) == 504 and len(data.vocabulary.source) == 403
    assert (data.train.targets() < len(data.vocabulary.target)).all()  # outputs are target words only
    assert (data.train.contexts()[:, :5] >= len(data.vocabulary.target)).all()  # the window holds source ids


def test_a_pair_without_a_link_makes_no_examples_though_its_end_is_linked():
    voc = vocabulary("a b", "x y")
    assert len(examples([(["a", "b"], ["x", "y"], [[], []])], voc, window=1, order=2)) == 0
    assert len(examples([(["a", "b"], ["x", "y"], [[], [1]])], voc, window=1, order=2)) == 3


@pytest.mark.parametrize("linked", [0, 300])
def test_an_alignment_where_most_pairs_have_no_link_is_refused_naming_it(tmp_path, linked):
    """An alignment of empty lines trained as well as the real one: every </s> was linked before the "no link"
    test, so that no pair was ever skipped."""
    lines = ALIGNMENT.read_text(encoding="utf-8").splitlines()
    sparse = tmp_path / "sparse.align"
    sparse.write_text("".join((line if i < linked else "") + "\n" for i, line in enumerate(lines)), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"sparse.align: {linked} of the 2000 sentence pairs have an alignment link"):
        load_joint_data(str(SOURCE), str(TARGET), str(sparse), window=1, order=2, target_size=50, source_size=50)


def test_training_and_perplexity_refuse_an_alignment_of_empty_lines(trained, tmp_path):
    empty = tmp_path / "empty.align"
    empty.write_text("\n" * 2000, encoding="utf-8")
    run = tmp_path / "run"
    result = CliRunner().invoke(main, ["bilm", "train", str(SOURCE), str(TARGET), str(empty), "-o", str(run), *TINY])
    assert result.exit_code == 1 and f"{empty}: 0 of the 2000 sentence pairs have an alignment link" in result.output
    assert not run.exists()
    measured = CliRunner().invoke(main, ["perplexity", "-m", trained, str(SOURCE), str(TARGET), str(empty)])
    assert measured.exit_code == 1 and f"{empty}: 0 of the 2000" in measured.output


def test_a_real_alignment_has_a_link_in_every_pair(tmp_path):
    """The whole Tatoeba system's grow-diag-final-and alignment, where present: none of its first 20,000 pairs is
    skipped; the same corpus with empty alignment lines is refused."""
    folder = shared_file("tatoeba-moses-en-fr/train.align.gdfa.gz").parent
    corpus = [str(folder / name) for name in ("train.tok.en.gz", "train.tok.fr.gz", "train.align.gdfa.gz")]
    with aligned_sentences(*corpus, limit=20000) as pairs:
        assert sum(1 for _ in pairs) == 20000
    (tmp_path / "empty.align").write_text("\n" * 2000, encoding="utf-8")
    with pytest.raises(ValueError, match="empty.align: 0 of the 2000 sentence pairs"):
        with aligned_sentences(*corpus[:2], str(tmp_path / "empty.align"), limit=2000) as pairs:
            list(pairs)


# -- training and the export for Moses -------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("bilm")
    result = CliRunner().invoke(main, ["bilm", "train", str(SOURCE), str(TARGET), str(ALIGNMENT), "-o",
                                       str(folder / "run"), *TINY])
    assert result.exit_code == 0, result.output
    assert "validation perplexity" in result.output
    return str(folder / "run" / "best.pt")


def test_training_beats_the_unigram_model_and_stays_self_normalised(trained):
    model = load_joint(trained)
    assert model.info["valid_ppl"] < model.info["unigram_ppl"]
    assert abs(model.info["log_z_mean"]) < 0.5
    assert model.info["validation"] == {"share": 0.05}  # its own pairs, never a --valid file
    assert (model.order, model.source_window) == (3, 2)
    assert model.network.config.order == 2 * 2 + 1 + 3


def test_the_export_is_what_bilingual_nplm_reads(trained, tmp_path):
    out = tmp_path / "bilm.nplm"
    result = CliRunner().invoke(main, ["bilm", "export", "-m", trained, "-o", str(out)])
    assert result.exit_code == 0, result.output
    model = load_joint(trained)
    assert (tmp_path / "bilm.nplm.target").read_text().split() == list(model.vocabulary.target)
    assert (tmp_path / "bilm.nplm.source").read_text().split() == list(model.vocabulary.source)
    assert (tmp_path / "bilm.nplm.target").read_text().splitlines()[0] == "<unk>"
    head = out.read_text().split("\n\n")[0].splitlines()
    assert f"ngram_size {2 * 2 + 1 + 3}" in head and "num_hidden 0" in head
    assert f"input_vocab_size {model.vocabulary.input_size}" in head
    assert f"output_vocab_size {len(model.vocabulary.target)}" in head
    network = read_nplm(out.open(encoding="utf-8"))
    assert list(network.output_words) == list(model.vocabulary.target)
    assert list(network.input_words) == [*model.vocabulary.target, *model.vocabulary.source]
    np.testing.assert_allclose(network.input_embeddings, model.network.embed.weight.double().detach().numpy(),
                               rtol=1e-8)
    np.testing.assert_allclose(network.output_biases, model.network.output.bias.double().detach().numpy(), rtol=1e-8)
    assert read_joint_export(str(out))[:2] == (3, 2)
    assert json.loads((tmp_path / "bilm.nplm.json").read_text())["source_vocab"] == "bilm.nplm.source"
    again = CliRunner().invoke(main, ["bilm", "export", "-m", trained, "-o", str(out)])
    assert again.exit_code == 1 and f"{out} exists" in again.output


def test_moses_ini_adds_the_bilingual_nplm_line_and_its_weight(trained, tmp_path):
    out = tmp_path / "bilm.nplm"
    assert CliRunner().invoke(main, ["bilm", "export", "-m", trained, "-o", str(out)]).exit_code == 0
    ini = (DATA / "moses" / "tatoeba-en-fr.moses.ini").read_text(encoding="utf-8")
    text, line = with_bilingual_lm(ini, "moses.ini", str(out), 0.1, absolute=True)
    added = [row for row in text.splitlines() if row not in ini.splitlines()]
    assert added == [f"BilingualNPLM name=BilingualNPLM0 order=3 source_window=2 path={out} source_vocab={out}.source "
                     f"target_vocab={out}.target", "BilingualNPLM0= 0.1"]
    result = CliRunner().invoke(main, ["moses-ini", str(DATA / "moses" / "tatoeba-en-fr.moses.ini"), "--bilm", str(out),
                                       "--absolute-paths", "-o", str(tmp_path / "moses.ini")])
    assert result.exit_code == 0, result.output
    assert "BilingualNPLM0= 0.1" in (tmp_path / "moses.ini").read_text().splitlines()
    (tmp_path / "lonely.nplm").write_bytes(out.read_bytes())
    with pytest.raises(ValueError, match="no .*lonely.nplm.json beside it"):
        with_bilingual_lm(ini, "moses.ini", str(tmp_path / "lonely.nplm"), 0.1, absolute=True)


def test_two_hidden_layers_are_exported_as_nplms_two_layer_form(tmp_path):
    run = tmp_path / "two"
    args = ["bilm", "train", str(SOURCE), str(TARGET), str(ALIGNMENT), "-o", str(run), "--preset", "small",
            "--vocab-size", "100", "--embed-dim", "4", "--hidden", "16,8", "--max-updates", "2", "--valid-every", "2",
            "--noise-samples", "5", "-q"]
    assert CliRunner().invoke(main, args).exit_code == 0
    result = CliRunner().invoke(main, ["bilm", "export", "-m", str(run / "best.pt"), "-o", str(tmp_path / "b.nplm")])
    assert result.exit_code == 0, result.output
    network = read_nplm((tmp_path / "b.nplm").open(encoding="utf-8"))
    model = load_joint(str(run / "best.pt"))
    assert [len(biases) for _, biases in network.hidden] == [16, 8]
    for (weights, biases), layer in zip(network.hidden, model.network.hidden):
        np.testing.assert_allclose(weights, layer.weight.detach().double().numpy(), rtol=1e-8)
        np.testing.assert_allclose(biases, layer.bias.detach().double().numpy(), rtol=1e-8)
    assert "num_hidden 16\noutput_embedding_dimension 8\n" in (tmp_path / "b.nplm").read_text(encoding="utf-8")


def test_perplexity_measures_a_held_out_aligned_corpus(trained):
    result = CliRunner().invoke(main, ["perplexity", "-m", trained, str(SOURCE), str(TARGET), str(ALIGNMENT)])
    assert result.exit_code == 0, result.output
    lines = TARGET.read_text(encoding="utf-8").splitlines()
    assert f"{sum(len(line.split()) for line in lines) + len(lines)} tokens (words and </s>)" in result.output
    perplexity = float(result.output.split("perplexity ")[1].split()[0])
    assert 1 < perplexity < 300 and "log Z" in result.output  # better than uniform over its 300-word shortlist
    wrong = CliRunner().invoke(main, ["perplexity", "-m", trained, str(SOURCE), str(TARGET)])
    assert wrong.exit_code == 2 and "SRC TRG ALIGNMENT" in wrong.output


# -- scores as Moses computes them -----------------------------------------------------------------


def test_inside_a_phrase_the_affiliation_does_not_look_into_the_next_one():
    # target word 1 is unaligned; the sentence's nearest linked word is 2 (right), but 2 is another phrase
    assert translation_affiliations(3, 3, "0-0 2-2") == [0, 2, 2]
    assert translation_affiliations(3, 3, "0-0 2-2", "0-1=0-1 2=2") == [0, 0, 2]
    with pytest.raises(ValueError, match="no alignment link"):
        translation_affiliations(3, 3, "0-0", "0-1=0-1 2=2")


def test_sentence_scores_are_the_networks_sums_and_moses_floor(trained):
    model = load_joint(trained)
    translation = aligned("i &apos;m late .", "je suis en retard .", "0-0 1-1 2-3 3-4", "0-1=0-1 2=2-3 3=4")
    assert list(translation.affiliated) == [0, 1, 2, 2, 3]
    voc = model.vocabulary
    src = voc.source_ids(["<s>", "<s>", "i", "&apos;m", "late", ".", "</s>", "</s>"])
    history = voc.target_ids(["<s>", "<s>", "je", "suis", "en", "retard", "."])
    rows = []
    for i, centre in enumerate(translation.affiliated):
        rows.append(src[centre:centre + 5] + history[i:i + 3])
    grams = torch.tensor(rows)
    with torch.no_grad():
        scores = model.network(grams[:, :-1]).double()
    exact = torch.log_softmax(scores, 1).gather(1, grams[:, -1:]).sum().item()
    raw = scores.gather(1, grams[:, -1:]).clamp(min=-100).sum().item()
    normalized, unnormalized = sentence_scores(model, [translation]), sentence_scores(model, [translation], False)
    assert normalized[0] == pytest.approx(exact, abs=1e-4)  # float32 network, float64 sums
    assert unnormalized[0] == pytest.approx(raw, abs=1e-4)
    empty = aligned("i", "", "")
    assert sentence_scores(model, [empty, translation, empty]) == pytest.approx([0.0, exact, 0.0], abs=1e-4)


# -- real Moses ------------------------------------------------------------------------------------


@pytest.mark.parametrize("heap", HEAPS)
def test_moses_bilingual_nplm_values_are_our_scores(tmp_path, heap):
    """A real Moses decodes with the exported joint model; each hypothesis' BilingualNPLM0= is our raw score of it,
    computed from the hypothesis' segmentation and word alignment in the n-best list. Random weights (std 0.3)
    over every word of the training slice, so that each input word moves the score. Whatever new allocations
    hold (MALLOC_PERTURB_): an unfixed NPLM misreads a one-hidden-layer file where they are not zeros, as in
    Moses with a KenLM loaded first."""
    from scoring_helpers import dev5_moses_ini, save_tiny_joint_model
    moses = built_program("moses")
    model = save_tiny_joint_model(str(tmp_path / "bilm.pt"), order=4, source_window=2, words=5000, std=0.3)
    out = tmp_path / "bilm.nplm"
    assert CliRunner().invoke(main, ["bilm", "export", "-m", model, "-o", str(out)]).exit_code == 0
    base = dev5_moses_ini()
    text, _ = with_bilingual_lm(base, "moses.ini", str(out), 0.5, absolute=True)
    (tmp_path / "moses.ini").write_text(text, encoding="utf-8")
    sources = (DATA / "nbest" / "tatoeba.dev30.tok.en").read_text(encoding="utf-8").splitlines()
    (tmp_path / "in.en").write_text("\n".join(sources) + "\n", encoding="utf-8")
    done = subprocess.run([moses, "-f", str(tmp_path / "moses.ini"), "-input-file", str(tmp_path / "in.en"),
                           "-n-best-list", str(tmp_path / "nbest"), "50", "-include-segmentation-in-n-best",
                           "-print-alignment-info-in-n-best", "-threads", "1"], capture_output=True, text=True,
                          env={**os.environ, "MALLOC_PERTURB_": heap})
    if "BilingualNPLM" in done.stderr and done.returncode != 0:
        pytest.skip(f"this Moses was built without NPLM: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr[-2000:]
    entries = list(read_nbest(str(tmp_path / "nbest")))
    assert len(entries) > 20
    theirs = [dict(entry.features)["BilingualNPLM0"][0] for entry in entries]
    translations = [aligned(sources[e.sentence_id], e.hypothesis, e.fields[5], e.fields[4]) for e in entries]
    ours = sentence_scores(load_joint(model), translations, normalized=False)
    np.testing.assert_allclose(theirs, ours, rtol=1e-5, atol=1e-3,  # Moses prints 6 significant digits
                               err_msg="this Moses' NPLM lacks its fix: run moses_integration/fix-nplm.sh")
    # the affiliation searched over the sentence (as training's extract.py does) is not what the decoder does
    over_sentence = sentence_scores(load_joint(model), [aligned(sources[e.sentence_id], e.hypothesis, e.fields[5])
                                                                for e in entries], normalized=False)
    assert np.abs(np.array(theirs) - over_sentence).max() > 1e-2


def test_the_nplm_text_round_trips(trained):
    network = joint_network(load_joint(trained))
    text = io.StringIO()
    write_nplm(text, network)
    again = read_nplm(io.StringIO(text.getvalue()))
    assert again.order == network.order and list(again.input_words) == list(network.input_words)
    np.testing.assert_allclose(again.output_weights, network.output_weights, rtol=1e-8)


def test_joint_vocabulary_ranks_by_count_then_word():
    from collections import Counter
    voc = joint_vocabulary(Counter({"b": 2, "a": 2, "c": 5, "<s>": 9}), Counter({"x": 1}), 2, 5)
    assert voc.target == ("<unk>", "<null>", "<s>", "</s>", "c", "a")
    assert voc.source == ("<unk>", "<s>", "</s>", "x")


def test_nbest_refuses_a_list_without_word_alignments(tmp_path):
    from scoring_helpers import save_tiny_joint_model
    model = save_tiny_joint_model(str(tmp_path / "bilm.pt"))
    nbest = DATA / "nbest" / "tatoeba.dev30.untuned.100best.gz"  # written without -print-alignment-info-in-n-best
    result = CliRunner().invoke(main, ["nbest", str(nbest), "--source", str(DATA / "nbest" / "tatoeba.dev30.tok.en"),
                                       "--bilm", model, "-o", str(tmp_path / "out.gz")])
    assert result.exit_code == 1 and "-print-alignment-info-in-n-best" in result.output
    assert not (tmp_path / "out.gz").exists()


def test_nbest_adds_the_joint_models_score_from_the_lists_alignment_fields(trained, tmp_path):
    """The bilm feature reads Moses' segmentation and word alignment fields (-include-segmentation-in-n-best,
    -print-alignment-info-in-n-best); every other byte of each line is kept."""
    lines = ["0 ||| je suis en retard . ||| LM0= -12.5 WordPenalty0= -5 ||| -3.25 ||| 0-1=0-1 2=2-3 3=4 ||| "
             "0-0 1-1 2-3 3-4 \n",
             "0 ||| je suis tard . ||| LM0= -14.5 WordPenalty0= -4 ||| -4.5 ||| 0-1=0-1 2-3=2-3 ||| 0-0 1-1 2-2 3-3 \n",
             "1 ||| bonjour ||| LM0= -3.5 WordPenalty0= -1 ||| -1.5 ||| 0=0 ||| 0-0 \n"]
    (tmp_path / "list").write_text("".join(lines), encoding="utf-8")
    (tmp_path / "source").write_text("i &apos;m late .\nhello\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["nbest", str(tmp_path / "list"), "--source", str(tmp_path / "source"),
                                       "--bilm", trained, "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    out = (tmp_path / "out").read_text(encoding="utf-8").splitlines(True)
    model = load_joint(trained)
    expected = sentence_scores(model, [aligned("i &apos;m late .", "je suis en retard .", "0-0 1-1 2-3 3-4",
                                               "0-1=0-1 2=2-3 3=4"),
                                       aligned("i &apos;m late .", "je suis tard .", "0-0 1-1 2-2 3-3",
                                               "0-1=0-1 2-3=2-3"),
                                       aligned("hello", "bonjour", "0-0", "0=0")])
    for line, original, value in zip(out, lines, expected):
        fields = line.split("|||")
        assert float(fields[2].split("BILM0=")[1]) == pytest.approx(value, abs=1e-4)
        assert [f for i, f in enumerate(fields) if i != 2] == [f for i, f in enumerate(original.split("|||")) if i != 2]


# -- misuse that would have gone through ---------------------------------------------------------


@pytest.mark.parametrize("damage", ["missing", "swapped", "another export's"])
def test_moses_ini_refuses_vocabulary_files_that_are_not_the_models(tmp_path, damage):
    """BilingualNPLM reads the vocabulary files through an unchecked stream: wrong files would give wrong ids."""
    from scoring_helpers import save_tiny_joint_model
    out, other = tmp_path / "bilm.nplm", tmp_path / "other.nplm"
    for model, nplm in ((save_tiny_joint_model(str(tmp_path / "a.pt")), out),
                        (save_tiny_joint_model(str(tmp_path / "b.pt"), seed=1, words=30), other)):
        assert CliRunner().invoke(main, ["bilm", "export", "-m", model, "-o", str(nplm)]).exit_code == 0
    source, target = tmp_path / "bilm.nplm.source", tmp_path / "bilm.nplm.target"
    if damage == "missing":
        source.unlink()
        named = source
    elif damage == "swapped":
        words = source.read_bytes()
        source.write_bytes(target.read_bytes())
        target.write_bytes(words)
        named = target
    else:
        source.write_bytes((tmp_path / "other.nplm.source").read_bytes())
        named = source
    result = CliRunner().invoke(main, ["moses-ini", str(DATA / "moses" / "tatoeba-en-fr.moses.ini"), "--bilm", str(out),
                                       "-o", str(tmp_path / "moses.ini")])
    assert result.exit_code == 1 and f"Error: {named}: " in result.output, result.output
    assert ("swapped" in result.output) == (damage == "swapped")
    assert not (tmp_path / "moses.ini").exists()


def test_an_nbest_hypothesis_whose_alignment_does_not_fit_is_named_by_its_line(tmp_path):
    from scoring_helpers import save_tiny_joint_model
    model = save_tiny_joint_model(str(tmp_path / "bilm.pt"))
    lines = ["0 ||| je suis tard . ||| LM0= -14.5 ||| -4.5 ||| 0-1=0-1 2-3=2-3 ||| 0-0 1-1 2-2 3-3 \n",
             "1 ||| bonjour ||| LM0= -3.5 ||| -1.5 ||| 0=0 ||| 0-0 9-9 \n"]
    (tmp_path / "list").write_text("".join(lines), encoding="utf-8")
    (tmp_path / "source").write_text("i am late .\nhello\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["nbest", str(tmp_path / "list"), "--source", str(tmp_path / "source"),
                                       "--bilm", model, "-o", str(tmp_path / "out")])
    assert result.exit_code == 1 and f"Error: {tmp_path / 'list'}:2: link 9-9 is outside" in result.output
    assert not (tmp_path / "out").exists()


def test_windows_wider_than_moses_n_grams_are_refused_by_their_options(tmp_path):
    run = tmp_path / "run"
    result = CliRunner().invoke(main, ["bilm", "train", str(SOURCE), str(TARGET), str(ALIGNMENT), "-o", str(run),
                                       "--order", "10", "--source-window", "10", "-q"])
    assert result.exit_code == 1 and "order 10 and source window 10 make n-grams of 31 words" in result.output
    assert "--order or --source-window" in result.output and not run.exists()


@pytest.mark.parametrize("restart", [(), ("--restart",)], ids=["resume", "restart"])
def test_a_run_folder_of_another_family_is_refused_naming_it(tmp_path, restart):
    """`--restart`, which the refusal to resume advised, would have replaced the other model's best.pt."""
    from scoring_helpers import save_tiny_model
    run = tmp_path / "run"
    run.mkdir()
    best = save_tiny_model(str(run / "best.pt"))
    kept = (run / "best.pt").read_bytes()
    result = CliRunner().invoke(main, ["bilm", "train", str(SOURCE), str(TARGET), str(ALIGNMENT), "-o", str(run),
                                       *TINY, *restart])
    assert result.exit_code == 1 and f"{run} holds an RNN Encoder-Decoder" in result.output, result.output
    assert "this run trains a joint model" in result.output and (run / "best.pt").read_bytes() == kept
    assert sorted(path.name for path in run.iterdir()) == [best.rsplit("/", 1)[1]]
