"""Self-normalised training (``train --self-norm``) and scoring without the normaliser (``score --normalizer
skip``), on tiny models: the skipped path against the exact one, the refusals, and the penalty at work."""
import gzip
import json
import math
import os

import pytest
import torch
from click.testing import CliRunner
from scoring_helpers import save_tiny_model
from test_encoders import PAIRS
from test_model import batch, tiny_model
from test_train import TABLE, TINY_OPTIONS, tiny

from mosesrnn.cli import main
from mosesrnn.encdec.architectures import ARCHITECTURES
from mosesrnn.encdec.layers import lengths_mask
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.encdec.scoring import evaluate, evaluate_log_z
from mosesrnn.encdec.task import FAMILY, train_encoder_decoder
from mosesrnn.features.options import FeatureOptions
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.features.selection import select_features
from mosesrnn.formats.phrase_table import read_entries

#: A recipe that moves a tiny model within 80 updates: no warm-up, no decay, the softmax bias at 0 (so
#: log Z starts at log K, far from 0).
QUICK = dict(max_updates=80, valid_every=80, output_bias="zero", warmup=0, lr_decay="none", learning_rate=0.03)


def full_logits(model, src, src_len, trg, trg_len):
    """Every position's logits over the whole vocabulary, padded order, and the mask of the positions that
    have a softmax: (B, T, K), (B, T). C14: the decoder's equations run one padded step at a time (attention:
    its ``padded_readout``); the RCTMs:
    their recurrent LM's states (RCTM II's EOS position carries the Poisson length term instead)."""
    decoder, ctx = model.decoder, model.source_context(src, src_len)
    if hasattr(decoder, "padded_readout"):  # the attention decoder: its deep outputs in the padded order
        return decoder.logits(decoder.padded_readout(ctx, trg)), lengths_mask(trg_len, trg.size(1))
    if hasattr(decoder, "G_l"):
        mask = lengths_mask(trg_len, trg.size(1))
        e_prev = decoder.previous_embeddings(trg)
        x_proj, h, states = decoder.W(e_prev), decoder.initial_state(ctx), []
        for t in range(trg.size(1)):
            h = torch.where(mask[:, t, None], decoder.next_state(x_proj[:, t], h, ctx.gate_context), h)
            states.append(h)
        s = decoder.readout(torch.stack(states, 1), e_prev, ctx.output_context.unsqueeze(1))
        return decoder.logits(s), mask
    steps = trg_len - 1 if model.config.encoder == "rctm2" else trg_len
    return decoder.mask_logits(decoder.logits(decoder._states(ctx, trg, steps))), lengths_mask(steps, trg.size(1))


@pytest.mark.parametrize("encoder", list(ARCHITECTURES))
@torch.no_grad()
def test_skipping_the_normaliser_adds_exactly_the_log_normalisers(encoder):
    """score - exact log p == sum over the target's positions of log Z = log sum_j exp(logit_j), the logits
    taken over the whole vocabulary in the padded order (float64: to 1e-9)."""
    model = tiny_model(encoder, seed=3)
    src, src_len, trg, trg_len = batch(PAIRS)
    logits, mask = full_logits(model, src, src_len, trg, trg_len)
    log_z = logits.logsumexp(-1).masked_fill(~mask, 0.0)  # (B, T)
    raw = logits.gather(-1, trg.clamp(max=logits.size(-1) - 1).unsqueeze(-1)).squeeze(-1).masked_fill(~mask, 0.0)
    ctx = model.source_context(src, src_len)
    exact = model.score_log_prob(ctx, trg, trg_len)
    skipped = model.score_log_prob(ctx, trg, trg_len, normalizer="skip")
    torch.testing.assert_close(exact, model.log_prob(src, src_len, trg, trg_len), rtol=0, atol=1e-9)
    torch.testing.assert_close(skipped - exact, log_z.sum(1), rtol=0, atol=1e-9)
    assert (log_z.sum(1).abs() > 1)[mask.any(1)].all()  # the test can tell: the normalisers are far from 0 here
    length_term = exact - (raw - log_z).sum(1)  # RCTM II's log P(m | k); 0 for the others
    torch.testing.assert_close(skipped, raw.sum(1) + length_term, rtol=0, atol=1e-9)
    terms = model.decoder.sequence_terms(ctx, trg, trg_len)
    torch.testing.assert_close(terms.log_p, exact, rtol=0, atol=1e-9)
    torch.testing.assert_close(terms.log_z, log_z.sum(1), rtol=0, atol=1e-9)
    torch.testing.assert_close(terms.log_z_sq, log_z.square().sum(1), rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match="normalizer"):
        model.score_log_prob(ctx, trg, trg_len, normalizer="none")


@pytest.fixture(scope="module")
def self_normalised(tmp_path_factory):
    """A tiny model trained 80 updates with alpha = 1 (its log Z on the validation pairs near 0)."""
    folder = tmp_path_factory.mktemp("self-norm")
    return train_encoder_decoder(tiny(folder, self_norm=1.0, **QUICK)).best_path


@pytest.fixture(scope="module")
def not_self_normalised(tmp_path_factory):
    """The same training without the penalty (alpha = 0: the run as before the option)."""
    folder = tmp_path_factory.mktemp("plain")
    return train_encoder_decoder(tiny(folder, self_norm=0.0, **QUICK)).best_path


def _valid(path):
    """The validation pairs of the run whose model file is ``path``."""
    return FAMILY.load_data(tiny(os.path.dirname(path)), True, False).valid


def _log_z(path):
    return evaluate_log_z(load_encoder_decoder(path).model, _valid(path))


def test_the_penalty_pulls_log_z_to_0(self_normalised, not_self_normalised):
    with_penalty, without = _log_z(self_normalised), _log_z(not_self_normalised)
    assert without.log_z_mean > 3  # the bias starts at 0: log Z = log K, and the NLL alone leaves it there
    assert abs(with_penalty.log_z_mean) < 1 and with_penalty.log_z_std < 1
    assert with_penalty.log_z_mean ** 2 + with_penalty.log_z_std ** 2 < (without.log_z_mean ** 2) / 10
    assert with_penalty.perplexity < 2 * without.perplexity  # still a language model, not a constant


def test_self_normalised_training_records_log_z(self_normalised):
    trained = load_encoder_decoder(self_normalised)
    stats = _log_z(self_normalised)
    assert trained.info["self_norm"] == 1.0
    assert trained.info["log_z_mean"] == pytest.approx(stats.log_z_mean, abs=1e-6)
    assert trained.info["log_z_std"] == pytest.approx(stats.log_z_std, abs=1e-6)
    assert "(log Z)^2" in trained.info["loss"]
    # the validation's perplexity stays the exact one: the same as the padded evaluation's
    nll, ppl = evaluate(trained.model, _valid(self_normalised))
    assert (trained.info["valid_nll"], trained.info["valid_ppl"]) == pytest.approx((nll, ppl), rel=1e-5)
    log = [json.loads(line) for line in open(self_normalised.replace("best.pt", "train.jsonl"))]
    validations = [record for record in log if "log_z_mean" in record]
    assert validations and all("log_z_std" in record for record in validations)


def test_alpha_0_leaves_the_run_as_it_was(not_self_normalised):
    """--self-norm 0 is off: no penalty, no new keys in the model file, the config as without the option."""
    info = load_encoder_decoder(not_self_normalised).info
    assert not {"self_norm", "log_z_mean", "log_z_std"} & set(info)
    assert "(log Z)^2" not in info["loss"]
    assert tiny("x", self_norm=0.0).self_norm is None and tiny("x").self_norm is None
    with pytest.raises(ValueError, match="self_norm"):
        tiny("x", self_norm=-0.1)


def test_a_run_keeps_its_alpha_on_resume(tmp_path):
    train_encoder_decoder(tiny(tmp_path, max_updates=5, self_norm=0.5))
    with pytest.raises(ValueError, match="self_norm"):
        train_encoder_decoder(tiny(tmp_path, max_updates=10))


def test_the_feature_skips_the_normaliser_of_a_self_normalised_model(self_normalised):
    """The column's values: the exact log p + the sum of log Z (float32: 1e-4), the signature says so."""
    entries = list(read_entries(TABLE))[:300]
    trained = load_encoder_decoder(self_normalised)
    exact = RNNFeature(trained).values(entries)
    skipped = RNNFeature(trained, normalizer="skip").values(entries)
    int8 = RNNFeature(trained, normalizer="skip", dtype="int8")
    assert isinstance(int8.model.decoder.G_l, torch.nn.Linear)  # read by rows: not quantised
    assert not isinstance(int8.model.decoder.G_r, torch.nn.Linear)
    assert max(abs(a - b) for a, b in zip(int8.values(entries), skipped)) < 1.0
    scorer = RNNFeature(trained)
    src, trg = zip(*((trained.input_codec.ids(e.source), trained.output_codec.ids(e.target)) for e in entries))
    with torch.inference_mode():
        from mosesrnn.encdec.batching import pad
        src_ids, src_len = pad(list(src))
        trg_ids, trg_len = pad(list(trg), append_eos=True)
        ctx = scorer.model.source_context(src_ids, src_len)
        log_z = scorer.model.decoder.sequence_terms(ctx, trg_ids, trg_len).log_z
    for got, want, z in zip(skipped, exact, log_z.tolist()):
        assert got - want == pytest.approx(z, abs=1e-4)
    positions = sum(len(ids) + 1 for ids in trg)
    assert 0 < abs(sum(a - b for a, b in zip(skipped, exact))) / positions < 0.5  # log Z near 0, not 0
    options = FeatureOptions(model=self_normalised, features=("rnn",), normalizer="skip")
    assert select_features(options)[0].settings()["normalizer"] == "skip"


def test_score_skips_the_normaliser_and_says_so(tmp_path, self_normalised):
    runner = CliRunner()
    out = tmp_path / "skip.gz"
    result = runner.invoke(main, ["score", TABLE, "-m", self_normalised, "-o", str(out), "--normalizer", "skip",
                                  "--features", "rnn", "--quiet"])
    assert result.exit_code == 0, result.output
    sidecar = json.loads((tmp_path / "skip.gz.json").read_text())
    assert "normalizer=skip" in sidecar["signature"] and "normalizer=skip" in sidecar["features"][0]
    exact = tmp_path / "exact.gz"
    assert runner.invoke(main, ["score", TABLE, "-m", self_normalised, "-o", str(exact), "--features", "rnn",
                                "--quiet"]).exit_code == 0
    assert "normalizer=exact" in json.loads((tmp_path / "exact.gz.json").read_text())["signature"]
    with gzip.open(out, "rt") as skip_lines, gzip.open(exact, "rt") as exact_lines:
        pairs = list(zip(skip_lines, exact_lines))
    assert all(got.split("|||")[:2] == want.split("|||")[:2] for got, want in pairs)
    gaps = [abs(math.log(float(got.split("|||")[2].split()[-1])) - math.log(float(want.split("|||")[2].split()[-1])))
            for got, want in pairs]
    assert len(pairs) == 3001 and 0 < sum(gaps) / len(gaps) < 2


def test_score_refuses_to_skip_the_normaliser_of_a_model_not_trained_so(tmp_path, not_self_normalised):
    runner = CliRunner()
    for model in (save_tiny_model(str(tmp_path / "random.pt")), not_self_normalised):
        result = runner.invoke(main, ["score", TABLE, "-m", model, "-o", str(tmp_path / "out.gz"),
                                      "--normalizer", "skip"])
        assert result.exit_code == 1
        assert "was not trained self-normalised" in result.output and "--self-norm" in result.output
        assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert not (tmp_path / "out.gz").exists()


def test_score_refuses_a_self_normalised_model_whose_log_z_strays(tmp_path, self_normalised):
    """Trained with the penalty, but its validation's mean log Z beyond the CSLM's 0.5: refused too."""
    trained = load_encoder_decoder(self_normalised)
    from mosesrnn.encdec.model_file import save_encoder_decoder
    stray = str(tmp_path / "stray.pt")
    save_encoder_decoder(stray, trained.model, trained.text, trained.direction, {**trained.info, "log_z_mean": 0.9})
    result = CliRunner().invoke(main, ["score", TABLE, "-m", stray, "-o", str(tmp_path / "out.gz"),
                                       "--normalizer", "skip"])
    assert result.exit_code == 1 and "is not self-normalised: mean log Z +0.90" in result.output


def test_train_cli_takes_self_norm(tmp_path):
    result = CliRunner().invoke(main, ["train", TABLE, "-o", str(tmp_path / "m"), "--max-updates", "3",
                                       "--valid-every", "3", "--self-norm", "0.1", "--threads", "1", "--quiet",
                                       *TINY_OPTIONS])
    assert result.exit_code == 0, result.output
    info = load_encoder_decoder(str(tmp_path / "m" / "best.pt")).info
    assert info["self_norm"] == 0.1 and info["log_z_mean"] is not None
