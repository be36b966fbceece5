"""The attention encoder–decoder (Bahdanau, Cho & Bengio 2015, App. A.2) against a transcription of its equations,
and through the seam: batches, scoring of a phrase table and an n-best list, search, training from a corpus.

The transcription is float64, one sentence at a time, one word at a time, no batching and no padding.
"""
import math
import os

import pytest
import torch
from click.testing import CliRunner
from conftest import DATA
from conftest import ENCODER_PAIRS as PAIRS
from scoring_helpers import TABLE, save_tiny_model
from test_model import batch, tiny_model

from mosesrnn.cli import main
from mosesrnn.encdec import search
from mosesrnn.encdec.attention import AttentionContext
from mosesrnn.encdec.batching import pad
from mosesrnn.encdec.config import EOS_ID, PAD_ID, ModelConfig
from mosesrnn.encdec.model import build_model
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.nbest import parse_line
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.pipeline.nbest import run_nbest_job

torch.set_num_threads(1)

def _gru(P, module, direction, H, x, h, c_terms=(0.0, 0.0, 0.0)):
    """One GRU step of BCB15 App. A.2.1-A.2.2: (1 - z) h + z tanh(W x + U [r ∘ h] (+ C c)); ``c_terms``: the
    decoder's (C_r c, C_z c, C c)."""
    W_r, W_z, W = P[f"{module}.W{direction}.weight"].split(H)
    b_r, b_z, b = P[f"{module}.W{direction}.bias"].split(H)
    U_r, U_z = P[f"{module}.U_rz{direction}.weight"].split(H)
    U = P[f"{module}.U{direction}.weight"]
    C_r, C_z, C = c_terms
    z = torch.sigmoid(W_z @ x + b_z + U_z @ h + C_z)
    r = torch.sigmoid(W_r @ x + b_r + U_r @ h + C_r)
    return (1 - z) * h + z * torch.tanh(W @ x + b + U @ (r * h) + C)


def reference_attention(model, x, y, alphas=None):
    """log p(y | x) by BCB15 App. A.2, one word at a time; the deep output reads s_i (Eq. 4).

    ``alphas``: a list that receives each step's alignment weights α_i (len(x),)."""
    P = {name: p.detach() for name, p in model.named_parameters()}
    H, M = model.config.hidden_dim, model.config.maxout_units
    embed_x = P["encoder.embed.weight"]

    def rnn(direction, words):  # h→ or h← over ``words``, from h_0 = 0 (A.2.1)
        h, states = torch.zeros(H, dtype=torch.float64), []
        for w in words:
            h = _gru(P, "encoder", direction, H, embed_x[w], h)
            states.append(h)
        return states

    forward, backward = rnn("_fwd", x), rnn("_bwd", x[::-1])[::-1]
    annotations = [torch.cat([f, b]) for f, b in zip(forward, backward)]  # h_j = [h→_j; h←_j]
    s = torch.tanh(P["decoder.W_s.weight"] @ backward[0] + P["decoder.W_s.bias"])  # s_0 = tanh(W_s h←_1)
    C_r, C_z, C = P["decoder.C.weight"].split(H)
    G = P["decoder.G_l.weight"] @ P["decoder.G_r.weight"]  # W_o
    e_prev = torch.zeros(model.config.embed_dim, dtype=torch.float64)  # E y_0 = 0
    total = torch.zeros((), dtype=torch.float64)
    for word in y:
        e = torch.stack([P["decoder.v_a.weight"][0] @ torch.tanh(P["decoder.W_a.weight"] @ s
                                                                 + P["decoder.U_a.weight"] @ h_j
                                                                 + P["decoder.U_a.bias"]) for h_j in annotations])
        alpha = torch.exp(e) / torch.exp(e).sum()  # (A.1.2)
        if alphas is not None:
            alphas.append(alpha)
        c = sum(a * h_j for a, h_j in zip(alpha, annotations))  # c_i = Σ_j α_ij h_j
        s = _gru(P, "decoder", "", H, e_prev, s, (C_r @ c, C_z @ c, C @ c))
        t = (P["decoder.U_o.weight"] @ s + P["decoder.V_o.weight"] @ e_prev + P["decoder.C_o.weight"] @ c
             + P["decoder.C_o.bias"])
        t = torch.stack([torch.maximum(t[2 * j], t[2 * j + 1]) for j in range(M)])  # maxout
        logits = G @ t + P["decoder.G_l.bias"]
        total = total + logits[word] - torch.log(torch.exp(logits).sum())
        e_prev = P["decoder.embed.weight"][word]
    return total


@pytest.mark.parametrize("attention_dim", [0, 3])
def test_log_prob_matches_the_papers_equations(attention_dim):
    model = tiny_model("attention", seed=4, attention_dim=attention_dim)
    src, src_len, trg, trg_len = batch(PAIRS, extra=2)  # padding the decoder must not attend to
    want = torch.stack([reference_attention(model, x, y) for x, y in PAIRS])
    torch.testing.assert_close(model.log_prob(src, src_len, trg, trg_len), want, rtol=0, atol=1e-10)
    ctx = model.source_context(src, src_len)
    torch.testing.assert_close(model.score_log_prob(ctx, trg, trg_len), want, rtol=0, atol=1e-10)
    assert model.decoder.W_a.out_features == (attention_dim or model.config.hidden_dim)


def test_alignment_weights_are_the_papers_and_skip_padding():
    model = tiny_model("attention", seed=6)
    src, src_len, trg, _ = batch(PAIRS, extra=3)
    ctx = model.source_context(src, src_len)
    s, prev = model.initial_state(ctx), None
    expected = [[] for _ in PAIRS]
    for row, (x, y) in enumerate(PAIRS):
        reference_attention(model, x, y, expected[row])
    for i in range(2):  # α_1 and α_2 of every row, from the same s_{i-1}
        e = model.decoder.v_a(torch.tanh(model.decoder.W_a(s).unsqueeze(1) + ctx.keys)).squeeze(-1)
        alpha = torch.softmax(e.masked_fill(~ctx.mask, -math.inf), -1)
        for row, (x, y) in enumerate(PAIRS):
            if i < len(y):
                torch.testing.assert_close(alpha[row, :len(x)], expected[row][i], rtol=0, atol=1e-12)
                assert torch.all(alpha[row, len(x):] == 0)
        _, s = model.step(ctx, prev, s)
        prev = trg[:, i]


def test_batch_of_64_equals_one_at_a_time():
    """64 pairs of mixed lengths in one padded batch give each pair's log p alone (float32)."""
    generator = torch.Generator().manual_seed(0)
    pairs = [([int(w) for w in torch.randint(3, 19, (int(torch.randint(1, 13, (), generator=generator)),),
                                             generator=generator)],
              [int(w) for w in torch.randint(3, 21, (int(torch.randint(0, 10, (), generator=generator)),),
                                             generator=generator)] + [EOS_ID]) for _ in range(64)]
    model = tiny_model("attention", seed=1, dtype=torch.float32, std=0.3)
    src, src_len, trg, trg_len = batch(pairs, extra=1)
    batched = model.log_prob(src, src_len, trg, trg_len)
    fast = model.score_log_prob(model.source_context(src, src_len), trg, trg_len)
    alone = torch.cat([model.log_prob(*batch([pair])) for pair in pairs])
    torch.testing.assert_close(batched, alone, rtol=0, atol=1e-5)
    torch.testing.assert_close(fast, alone, rtol=0, atol=1e-5)


def test_contexts_of_different_widths_join():
    model = tiny_model("attention", seed=2)
    src, src_len, trg, trg_len = batch(PAIRS)
    short, long = [0, 1, 3], [4, 2, 5]  # the first three sources are at most 3 words: a narrower context
    parts = [model.source_context(*batch([PAIRS[i] for i in rows])[:2]) for rows in (short, long)]
    assert parts[0].h.size(1) < parts[1].h.size(1)
    joined = AttentionContext.cat(parts)
    order = torch.tensor(short + long)
    want = model.log_prob(src[order], src_len[order], trg[order], trg_len[order])
    torch.testing.assert_close(model.score_log_prob(joined, trg[order], trg_len[order]), want, rtol=0, atol=1e-10)


def test_init_follows_the_paper():
    torch.manual_seed(0)
    model = build_model(ModelConfig(50, 60, embed_dim=16, hidden_dim=32, encoder="attention"))
    assert torch.all(model.decoder.v_a.weight == 0)  # v_a = 0: uniform alignment to start (App. B.1)
    for W in (model.decoder.W_a.weight, model.decoder.U_a.weight):
        assert abs(W.std().item() - 0.001) < 0.0003
    for U in (model.encoder.U_fwd.weight, model.encoder.U_rz_bwd.weight[32:], model.decoder.U.weight):
        torch.testing.assert_close(U.T @ U, torch.eye(32), rtol=0, atol=1e-5)  # orthogonal
    assert abs(model.decoder.C.weight.std().item() - 0.01) < 0.003
    src, src_len, trg, _ = batch(PAIRS)
    ctx = model.source_context(src, src_len)
    alpha = torch.softmax(model.decoder.v_a(torch.tanh(ctx.keys)).squeeze(-1).masked_fill(~ctx.mask, -math.inf), -1)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(len(PAIRS)))
    torch.testing.assert_close(alpha[ctx.mask], (1 / src_len.float()).repeat_interleave(src_len))


# -- through the seam: scoring, search, training ------------------------------------------------------------

@pytest.fixture(scope="module")
def attention_file(tmp_path_factory) -> str:
    return save_tiny_model(str(tmp_path_factory.mktemp("attention") / "tiny.pt"), encoder="attention")


@pytest.fixture(scope="module")
def trained(attention_file):
    return load_encoder_decoder(attention_file)


def test_rnn_feature_scores_a_phrase_table_as_the_model_does(trained):
    with read_entries(TABLE) as entries:
        pairs = [entry for entry, _ in zip(entries, range(200))]
    values = RNNFeature(trained).values(pairs)
    assert RNNFeature(trained, batch_tokens=16).values(pairs) == pytest.approx(values, abs=1e-4)
    codec_in, codec_out = trained.input_codec, trained.output_codec
    for pair, value in list(zip(pairs, values))[::37]:
        src, src_len = pad([codec_in.ids(pair.source)])
        trg, trg_len = pad([codec_out.ids(pair.target)], append_eos=True)
        with torch.no_grad():
            assert float(trained.model.log_prob(src, src_len, trg, trg_len)) == pytest.approx(value, abs=1e-4)
    assert all(math.isfinite(v) and v < 0 for v in values)


def test_rnn_feature_scores_an_nbest_list(trained, tmp_path):
    nbest, sources = DATA / "nbest" / "tatoeba.dev30.untuned.100best.gz", DATA / "nbest" / "tatoeba.dev30.tok.en"
    out = tmp_path / "scored.gz"
    summary = run_nbest_job(str(nbest), str(sources), str(out), [RNNFeature(trained)])
    assert summary.sentences == 30
    import gzip
    lines = gzip.open(out, "rt", encoding="utf-8").read().splitlines()
    texts = sources.read_text(encoding="utf-8").splitlines()
    entries = [parse_line(line + "\n", "x", i) for i, line in enumerate(lines[:50], 1)]
    searcher_values = RNNFeature(trained).values([_Pair(texts[e.sentence_id], e.hypothesis) for e in entries])
    for entry, value in zip(entries, searcher_values):
        name, (rnn,) = entry.features[-1]
        assert name == "RNN0" and rnn == pytest.approx(value, abs=1e-4)


def test_an_empty_source_line_gets_a_number_not_nan(attention_file, tmp_path):
    """Moses decodes an empty line to an empty one: its hypotheses get the log p of an empty source (the attention
    reads no annotation, c_i = 0), a number as the GRU's, in a batch with other sources and alone."""
    (tmp_path / "src.txt").write_text("the house\n\ni am here .\n", encoding="utf-8")
    (tmp_path / "list.nbest").write_text("0 ||| la maison ||| LM0= -1 ||| -1\n1 |||  ||| LM0= -1 ||| -1\n"
                                         "1 ||| la ||| LM0= -2 ||| -2\n2 ||| je suis là . ||| LM0= -1 ||| -1\n",
                                         encoding="utf-8")
    (tmp_path / "alone.nbest").write_text("0 ||| la ||| LM0= -2 ||| -2\n", encoding="utf-8")
    (tmp_path / "empty.txt").write_text("\n", encoding="utf-8")
    values = {}
    for listing, source in (("list", "src"), ("alone", "empty")):
        result = CliRunner().invoke(main, ["nbest", str(tmp_path / f"{listing}.nbest"), "--source",
                                           str(tmp_path / f"{source}.txt"), "-m", attention_file, "-o",
                                           str(tmp_path / f"{listing}.rnn"), "-q"])
        assert result.exit_code == 0, result.output
        entries = [parse_line(line) for line in (tmp_path / f"{listing}.rnn").read_text().splitlines()]
        values[listing] = [dict(entry.features)["RNN0"][0] for entry in entries]
    assert all(math.isfinite(value) for value in values["list"]), values
    assert values["alone"][0] == pytest.approx(values["list"][2], abs=1e-4)


def test_compile_refuses_a_model_it_would_not_compile(attention_file, model_path, tmp_path):
    """--compile compiles the gru encoder's and C14's decoder's steps; an attention model has neither, and is
    refused in one line rather than scored eagerly in silence (a gru model is built as asked)."""
    out = tmp_path / "scored.gz"
    result = CliRunner().invoke(main, ["score", str(TABLE), "-m", attention_file, "--compile", "-o", str(out), "-q"])
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1, result.output
    assert f"{attention_file} is a model of --encoder attention, which has neither" in result.output
    assert not out.exists()
    from mosesrnn.features.options import FeatureOptions
    from mosesrnn.features.selection import select_features
    assert select_features(FeatureOptions(model=model_path, compile=True))[0].compile == "default"


def test_a_gru_run_folder_refuses_attention_naming_its_encoder(tmp_path):
    """train --corpus skips the line pairs with an empty side and says so; a folder holding a gru run refuses a run
    of --encoder attention, naming the gru model there and what --restart would do to it."""
    corpus = []
    for side in ("en", "fr"):
        lines = (DATA / f"tatoeba.train2k.tok.{side}").read_text(encoding="utf-8").splitlines()[:200]
        lines[7] = "" if side == "fr" else lines[7]
        (tmp_path / f"train.{side}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        corpus.append(str(tmp_path / f"train.{side}"))
    sizes = ["--max-updates", "2", "--valid-every", "2", "--valid-size", "10", "--batch-size", "16", "--vocab-size",
             "100", "--embed-dim", "4", "--hidden-dim", "4", "--maxout-units", "2", "--output-rank", "2",
             "--threads", "1"]
    out = tmp_path / "run"
    gru = CliRunner().invoke(main, ["train", "--corpus", *corpus, "-o", str(out), *sizes])
    assert gru.exit_code == 0, gru.output
    assert "(1 skipped: an empty side)" in gru.output
    attention = CliRunner().invoke(main, ["train", "--corpus", *corpus, "-o", str(out), "--encoder", "attention",
                                          *sizes])
    assert attention.exit_code == 1, attention.output
    assert f"{out} holds a model of --encoder gru" in attention.output
    assert "--restart would replace that gru model" in attention.output


class _Pair:
    def __init__(self, source, target):
        self.source, self.target = source, target


@pytest.fixture(scope="module")
def sources(trained):
    return pad([trained.input_codec.ids(text) for text in
                ["the house", "i am here .", "what is this", "he", "we do not know what to do .", "tom"]])


def test_beam_1_is_greedy(trained, sources):
    greedy = search.greedy(trained.model, *sources)
    beam = search.beam_search(trained.model, *sources, 1, with_greedy=False)
    assert [g.ids for g in greedy] == [b.ids for (b,) in beam]
    for g, (b,) in zip(greedy, beam):
        assert g.log_prob == pytest.approx(b.log_prob, abs=1e-4)  # float32, rows of other batches


def test_hypotheses_carry_the_scorers_log_p(trained, sources):
    found = search.beam_search(trained.model, *sources, 4, nbest=3)
    hyps = [(row, hyp) for row, hyps in enumerate(found) for hyp in hyps]
    src, src_len = sources
    rows = torch.tensor([row for row, _ in hyps])
    trg, trg_len = pad([list(hyp.ids) for _, hyp in hyps], append_eos=True)
    with torch.no_grad():
        ctx = trained.model.source_context(src, src_len).index_select(rows)
        scored = trained.model.score_log_prob(ctx, trg, trg_len)
    assert scored.tolist() == pytest.approx([hyp.log_prob for _, hyp in hyps], abs=1e-4)
    samples = search.sample(trained.model, src, src_len, 3, generator=torch.Generator().manual_seed(1))
    assert all(len(row) == 3 and all(PAD_ID not in s.ids for s in row) for row in samples)


def test_cli_trains_on_a_corpus_and_translates(tmp_path):
    out = tmp_path / "model"
    corpus = [os.path.join(DATA, f"tatoeba.train2k.tok.{side}") for side in ("en", "fr")]
    result = CliRunner().invoke(main, ["train", "--corpus", *corpus, "-o", str(out), "--encoder", "attention",
                                       "--max-updates", "4", "--valid-every", "2", "--batch-size", "16",
                                       "--vocab-size", "150", "--embed-dim", "8", "--hidden-dim", "8",
                                       "--maxout-units", "4", "--output-rank", "4", "--threads", "1", "-q"])
    assert result.exit_code == 0, result.output
    trained = load_encoder_decoder(str(out / "best.pt"))
    assert trained.model.config.encoder == "attention" and trained.model.config.options == {"attention_dim": 0}
    assert "corpus" in trained.info["data"]
    (tmp_path / "in.txt").write_text("the house\n\ni am here .\n")
    result = CliRunner().invoke(main, ["translate", "-m", str(out / "best.pt"), str(tmp_path / "in.txt"),
                                       "--beam", "3", "--nbest", "2", "-o", str(tmp_path / "out.nbest"), "-q"])
    assert result.exit_code == 0, result.output
    ids = [line.split(" ||| ")[0] for line in (tmp_path / "out.nbest").read_text().splitlines()]
    assert ids[0] == "0" and ids[-1] == "2" and "1" in ids
