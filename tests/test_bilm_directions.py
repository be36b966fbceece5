"""The joint model's other directions (Devlin et al. 2014, Sec. 4): target-to-source and right-to-left are the
forward data path on a reoriented sentence pair. The n-grams of each direction are written out by hand for one
3-word/4-word pair; the model file records the orientation; the scores are the sums over those n-grams."""
from __future__ import annotations

import collections

import pytest
from click.testing import CliRunner
from conftest import DATA

from mosesrnn.bilm.data import JointVocabulary, aligned_sentences, examples, joint_vocabulary
from mosesrnn.bilm.model_file import load_joint
from mosesrnn.bilm.orientation import JOINT_FEATURES, Orientation
from mosesrnn.cli import main

SOURCE, TARGET, ALIGNMENT = (DATA / f"tatoeba.train2k.{suffix}" for suffix in ("tok.en", "tok.fr", "align"))

# One pair: source "a b c", target "w x y z", links a-w a-x c-z (y and b unaligned).
PAIR = ("a b c", "w x y z", "0-0 0-1 2-3")
# (window, history, predicted word) of each direction with source_window 1 and order 2, worked out by hand:
# the affiliation (the lower middle link, else the nearest linked neighbour, right first in reading order)
# applied to the pair as the model reads it; </s> closes the predicted side, affiliated with the window's end.
HAND = {
    # y: unaligned, its right neighbour z -> c
    "bilm": [("<s> a b", "<s>", "w"), ("<s> a b", "w", "x"), ("b c </s>", "x", "y"), ("b c </s>", "y", "z"),
             ("c </s> </s>", "z", "</s>")],
    # read z y x w: y's right neighbour is now x -> a
    "bilm-r2l": [("b c </s>", "<s>", "z"), ("<s> a b", "z", "y"), ("<s> a b", "y", "x"), ("<s> a b", "x", "w"),
                 ("c </s> </s>", "w", "</s>")],
    # source words predicted from target windows: a -> w x (lower middle: w); b unaligned, right neighbour c -> z
    "bilm-t2s": [("<s> w x", "<s>", "a"), ("y z </s>", "a", "b"), ("y z </s>", "b", "c"),
                 ("z </s> </s>", "c", "</s>")],
    # read c b a: b's right neighbour is now a -> w
    "bilm-t2s-r2l": [("y z </s>", "<s>", "c"), ("<s> w x", "c", "b"), ("<s> w x", "b", "a"),
                     ("z </s> </s>", "a", "</s>")],
}


def write_pair(folder) -> tuple[str, str, str]:
    paths = [folder / name for name in ("pair.src", "pair.trg", "pair.align")]
    for path, line in zip(paths, PAIR):
        path.write_text(line + "\n", encoding="utf-8")
    return tuple(map(str, paths))


def as_words(grams, vocabulary, window: int) -> list[tuple[str, str, str]]:
    """Each n-gram as (window words, history words, predicted word)."""
    def word(i: int) -> str:
        return vocabulary.target[i] if i < len(vocabulary.target) else vocabulary.source[i - len(vocabulary.target)]

    width = 2 * window + 1
    return [(" ".join(map(word, row[:width])), " ".join(map(word, row[width:-1])), word(row[-1]))
            for row in grams.tolist()]


@pytest.mark.parametrize("feature", list(HAND))
def test_each_direction_gives_the_hand_computed_n_grams(tmp_path, feature):
    orientation = JOINT_FEATURES[feature]
    with aligned_sentences(*write_pair(tmp_path), orientation=orientation) as pairs:
        pairs = list(pairs)
    predicted_words, window_words = ("a b c", "w x y z") if orientation.direction == "target-to-source" else \
        ("w x y z", "a b c")
    vocabulary = joint_vocabulary(collections.Counter(predicted_words.split()),
                                  collections.Counter(window_words.split()), 10, 10)
    assert as_words(examples(pairs, vocabulary, window=1, order=2).grams, vocabulary, 1) == HAND[feature]


def test_the_orientations_are_named_by_their_features():
    assert {name: (o.direction, o.right_to_left) for name, o in JOINT_FEATURES.items()} == {
        "bilm": ("source-to-target", False), "bilm-r2l": ("source-to-target", True),
        "bilm-t2s": ("target-to-source", False), "bilm-t2s-r2l": ("target-to-source", True)}
    assert Orientation.from_dict(None) == Orientation()  # a file written before the other directions
    with pytest.raises(ValueError, match="direction must be one of"):
        Orientation("left-to-right")


TINY = ["--preset", "small", "--vocab-size", "100", "--source-vocab-size", "100", "--embed-dim", "4", "--hidden", "8",
        "--max-updates", "2", "--valid-every", "2", "--valid-share", "0.05", "--batch-size", "32",
        "--noise-samples", "10", "--threads", "1", "-q"]


def test_training_records_the_orientation_and_export_refuses_all_but_the_forward_model(tmp_path):
    run = tmp_path / "run"
    result = CliRunner().invoke(main, ["bilm", "train", str(SOURCE), str(TARGET), str(ALIGNMENT), "-o", str(run),
                                       "--direction", "target-to-source", "--right-to-left", *TINY])
    assert result.exit_code == 0, result.output
    model = load_joint(str(run / "best.pt"))
    assert model.orientation == Orientation("target-to-source", True)
    assert model.info["direction"] == "target-to-source" and model.info["right_to_left"] is True
    english = set(SOURCE.read_text(encoding="utf-8").split())
    assert set(model.vocabulary.target[4:]) <= english  # the predicted list holds the source side's words
    exported = CliRunner().invoke(main, ["bilm", "export", "-m", str(run / "best.pt"), "-o", str(tmp_path / "x.nplm")])
    assert exported.exit_code == 1
    assert (f"Error: {run / 'best.pt'} is a target-to-source, right-to-left joint model: Moses' BilingualNPLM runs "
            f"only the source-to-target, left-to-right one in the decoder" in exported.output), exported.output
    assert not (tmp_path / "x.nplm").exists()
    resumed = CliRunner().invoke(main, ["bilm", "train", str(SOURCE), str(TARGET), str(ALIGNMENT), "-o", str(run),
                                        *TINY])
    assert resumed.exit_code == 1 and "the saved run is target-to-source, right-to-left" in resumed.output


def test_a_model_file_without_an_orientation_is_the_forward_model(tmp_path):
    import torch
    from scoring_helpers import save_tiny_joint_model
    path = save_tiny_joint_model(str(tmp_path / "old.pt"))
    contents = torch.load(path, weights_only=True)
    del contents["orientation"]
    torch.save(contents, path)
    assert load_joint(path).orientation == Orientation()


# -- scoring n-best hypotheses in each direction -------------------------------------------------------------

WORDS = "a b c w x y z".split()


def save_model(path, orientation: Orientation, seed: int = 0) -> str:
    """A joint model (source window 1, order 2) with random weights over all seven words on both sides."""
    from scoring_helpers import save_tiny_joint_model
    vocabulary = JointVocabulary(("<unk>", "<null>", "<s>", "</s>", *WORDS), ("<unk>", "<s>", "</s>", *WORDS))
    return save_tiny_joint_model(str(path), seed, order=2, source_window=1, std=0.5, feature=orientation.feature,
                                 vocabulary=vocabulary)


def hand_score(path: str, grams: list[tuple[str, str, str]]) -> float:
    """The sum of the network's log-probabilities over n-grams written as words."""
    import torch
    model = load_joint(path)
    voc = model.vocabulary
    rows = torch.tensor([voc.source_ids(window.split()) + voc.target_ids([history, word])
                         for window, history, word in grams])
    with torch.no_grad():
        return torch.log_softmax(model.network(rows[:, :-1]).double(), 1).gather(1, rows[:, -1:]).sum().item()


@pytest.mark.parametrize("feature", ["bilm-r2l", "bilm-t2s", "bilm-t2s-r2l"])
def test_the_feature_of_each_direction_is_the_sum_over_the_hand_computed_n_grams(tmp_path, feature):
    from mosesrnn.features.bilm import JointFeature
    from mosesrnn.formats.nbest import NbestError
    from mosesrnn.pipeline.nbest import NbestPair
    model = load_joint(save_model(tmp_path / "m.pt", JOINT_FEATURES[feature]))
    source, hypothesis, alignment = PAIR  # the hypothesis "w x y z" of the source "a b c", Moses' i-j links
    values = JointFeature(model).values([NbestPair(source, hypothesis, (" 0-0=0-3 ", f" {alignment} ")),
                                         NbestPair(source, "", ("0-0=0-3", ""))])
    assert values == pytest.approx([hand_score(str(tmp_path / "m.pt"), HAND[feature]), 0.0], abs=1e-5)
    with pytest.raises(NbestError, match="the list:7: the translation has no alignment link"):
        JointFeature(model).values([NbestPair(source, hypothesis, ("0-0=0-3", ""), "the list", 7)])


def test_perplexity_reads_the_held_out_corpus_as_the_model_predicts_it(tmp_path):
    from mosesrnn.bilm.scoring import corpus_stats
    model = save_model(tmp_path / "m.pt", JOINT_FEATURES["bilm-t2s-r2l"])
    stats = corpus_stats(load_joint(model), *write_pair(tmp_path))
    assert stats.tokens == 4  # c b a </s>
    assert stats.nll == pytest.approx(-hand_score(model, HAND["bilm-t2s-r2l"]) / 4, abs=1e-5)


# -- several joint models at once: one named feature each ----------------------------------------------------


def nbest_files(folder, alignment: str = PAIR[2]) -> tuple[str, str]:
    (folder / "list").write_text(f"0 ||| w x y z ||| LM0= -12.5 ||| -3.25 ||| 0-0=0-3 ||| {alignment} \n",
                                 encoding="utf-8")
    (folder / "source").write_text("a b c\n", encoding="utf-8")
    return str(folder / "list"), str(folder / "source")


def test_nbest_adds_one_moses_feature_per_joint_model(tmp_path):
    models = {feature: save_model(tmp_path / f"{feature}.pt", orientation, seed=i)
              for i, (feature, orientation) in enumerate(JOINT_FEATURES.items())}
    nbest, source = nbest_files(tmp_path)
    result = CliRunner().invoke(main, ["nbest", nbest, "--source", source, "-o", str(tmp_path / "out"),
                                       *(arg for feature, path in models.items() for arg in (f"--{feature}", path))])
    assert result.exit_code == 0, result.output
    fields = (tmp_path / "out").read_text(encoding="utf-8").split(" ||| ")
    names = fields[2].split()[2::2]
    assert names == ["BILM0=", "BILM_R2L0=", "BILM_T2S0=", "BILM_T2S_R2L0="]  # Moses' `name= value`, one each
    values = [float(value) for value in fields[2].split()[3::2]]
    # the forward feature follows the decoder (no </s>), the others the training n-grams
    expected = [hand_score(models["bilm"], HAND["bilm"][:-1])] + [hand_score(models[f], HAND[f])
                                                                   for f in ("bilm-r2l", "bilm-t2s", "bilm-t2s-r2l")]
    assert values == pytest.approx(expected, abs=1e-4)  # Moses' n-best lists hold 6 significant digits or more
    assert fields[:2] + fields[3:] == ["0", "w x y z", "-3.25", "0-0=0-3", f"{PAIR[2]} \n"]


def test_nbest_refuses_a_model_of_another_direction_before_any_work(tmp_path):
    forward = save_model(tmp_path / "forward.pt", Orientation())
    nbest, source = nbest_files(tmp_path)
    result = CliRunner().invoke(main, ["nbest", nbest, "--source", source, "--bilm-t2s", forward, "-o",
                                       str(tmp_path / "out")])
    assert result.exit_code == 1
    assert result.output == (f"Error: {forward} is a source-to-target, left-to-right joint model, but the bilm-t2s "
                             f"feature (--bilm-t2s) takes a target-to-source, left-to-right one: give it as --bilm\n")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("feature", list(JOINT_FEATURES))
def test_nbest_refuses_an_alignment_outside_the_pair_naming_its_line(tmp_path, feature):
    model = save_model(tmp_path / "m.pt", JOINT_FEATURES[feature])
    nbest, source = nbest_files(tmp_path, "0-0 0-1 3-3")  # the source has 3 words: positions 0-2
    result = CliRunner().invoke(main, ["nbest", nbest, "--source", source, f"--{feature}", model, "-o",
                                       str(tmp_path / "out")])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {nbest}:1: link 3-3 is outside the sentence pair (3 source and 4 "
                                    f"target words)") and result.output.count("\n") == 1, result.output
    assert not (tmp_path / "out").exists()
