"""Tests of mosesrnn.encdec (encoder, decoder, config), with tiny sizes and fixed seeds."""

import pytest
import torch

from mosesrnn.encdec.architectures import ARCHITECTURES
from mosesrnn.encdec.config import EOS_ID, PAD_ID, PRESETS, ModelConfig, model_config, preset_shortlist
from mosesrnn.encdec.model import build_model

TINY = dict(src_vocab_size=19, trg_vocab_size=21, embed_dim=8, hidden_dim=7, maxout_units=5, output_rank=4)

# (source words, target words ending in EOS): lengths 1, 3, 5 and 2, 4, 1.
PAIRS = [
    ([5], [7, EOS_ID]),
    ([3, 4, 18], [9, 3, 20, EOS_ID]),
    ([6, 1, 7, 8, 9], [EOS_ID]),
]


def tiny_model(encoder="gru", seed=0, dtype=torch.float64, std=0.5, **options):
    """A tiny model with all parameters random (biases too, so their placement is tested); ``options``: the
    architecture's own settings (those it does not have are left out)."""
    torch.manual_seed(seed)
    own = ARCHITECTURES[encoder].settings
    config = ModelConfig(**TINY, encoder=encoder, options={k: v for k, v in options.items() if k in own})
    model = build_model(config).to(dtype)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, std)
    return model


def pad(seqs, extra=0):
    """Right-pad with PAD_ID (plus `extra` columns); return (ids (B, T), lengths (B,))."""
    width = max(len(s) for s in seqs) + extra
    ids = torch.tensor([s + [PAD_ID] * (width - len(s)) for s in seqs])
    return ids, torch.tensor([len(s) for s in seqs])


def batch(pairs, extra=0):
    src, src_len = pad([x for x, _ in pairs], extra)
    trg, trg_len = pad([y for _, y in pairs], extra)
    return src, src_len, trg, trg_len


def reference_log_prob(model, x, y):
    """log p(y | x) by the equations of Appendix A, one word at a time, no batching or padding."""
    P = {name: p.detach() for name, p in model.named_parameters()}
    H, M = model.config.hidden_dim, model.config.maxout_units
    W_r, W_z, W = P["encoder.W.weight"].split(H)
    b_r, b_z, b = P["encoder.W.bias"].split(H)
    U_r, U_z, U = P["encoder.U.weight"].split(H)
    # Encoder: h_0 = 0; r, z, h~, h; c = tanh(V h_N); m_x = mean of e(x_t).
    h = torch.zeros(H, dtype=W.dtype)
    for word in x:
        e = P["encoder.embed.weight"][word]
        r = torch.sigmoid(W_r @ e + b_r + U_r @ h)
        z = torch.sigmoid(W_z @ e + b_z + U_z @ h)
        h_tilde = torch.tanh(W @ e + b + r * (U @ h))
        h = z * h + (1 - z) * h_tilde
    c = torch.tanh(P["encoder.V.weight"] @ h + P["encoder.V.bias"])
    m_x = torch.stack([P["encoder.embed.weight"][word] for word in x]).mean(0)
    # Decoder.
    Wd_r, Wd_z, Wd = P["decoder.W.weight"].split(H)
    bd_r, bd_z, bd = P["decoder.W.bias"].split(H)
    Ud_r, Ud_z, Ud = P["decoder.U.weight"].split(H)
    C_r, C_z, C = P["decoder.C.weight"].split(H)
    G = P["decoder.G_l.weight"] @ P["decoder.G_r.weight"]  # (K, M)
    h = torch.tanh(P["decoder.V.weight"] @ c + P["decoder.V.bias"])  # h'_0
    e_prev = torch.zeros(model.config.embed_dim, dtype=W.dtype)  # e(y_0) = 0
    total = torch.zeros((), dtype=W.dtype)
    for word in y:
        r = torch.sigmoid(Wd_r @ e_prev + bd_r + Ud_r @ h + C_r @ c)
        z = torch.sigmoid(Wd_z @ e_prev + bd_z + Ud_z @ h + C_z @ c)
        h_tilde = torch.tanh(Wd @ e_prev + bd + r * (Ud @ h + C @ c))
        h = z * h + (1 - z) * h_tilde
        s = (P["decoder.O_h.weight"] @ h + P["decoder.O_y.weight"] @ e_prev
             + P["decoder.O_c.weight"] @ c + P["decoder.O_c.bias"]
             + P["decoder.O_w.weight"] @ m_x)
        s = torch.stack([torch.maximum(s[2 * i], s[2 * i + 1]) for i in range(M)])  # maxout
        logits = G @ s + P["decoder.G_l.bias"]
        total = total + logits[word] - torch.log(torch.exp(logits).sum())
        e_prev = P["decoder.embed.weight"][word]
    return total


def test_log_prob_matches_paper_equations():
    model = tiny_model()
    got = model.log_prob(*batch(PAIRS, extra=1))
    want = torch.stack([reference_log_prob(model, x, y) for x, y in PAIRS])
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)


def test_batch_independence():
    model = tiny_model(seed=1, dtype=torch.float32)
    batched = model.log_prob(*batch(PAIRS))
    for i, pair in enumerate(PAIRS):
        alone = model.log_prob(*batch([pair]))
        torch.testing.assert_close(alone[0], batched[i], rtol=0, atol=1e-6)


def test_step_reproduces_token_log_probs():
    model = tiny_model(seed=2)
    src, src_len, trg, trg_len = batch(PAIRS)
    ctx = model.source_context(src, src_len)
    want = model.decoder.token_log_probs(ctx, trg, trg_len)
    h = model.initial_state(ctx)
    prev = None
    for t in range(trg.size(1)):
        log_p, h = model.step(ctx, prev, h)
        torch.testing.assert_close(log_p.exp().sum(-1), torch.ones(len(PAIRS), dtype=log_p.dtype))
        got = log_p.gather(1, trg[:, t:t + 1]).squeeze(1)
        real = t < trg_len
        torch.testing.assert_close(got[real], want[real, t], rtol=0, atol=1e-10)
        prev = trg[:, t]
    assert torch.all(want[trg == PAD_ID] == 0)


def test_index_select_serves_many_targets():
    model = tiny_model(seed=3)
    src, src_len, trg, trg_len = batch(PAIRS)
    index = torch.tensor([2, 0, 0, 1])
    shared = model.decoder.token_log_probs(model.source_context(src, src_len).index_select(index),
                                           trg[index], trg_len[index]).sum(1)
    direct = model.log_prob(src[index], src_len[index], trg[index], trg_len[index])
    torch.testing.assert_close(shared, direct)


@pytest.mark.parametrize("scale", [1.0, 0.01])
def test_init(scale):
    torch.manual_seed(0)
    config = ModelConfig(src_vocab_size=50, trg_vocab_size=60, embed_dim=32, hidden_dim=64,
                         maxout_units=16, output_rank=8, recurrent_init_scale=scale)
    model = build_model(config)
    assert abs(model.encoder.W.weight.std().item() - 0.01) < 0.001
    assert abs(model.decoder.embed.weight.std().item() - 0.01) < 0.001
    for U in (model.encoder.U.weight, model.decoder.U.weight):
        blocks = U.detach().split(64)
        for block in blocks:  # U_r, U_z, U: orthogonal columns of norm `scale`
            torch.testing.assert_close(block.T @ block, scale ** 2 * torch.eye(64),
                                       rtol=0, atol=1e-5 * scale ** 2)
        assert not torch.allclose(blocks[0], blocks[1])
    for name, param in model.named_parameters():
        if name.endswith("bias"):
            assert torch.all(param == 0), name


def test_unknown_encoder_is_refused():
    with pytest.raises(ValueError, match="unknown encoder 'lstm'"):
        build_model(ModelConfig(**TINY, encoder="lstm"))


def test_config_presets_and_validation():
    assert {"paper", "small"} <= set(PRESETS)
    assert preset_shortlist("paper") == 15000
    config = model_config("small", 100, 200, hidden_dim=32)
    assert config.hidden_dim == 32 and config.trg_vocab_size == 200
    assert config.embed_dim == PRESETS["small"]["embed_dim"]
    assert ModelConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown preset"):
        model_config("huge", 100, 100)
    with pytest.raises(ValueError, match="unknown preset"):
        preset_shortlist("huge")
    with pytest.raises(ValueError, match="hiden_dim"):
        model_config("small", 100, 100, hiden_dim=3)
    with pytest.raises(ValueError, match="shortlist"):
        model_config("small", 100, 100, shortlist=3)
    with pytest.raises(ValueError, match="colour"):
        ModelConfig.from_dict({**config.to_dict(), "colour": "red"})
    with pytest.raises(ValueError):
        ModelConfig(src_vocab_size=2, trg_vocab_size=10)


def test_paper_preset_parameter_count():
    K = 3 + preset_shortlist("paper")  # 15003 words per side, reserved ids included
    E, H, M, R = 100, 1000, 500, 100
    encoder = K * E + (E * 3 * H + 3 * H) + H * 3 * H + (H * H + H)  # e(x), W, U, V
    decoder = K * E + (E * 3 * H + 3 * H) + H * 3 * H + H * 3 * H + (H * H + H)  # e(y), W', U', C, V'
    output = H * 2 * M + E * 2 * M + (H * 2 * M + 2 * M) + E * 2 * M + M * R + (R * K + K)  # O_*, G_r, G_l
    with torch.device("meta"):  # sizes only, no initialisation
        model = build_model(model_config("paper", K, K))
    print(f"paper preset: {model.num_parameters():,} parameters")
    assert model.num_parameters() == encoder + decoder + output == 18_374_903


def test_bf16_autocast_close_to_fp32():
    model = tiny_model(seed=5, dtype=torch.float32, std=0.2)
    args = batch(PAIRS, extra=1)
    fp32 = model.log_prob(*args)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16 = model.log_prob(*args)
        ctx = model.source_context(*args[:2])
        log_p, _ = model.step(ctx, None, model.initial_state(ctx))
    assert torch.isfinite(bf16).all() and torch.isfinite(log_p).all()
    torch.testing.assert_close(bf16.float(), fp32, rtol=0.01, atol=0.02)
