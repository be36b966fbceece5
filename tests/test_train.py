"""Tests of mosesrnn.train and the `mosesrnn train` command, on tiny models and real data."""
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from mosesrnn.cli import main
from mosesrnn.cli.common import parse_duration
from mosesrnn.encdec.data import PairSet, load_table
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.encdec.scoring import evaluate
from mosesrnn.encdec.task import EncoderDecoderTrainConfig, train_encoder_decoder, unigram_baseline

DATA = os.path.join(os.path.dirname(__file__), "data")
TABLE = os.path.join(DATA, "tatoeba.en-fr.3k.gz")
CORPUS = (os.path.join(DATA, "tatoeba.dev400.en.gz"), os.path.join(DATA, "tatoeba.dev400.fr"))
TINY = dict(embed_dim=16, hidden_dim=32, maxout_units=16, output_rank=16)
TINY_OPTIONS = ["--embed-dim", "16", "--hidden-dim", "32", "--maxout-units", "16", "--output-rank", "16"]


def tiny(output_dir, **changes) -> EncoderDecoderTrainConfig:
    """A config that trains a tiny model on the 3k-line table in well under a second."""
    values = dict(output_dir=str(output_dir), table=TABLE, valid_share=0.1, valid_every=10,
                  model_overrides=TINY, quiet=True, threads=1)
    return EncoderDecoderTrainConfig(**{**values, **changes})


def weights(path):
    return load_encoder_decoder(path).model.state_dict()


def assert_same_weights(a, b):
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-6, msg=name)


@pytest.mark.parametrize("text, seconds", [("600", 600), ("90s", 90), ("10m", 600), ("1h30m", 5400),
                                           ("1.5h", 5400)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten minutes", "10x", "m"])
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_unigram_perplexity_by_hand():
    # Vocabulary of 5 ids (PAD, UNK, EOS, 3, 4). Training targets: [3], [3, 4] -> counts UNK 0,
    # EOS 2, 3: 2, 4: 1; add-one over 4 ids: p = (c + 1) / (5 + 4).
    train_pairs = PairSet(np.array([3, 3], dtype=np.int32), np.array([0, 1, 2]),
                          np.array([3, 3, 4], dtype=np.int32), np.array([0, 1, 3]))
    valid = PairSet(np.array([3], dtype=np.int32), np.array([0, 1]),
                    np.array([4], dtype=np.int32), np.array([0, 1]))
    expected = math.exp(-(math.log(2 / 9) + math.log(3 / 9)) / 2)  # tokens: 4, EOS
    assert unigram_baseline(train_pairs, valid, 5) == pytest.approx(expected, rel=1e-12)


def test_writes_checkpoints_log_and_plot(tmp_path):
    result = train_encoder_decoder(tiny(tmp_path, max_updates=25))
    assert (result.updates, result.stop_reason) == (25, "max_updates")
    for name in ("best.pt", "last.pt", "state.pt", "train.jsonl", "loss.png", "vocab/source.vocab"):
        assert os.path.exists(tmp_path / name), name
    best, last = load_encoder_decoder(result.best_path), load_encoder_decoder(result.last_path)
    assert last.info["updates"] == 25 and best.info["updates"] in (10, 20, 25)
    assert best.info["valid_ppl"] == pytest.approx(result.best_valid_ppl)
    assert best.info["unigram_ppl"] == pytest.approx(result.unigram_ppl)
    assert best.info["preset"] == "small" and "unique pairs" in best.info["data"]
    assert best.info["validation"] == {"share": 0.1}  # what `tune --select-on half` checks
    records = [json.loads(line) for line in open(tmp_path / "train.jsonl")]
    assert [r["event"] for r in records] == ["start", "valid", "valid", "valid", "end"]
    assert [r["update"] for r in records if r["event"] == "valid"] == [10, 20, 25]
    assert {"train_nll", "valid_nll", "valid_ppl", "pairs", "seconds"} <= records[1].keys()


def test_resume_is_identical_to_a_straight_run(tmp_path):
    # a constant rate: a decay runs to each invocation's --max-updates, which the resumption raises here
    straight = train_encoder_decoder(tiny(tmp_path / "straight", max_updates=40, lr_decay="none"))
    train_encoder_decoder(tiny(tmp_path / "resumed", max_updates=20, lr_decay="none"))
    resumed = train_encoder_decoder(tiny(tmp_path / "resumed", max_updates=40, lr_decay="none"))
    assert resumed.resumed and resumed.updates == 40
    assert_same_weights(weights(straight.last_path), weights(resumed.last_path))
    assert resumed.best_valid_nll == pytest.approx(straight.best_valid_nll, abs=1e-6)


def test_the_small_recipe_warms_up_decays_buckets_and_starts_at_the_unigram_bias(tmp_path):
    config = tiny(tmp_path, max_updates=20)
    assert [config.setting(name) for name in ("optimizer", "learning_rate", "warmup", "lr_decay", "bucket_window",
                                              "output_bias")] == ["adam", 1e-2, 300, "linear", 20, "unigram"]
    paper = tiny(tmp_path, preset="paper")
    assert [paper.setting(name) for name in ("optimizer", "learning_rate", "warmup", "lr_decay", "bucket_window",
                                             "output_bias")] == ["adadelta", 1.0, 0, "none", 0, "zero"]
    other = tiny(tmp_path, optimizer="adadelta")  # the recipe holds for its own optimizer only
    assert (other.setting("warmup"), other.setting("lr_decay"), other.setting("learning_rate")) == (0, "none", 1.0)
    train_encoder_decoder(tiny(tmp_path, max_updates=20, warmup=5))
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    assert state["optimizer"]["param_groups"][0]["lr"] == pytest.approx(1e-2 * (1 - 19 / 20))  # the last update's
    records = [json.loads(line) for line in open(tmp_path / "train.jsonl")]
    assert records[0]["recipe"]["bucket_window"] == 20


def test_the_schedule_by_updates():
    from mosesrnn.train.loop import Loop, LoopSettings
    loop = Loop.__new__(Loop)
    loop.settings, loop.started = LoopSettings(warmup=4, decay="linear", min_lr=0.1, max_updates=10), None
    factors = []
    for loop.updates in range(10):
        factors.append(loop.rate_factor())
    assert factors == pytest.approx([(u + 1) / 4 * (0.1 + 0.9 * (1 - u / 10)) if u < 4 else 0.1 + 0.9 * (1 - u / 10)
                                     for u in range(10)])
    loop.settings = LoopSettings(decay="cosine", max_updates=10)
    loop.updates = 5
    assert loop.rate_factor() == pytest.approx(0.5)
    loop.settings = LoopSettings(decay="linear")  # no end to decay towards: constant
    assert loop.rate_factor() == 1.0


def test_interrupt_saves_and_resumes_exactly(tmp_path):
    interrupted = train_encoder_decoder(tiny(tmp_path / "a", max_updates=30), should_stop=lambda updates: updates >= 13)
    assert (interrupted.stop_reason, interrupted.updates) == ("interrupted", 13)
    assert load_encoder_decoder(interrupted.last_path).info["updates"] == 13
    assert torch.load(tmp_path / "a" / "state.pt", weights_only=True)["updates"] == 13
    resumed = train_encoder_decoder(tiny(tmp_path / "a", max_updates=30, resume="require"))
    straight = train_encoder_decoder(tiny(tmp_path / "b", max_updates=30))
    assert_same_weights(weights(straight.last_path), weights(resumed.last_path))


def test_sigint_stops_a_running_training_and_saves(tmp_path):
    script = ("import logging, sys; from mosesrnn.encdec.task import EncoderDecoderTrainConfig, train_encoder_decoder; "
              f"r = train_encoder_decoder(EncoderDecoderTrainConfig(output_dir={str(tmp_path)!r}, table={TABLE!r}, "
              f"valid_share=0.1, "
              f"valid_every=5, model_overrides={TINY!r}, quiet=True, threads=1)); "
              "print(r.stop_reason, r.updates)")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not os.path.exists(tmp_path / "state.pt") and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=60)
    reason, updates = out.split()
    assert process.returncode == 0 and reason == "interrupted"
    assert torch.load(tmp_path / "state.pt", weights_only=True)["updates"] == int(updates)
    assert load_encoder_decoder(str(tmp_path / "last.pt")).info["updates"] == int(updates)


def test_resume_refuses_a_different_setup(tmp_path):
    train_encoder_decoder(tiny(tmp_path, max_updates=5))
    with pytest.raises(ValueError, match="batch_size"):
        train_encoder_decoder(tiny(tmp_path, max_updates=10, batch_size=32))
    with pytest.raises(FileNotFoundError):
        train_encoder_decoder(tiny(tmp_path / "empty", resume="require"))


def test_held_out_true_pairs_score_above_shuffled_pairs(tmp_path):
    """p(y | x) of a held-out pair beats p(y | x') with the input phrase x' of another pair:
    the same target, so its length and frequency cannot decide; only the source can."""
    config = tiny(tmp_path, max_updates=800, valid_every=800, valid_share=0.2, batch_size=32,
                  model_overrides=dict(embed_dim=32, hidden_dim=64, maxout_units=32, output_rank=32))
    result = train_encoder_decoder(config)
    trained = load_encoder_decoder(result.best_path)
    valid = load_table(TABLE, vocabularies=trained.vocabularies, valid_share=0.2).valid
    moved = valid.subset(np.roll(np.arange(len(valid)), len(valid) // 2))  # other input phrases
    shuffled = PairSet(moved.src_ids, moved.src_offsets, valid.trg_ids, valid.trg_offsets)
    index = np.arange(len(valid))
    with torch.no_grad():
        true = trained.model.log_prob(*valid.batch(index))  # (B,)
        other = trained.model.log_prob(*shuffled.batch(index))  # (B,)
    assert true.mean() > other.mean()
    assert (true > other).float().mean() >= 0.7
    assert result.best_valid_ppl < result.unigram_ppl


def test_evaluate_does_not_depend_on_batch_size(tmp_path):
    result = train_encoder_decoder(tiny(tmp_path, max_updates=10))
    model = load_encoder_decoder(result.last_path).model
    valid = load_table(TABLE, valid_share=0.1).valid
    expected = evaluate(model, valid, batch_size=500)
    assert evaluate(model, valid, batch_size=7) == pytest.approx(expected, rel=1e-5)


def test_cli_trains_end_to_end(tmp_path):
    out = tmp_path / "model"
    result = CliRunner().invoke(main, ["train", TABLE, "-o", str(out), "--max-updates", "20",
                                       "--valid-every", "10",
                                       "--valid-share", "0.1", "--quiet", *TINY_OPTIONS])
    assert result.exit_code == 0, result.output
    assert "validation perplexity" in result.output and "unigram" in result.output
    assert load_encoder_decoder(str(out / "best.pt")).direction == "source-to-target"


def test_cli_trains_on_a_corpus_in_reverse(tmp_path):
    out = tmp_path / "model"
    result = CliRunner().invoke(main, ["train", "--corpus", *CORPUS, "-o", str(out), "--max-updates", "5",
                                       "--direction", "target-to-source", "--quiet", *TINY_OPTIONS])
    assert result.exit_code == 0, result.output
    trained = load_encoder_decoder(str(out / "last.pt"))
    assert trained.direction == "target-to-source" and "corpus" in trained.info["data"]
    assert trained.model.config.src_vocab_size == len(trained.vocabularies.target)


@pytest.mark.parametrize("make_args, message", [
    (lambda d: [str(d / "missing.gz")], "no such file"),
    (lambda d: [_malformed(d)], "bad.txt:2"),
    (lambda d: [], "give a phrase TABLE or --corpus SRC TRG"),
    (lambda d: [TABLE, "--max-time", "soon"], "not a duration"),
])
def test_cli_reports_bad_input(tmp_path, make_args, message):
    result = CliRunner().invoke(main, ["train", *make_args(tmp_path), "-o", str(tmp_path / "m"), "--quiet"])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def _malformed(directory):
    path = directory / "bad.txt"
    path.write_text("a ||| x ||| 0.5\nb ||| y\n", encoding="utf-8")
    return str(path)
