"""The other encoders of the seeds (grConv, plain RNN, RCTM I, RCTM II) against their papers' equations.

Each model is checked against a direct transcription of its equations: float64, one phrase at a
time, one word or one column at a time, no batching and no padding. The batched models run on
padded mixed-length batches.
"""
import gzip
import math

import pytest
import torch
from click.testing import CliRunner
from conftest import ENCODER_PAIRS as PAIRS
from test_attention import reference_attention
from test_model import TINY, batch, tiny_model
from test_model import reference_log_prob as reference_gru_log_prob

from mosesrnn.cli import main
from mosesrnn.encdec.architectures import ARCHITECTURES
from mosesrnn.encdec.config import EOS_ID, PAD_ID, ModelConfig
from mosesrnn.encdec.convolution import csm_plan
from mosesrnn.encdec.model import build_model
from mosesrnn.encdec.model_file import load_encoder_decoder, save_encoder_decoder
from mosesrnn.encdec.rctm import LENGTH_CLASSES
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.text.codec import Codec, CodecPair
from mosesrnn.text.tokenizers import MosesWords
from mosesrnn.text.vocab import RESERVED, Vocabulary, build_vocabularies

#: Small kernel banks, so that long phrases need factorised kernels (KB13 Sec. 5.1.2).
SMALL_BANKS = dict(csm_kernels=3, cgm_kernels=3, icgm_kernels=3)

def params(model):
    return {name: p.detach() for name, p in model.named_parameters()}


# -- the transcriptions ---------------------------------------------------------------------------

def reference_c14_decoder(model, c, m_x, y):
    """log p(y | c, m_x) by C14 Appendix A.1.1-A.1.2, one word at a time."""
    P, H, M = params(model), model.config.hidden_dim, model.config.maxout_units
    W_r, W_z, W = P["decoder.W.weight"].split(H)
    b_r, b_z, b = P["decoder.W.bias"].split(H)
    U_r, U_z, U = P["decoder.U.weight"].split(H)
    C_r, C_z, C = P["decoder.C.weight"].split(H)
    G = P["decoder.G_l.weight"] @ P["decoder.G_r.weight"]
    h = torch.tanh(P["decoder.V.weight"] @ c + P["decoder.V.bias"])  # h'_0 = tanh(V' c)
    e_prev, total = torch.zeros(model.config.embed_dim, dtype=c.dtype), 0.0
    for word in y:
        r = torch.sigmoid(W_r @ e_prev + b_r + U_r @ h + C_r @ c)
        z = torch.sigmoid(W_z @ e_prev + b_z + U_z @ h + C_z @ c)
        h = z * h + (1 - z) * torch.tanh(W @ e_prev + b + r * (U @ h + C @ c))
        s = (P["decoder.O_h.weight"] @ h + P["decoder.O_y.weight"] @ e_prev + P["decoder.O_c.weight"] @ c
             + P["decoder.O_c.bias"] + P["decoder.O_w.weight"] @ m_x)
        s = torch.stack([torch.maximum(s[2 * i], s[2 * i + 1]) for i in range(M)])
        logits = G @ s + P["decoder.G_l.bias"]
        total = total + logits[word] - torch.log(torch.exp(logits).sum())
        e_prev = P["decoder.embed.weight"][word]
    return total


def reference_grconv(model, x):
    """c = the top node of the grConv (Cho et al. 2014b, Sec. 2.2), node by node."""
    P = params(model)
    level = [P["encoder.U.weight"] @ P["encoder.embed.weight"][w] + P["encoder.U.bias"] for w in x]  # h^(0)
    for _ in range(1, len(x)):
        new = []
        for j in range(len(level) - 1):
            left, right = level[j], level[j + 1]
            h_tilde = torch.relu(P["encoder.W_l.weight"] @ left + P["encoder.W_l.bias"]
                                 + P["encoder.W_r.weight"] @ right)
            gate = P["encoder.G_l.weight"] @ left + P["encoder.G_l.bias"] + P["encoder.G_r.weight"] @ right
            w_c, w_l, w_r = torch.exp(gate) / torch.exp(gate).sum()
            new.append(w_c * h_tilde + w_l * left + w_r * right)
        level = new
    return level[0]


def reference_rnn(model, x):
    """c = tanh(V h_N) of a tanh RNN, h_t = tanh(W e(x_t) + U h_{t-1})."""
    P = params(model)
    h = torch.zeros(model.config.hidden_dim, dtype=torch.float64)
    for w in x:
        h = torch.tanh(P["encoder.W.weight"] @ P["encoder.embed.weight"][w] + P["encoder.W.bias"]
                       + P["encoder.U.weight"] @ h)
    return torch.tanh(P["encoder.V.weight"] @ h + P["encoder.V.bias"])


def mean_embedding(model, x):
    return torch.stack([params(model)["encoder.embed.weight"][w] for w in x]).mean(0)


def conv(P, bank, width, columns, max_width, transposed=False):
    """Eq. 6 on a list of columns with kernel `bank`^width (+ its bias); wider kernels factorised."""
    if width > max_width:
        columns = conv(P, bank, max_width, columns, max_width, transposed)
        return conv(P, bank, width - max_width + 1, columns, max_width, transposed)
    K, b = P[f"{bank}.weight_{width}"], P[f"{bank}.bias"][width - 2]
    if transposed:  # column a spreads onto columns a .. a + width - 1
        out = [b.clone() for _ in range(len(columns) + width - 1)]
        for a, column in enumerate(columns):
            for i in range(width):
                out[a + i] = out[a + i] + K[:, i] * column
        return out
    return [sum(K[:, i] * columns[a + i] for i in range(width)) + b for a in range(len(columns) - width + 1)]


def reference_csm(P, prefix, columns, max_width, ngram=None):
    """KB13 Eq. 7: K^2, K^3, ... then a top L^j; with `ngram`, stop at the level of n-grams.

    Returns the last level's columns and the steps taken ((kind, width), ...).
    """
    steps, level, gram, k = [], 1, 1, len(columns)
    while len(columns) > 1:
        width = level + 1  # E_{i+1} = sigma(K^{i+1} * E_i)
        if ngram is not None and k > ngram and gram + width - 1 > ngram:
            break
        if len(columns) >= width:
            columns = [torch.tanh(c) for c in conv(P, f"{prefix}.K", width, columns, max_width)]
            steps.append(("K", width))
            level, gram = level + 1, gram + width - 1
        else:
            steps.append(("L", len(columns)))
            columns = [torch.tanh(c) for c in conv(P, f"{prefix}.L", len(columns), columns, max_width)]
    return columns, steps


def reference_rctm1(model, x, y):
    """log P(y | x) by KB13 Eqs. 8a-d with h_0 = 0 and v(y_0) = 0."""
    P, r = params(model), model.config.options["csm_kernels"]
    (e,), _ = reference_csm(P, "encoder", [P["encoder.embed.weight"][w] for w in x], r)
    s = P["decoder.S.weight"] @ e + P["decoder.S.bias"]  # (8a)
    h = torch.zeros(model.config.hidden_dim, dtype=torch.float64)
    v_prev, total = torch.zeros_like(h), 0.0
    for word in y:
        h = torch.tanh(P["decoder.R.weight"] @ h + v_prev + s)  # (8b-c)
        o = P["decoder.O.weight"] @ h + P["decoder.O.bias"]  # (8d)
        total = total + o[word] - torch.log(torch.exp(o).sum())
        v_prev = P["decoder.I.weight"][word]
    return total


def reference_icgm(P, F_g, m, config):
    """F = icgm(F^g, m): bridge the g columns to the m_g n-gram columns of a length-m sentence, then
    invert that sentence's CGM with transposed kernels J (levels) and H (tops)."""
    if m == 0:
        return []
    zeros = [torch.zeros(config.hidden_dim, dtype=torch.float64)] * m  # only the steps matter here
    _, steps = reference_csm(P, "encoder", zeros, config.options["cgm_kernels"], ngram=config.options["cgm_ngram"])
    max_width = config.options["icgm_kernels"]
    m_g = m - sum(width - 1 for _, width in steps)
    columns, g = list(F_g), len(F_g)
    if g != m_g:
        columns = [torch.tanh(c) for c in conv(P, "decoder.H", abs(m_g - g) + 1, columns, max_width,
                                                transposed=m_g > g)]
    for kind, width in reversed(steps):
        bank = "decoder.J" if kind == "K" else "decoder.H"
        columns = [torch.tanh(c) for c in conv(P, bank, width, columns, max_width, transposed=True)]
    assert len(columns) == m
    return columns


def reference_rctm2(model, x, y):
    """log P(m | k) + log P(y | m, x) by KB13 Eqs. 9-11; the word softmax leaves EOS out."""
    P, config = params(model), model.config
    E_g, _ = reference_csm(P, "encoder", [P["encoder.embed.weight"][w] for w in x], config.options["cgm_kernels"],
                           ngram=config.options["cgm_ngram"])  # (10a)
    F_g = [torch.tanh(P["encoder.T.weight"] @ column + P["encoder.T.bias"]) for column in E_g]  # (10b)
    m, k = len(y) - 1, len(x)
    F = reference_icgm(P, F_g, m, config)  # (10c)
    h = torch.zeros(config.hidden_dim, dtype=torch.float64)
    v_prev, total = torch.zeros_like(h), 0.0
    for i, word in enumerate(y[:-1]):
        h = torch.tanh(P["decoder.R.weight"] @ h + v_prev + P["decoder.S.weight"] @ F[i] + P["decoder.S.bias"])
        o = P["decoder.O.weight"] @ h + P["decoder.O.bias"]  # (10f)
        words = [j for j in range(len(o)) if j != EOS_ID]
        total = total + o[word] - torch.log(torch.exp(o[words]).sum())
        v_prev = P["decoder.I.weight"][word]
    lam = math.exp(P["decoder.log_lambda"][min(k, LENGTH_CLASSES) - 1])
    return total + m * math.log(lam) - lam - math.lgamma(m + 1)  # (11): Poisson(m; lambda_k)


REFERENCES = {
    "gru": reference_gru_log_prob,
    "grconv": lambda model, x, y: reference_c14_decoder(model, reference_grconv(model, x), mean_embedding(model, x), y),
    "rnn": lambda model, x, y: reference_c14_decoder(model, reference_rnn(model, x), mean_embedding(model, x), y),
    "rctm1": reference_rctm1,
    "rctm2": reference_rctm2,
    "attention": reference_attention,  # tests/test_attention.py: BCB15 App. A.2
}


# -- the tests ------------------------------------------------------------------------------------

def test_every_encoder_kind_is_registered_and_tested():
    assert tuple(ARCHITECTURES) == tuple(REFERENCES)


def test_c14_reference_decoder_agrees_with_the_gru_parity_test():
    model = tiny_model("gru")
    for x, y in PAIRS:
        assert float(REFERENCES["gru"](model, x, y).detach()) == pytest.approx(float(
            reference_c14_decoder(model, *_gru_c(model, x), y).detach()), abs=1e-10)


def _gru_c(model, x):
    c = model.encoder(torch.tensor([x]), torch.tensor([len(x)]))
    return c.c[0], c.m_x[0]


@pytest.mark.parametrize("encoder", list(ARCHITECTURES))
@pytest.mark.parametrize("banks", [{}, SMALL_BANKS], ids=["paper-banks", "factorised"])
def test_log_prob_matches_the_papers_equations(encoder, banks):
    model = tiny_model(encoder, **banks)
    got = model.log_prob(*batch(PAIRS, extra=1))
    want = torch.stack([torch.as_tensor(REFERENCES[encoder](model, x, y)) for x, y in PAIRS])
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)


def test_the_library_gru_computes_the_papers_encoder():
    """``GRUEncoder.native`` (one ``torch.gru`` call: ATen's on a CPU, cuDNN's on cuda) gives App. A's log p on a
    padded batch: to 1e-10 nats in float64, to 1e-5 against the step loop in float32; under autocast the step loop
    runs (its state stays float32), so the values are the loop's."""
    model = tiny_model("gru")
    model.encoder.native = True
    want = torch.stack([reference_gru_log_prob(model, x, y) for x, y in PAIRS])
    torch.testing.assert_close(model.log_prob(*batch(PAIRS, extra=2)), want, rtol=0, atol=1e-10)
    model = tiny_model("gru", seed=1, dtype=torch.float32, std=0.3)
    loop = model.log_prob(*batch(PAIRS, extra=2))
    model.encoder.native = True
    torch.testing.assert_close(model.log_prob(*batch(PAIRS, extra=2)), loop, rtol=0, atol=1e-5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        native = model.log_prob(*batch(PAIRS))
        model.encoder.native = False
        assert torch.equal(native, model.log_prob(*batch(PAIRS)))


@pytest.mark.parametrize("encoder", list(ARCHITECTURES))
def test_batch_independence_and_fast_scoring_order(encoder):
    model = tiny_model(encoder, seed=1, dtype=torch.float32, std=0.3)
    src, src_len, trg, trg_len = batch(PAIRS)
    batched = model.log_prob(src, src_len, trg, trg_len)
    for i, pair in enumerate(PAIRS):
        torch.testing.assert_close(model.log_prob(*batch([pair]))[0], batched[i], rtol=0, atol=1e-5)
    ctx = model.source_context(src, src_len)
    torch.testing.assert_close(model.score_log_prob(ctx, trg, trg_len), batched, rtol=0, atol=1e-5)
    index = torch.tensor([5, 0, 0, 3, 2])  # one encoded source serving several targets, contexts joined
    joined = type(ctx).cat([ctx.index_select(index[:2]), ctx.index_select(index[2:])])
    torch.testing.assert_close(model.score_log_prob(joined, trg[index], trg_len[index]), batched[index],
                               rtol=0, atol=1e-5)


@pytest.mark.parametrize("encoder", list(ARCHITECTURES))
def test_step_reproduces_token_log_probs(encoder):
    model = tiny_model(encoder, seed=2)
    src, src_len, trg, trg_len = batch(PAIRS)
    ctx = model.source_context(src, src_len)
    want = model.decoder.token_log_probs(ctx, trg, trg_len)
    if encoder == "rctm2":
        ctx = ctx.with_target_length(trg_len - 1)  # search fixes the length first
    h, prev = model.initial_state(ctx), None
    for t in range(trg.size(1)):
        log_p, h = model.step(ctx, prev, h)
        real = t < trg_len
        torch.testing.assert_close(log_p.gather(1, trg[:, t:t + 1]).squeeze(1)[real], want[real, t],
                                   rtol=0, atol=1e-10)
        prev = trg[:, t]
    assert torch.all(want[trg == PAD_ID] == 0)


def test_rctm2_step_word_distributions_sum_to_one_and_end_at_the_chosen_length():
    model = tiny_model("rctm2", seed=3)
    src, src_len, _, _ = batch(PAIRS)
    ctx = model.source_context(src, src_len)
    lam = ctx.log_lambda.exp()
    assert torch.equal(ctx.target_length, lam.floor().long().clamp(min=1))  # the Poisson mode
    ctx = ctx.with_target_length(2)
    h, prev = model.initial_state(ctx), None
    for t in range(4):
        log_p, h = model.step(ctx, prev, h)
        if t < 2:
            torch.testing.assert_close(log_p.exp().sum(-1), torch.ones(len(PAIRS), dtype=log_p.dtype))
            assert torch.all(log_p[:, EOS_ID] == -math.inf)
        else:
            want = 2 * lam.log() - lam - math.lgamma(3) if t == 2 else torch.zeros_like(lam)
            torch.testing.assert_close(log_p[:, EOS_ID], want.to(log_p.dtype))
            assert torch.all(log_p.exp().sum(-1) <= 1 + 1e-12)
        prev = log_p.argmax(-1)


@pytest.mark.parametrize("length, ngram, plan", [
    (1, None, []), (2, None, [("K", 2)]), (6, None, [("K", 2), ("K", 3), ("L", 3)]),
    (7, None, [("K", 2), ("K", 3), ("K", 4)]), (12, None, [("K", 2), ("K", 3), ("K", 4), ("K", 5), ("L", 2)]),
    (3, 4, [("K", 2), ("L", 2)]), (4, 4, [("K", 2), ("K", 3)]), (9, 4, [("K", 2), ("K", 3)]),
])
def test_csm_plan(length, ngram, plan):
    assert csm_plan(length, ngram) == plan


@pytest.mark.parametrize("encoder", list(ARCHITECTURES))
def test_model_file_records_the_encoder_and_scores_identically(tmp_path, encoder):
    table = "tests/data/tatoeba.en-fr.3k.gz"
    vocabularies, _ = build_vocabularies(read_entries(table), 200)
    torch.manual_seed(0)
    model = build_model(ModelConfig(len(vocabularies.source), len(vocabularies.target), embed_dim=8,
                                    hidden_dim=8, maxout_units=4, output_rank=4, encoder=encoder))
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.3 * torch.randn_like(param))
    text = CodecPair(Codec(MosesWords(), vocabularies.source), Codec(MosesWords(), vocabularies.target))
    path = str(tmp_path / "model.pt")
    save_encoder_decoder(path, model, text)
    assert torch.load(path, weights_only=True)["config"]["encoder"] == encoder
    trained = load_encoder_decoder(path)
    assert trained.model.config == model.config
    with read_entries(table) as entries:
        pairs = [entry for entry, _ in zip(entries, range(300))]
    loaded = RNNFeature(trained).values(pairs)
    trained.model = model.eval()
    assert RNNFeature(trained, batch_tokens=64).values(pairs) == pytest.approx(loaded, abs=1e-4)
    assert all(math.isfinite(v) and v < 0 for v in loaded)


def test_each_architecture_owns_its_settings_with_the_papers_defaults():
    defaults = {name: ModelConfig(**TINY, encoder=name).options for name in ARCHITECTURES}
    assert defaults == {"gru": {}, "grconv": {"grconv_init_scale": 0.4}, "rnn": {},
                        "rctm1": {"csm_kernels": 15}, "rctm2": {"cgm_ngram": 4, "cgm_kernels": 7, "icgm_kernels": 9},
                        "attention": {"attention_dim": 0}}
    assert ModelConfig.from_dict(ModelConfig(**TINY, encoder="rctm2").to_dict()).options == defaults["rctm2"]
    with pytest.raises(ValueError, match="unknown encoder 'lstm'"):
        ModelConfig(**TINY, encoder="lstm")
    with pytest.raises(ValueError, match="csm_kernels must be at least 2, got 1"):
        ModelConfig(**TINY, encoder="rctm1", options={"csm_kernels": 1})
    with pytest.raises(ValueError, match=r"the gru encoder has no setting csm_kernels \(its settings: none\)"):
        ModelConfig(**TINY, options={"csm_kernels": 3})


def test_a_version_2_model_file_keeps_its_settings(tmp_path):
    """Files written before the architectures owned their settings (flat config keys) load the same."""
    model = tiny_model("rctm1", csm_kernels=3)
    words = [Vocabulary([f"w{i}" for i in range(size - len(RESERVED))])
             for size in (TINY["src_vocab_size"], TINY["trg_vocab_size"])]
    path = str(tmp_path / "model.pt")
    save_encoder_decoder(path, model, CodecPair(*(Codec(MosesWords(), vocabulary) for vocabulary in words)))
    current = torch.load(path, weights_only=True)
    flat = {**{k: v for k, v in current["config"].items() if k != "options"}, "grconv_init_scale": 0.4,
            "csm_kernels": 3, "cgm_ngram": 4, "cgm_kernels": 7, "icgm_kernels": 9}
    version_2 = {key: value for key, value in current.items() if key != "kind"}
    torch.save({**version_2, "format_version": 2, "config": flat}, path)
    loaded = load_encoder_decoder(path)
    assert loaded.model.config.options == {"csm_kernels": 3} and loaded.model.config == model.config
    for name, value in model.state_dict().items():
        torch.testing.assert_close(loaded.model.state_dict()[name], value)


def test_init_follows_each_paper():
    torch.manual_seed(0)
    model = build_model(ModelConfig(50, 60, embed_dim=16, hidden_dim=32, encoder="grconv"))
    for W in (model.encoder.W_l.weight, model.encoder.W_r.weight):  # orthogonal, spectral radius 0.4
        torch.testing.assert_close(W.T @ W, 0.16 * torch.eye(32), rtol=0, atol=1e-5)
    assert abs(model.encoder.G_l.weight.std().item() - 0.01) < 0.003
    model = build_model(ModelConfig(50, 60, hidden_dim=32, encoder="rctm2"))
    torch.testing.assert_close(model.decoder.log_lambda.exp(), torch.arange(1.0, LENGTH_CLASSES + 1))
    R = model.decoder.R.weight
    torch.testing.assert_close(R.T @ R, torch.eye(32), rtol=0, atol=1e-5)
    assert torch.all(model.encoder.K.bias == 0)


@pytest.mark.parametrize("encoder", ["grconv", "rnn", "rctm1", "rctm2", "attention"])
def test_cli_trains_and_scores_end_to_end(tmp_path, tatoeba_table, encoder):
    out = tmp_path / "model"
    result = CliRunner().invoke(main, ["train", str(tatoeba_table), "-o", str(out), "--encoder", encoder,
                                       "--max-updates", "4", "--valid-every", "2", "--batch-size", "16",
                                       "--vocab-size", "150", "--embed-dim", "8", "--hidden-dim", "8",
                                       "--maxout-units", "4", "--output-rank", "4", "--threads", "1", "-q"])
    assert result.exit_code == 0, result.output
    assert load_encoder_decoder(str(out / "best.pt")).model.config.encoder == encoder
    scored = tmp_path / "scored.gz"
    result = CliRunner().invoke(main, ["score", str(tatoeba_table), "-m", str(out / "best.pt"), "-o", str(scored),
                                       "-q", "--threads", "1"])
    assert result.exit_code == 0, result.output
    before = gzip.open(tatoeba_table, "rt", encoding="utf-8").read().splitlines()
    after = gzip.open(scored, "rt", encoding="utf-8").read().splitlines()
    assert len(after) == len(before)
    for old, new in zip(before, after):
        added = new.split(" ||| ")[2].split()[len(old.split(" ||| ")[2].split()):]
        assert len(added) == 2 and 0 < float(added[0]) <= 1


@pytest.mark.parametrize("encoder", list(ARCHITECTURES))
def test_bf16_autocast_close_to_fp32(encoder):
    model = tiny_model(encoder, seed=5, dtype=torch.float32, std=0.2)
    args = batch(PAIRS, extra=1)
    fp32 = model.log_prob(*args)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16 = model.log_prob(*args)
        ctx = model.source_context(*args[:2])
        scored = model.score_log_prob(ctx, *args[2:])
        log_p, _ = model.step(ctx, None, model.initial_state(ctx))
    assert torch.isfinite(bf16).all() and torch.isfinite(scored).all() and not torch.isnan(log_p).any()
    torch.testing.assert_close(bf16.float(), fp32, rtol=0.01, atol=0.05)
    torch.testing.assert_close(scored.float(), fp32, rtol=0.01, atol=0.05)
