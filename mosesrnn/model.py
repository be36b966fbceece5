"""The RNN Encoder-Decoder of Cho et al. (2014), Sec. 2.2-2.3 and Appendix A.

Parameters and tensors carry the paper's names (W, U, C, V, O_h, G_l, c, m_x, h,
r, z); a prime (decoder) is written `dec_`, and the three gate matrices of each
GRU are fused into one Linear in the order [reset r; update z; candidate h~].
Biases, which the paper omits "to make the equations uncluttered", sit on the
input-side Linears and on the output layer; the recurrent matrices U have none.

Token ids: see `mosesrnn.config` (PAD_ID, UNK_ID, EOS_ID). Sources hold word ids
without EOS; targets hold word ids followed by EOS, so that log p(y|x) includes
the probability of ending the phrase. Batches are right-padded with PAD_ID and
their lengths are given explicitly.
"""

import pickle
from dataclasses import dataclass, fields

import torch
from torch import Tensor, nn

from mosesrnn.config import ModelConfig
from mosesrnn.files import atomic_file

FORMAT_VERSION = 1
_CHECKPOINT_KEYS = ("format_version", "config", "state_dict")


@dataclass
class SourceEncoding:
    """Everything the decoder needs from a batch of sources, computed once per source.

    Attributes:
        c: phrase representation c = tanh(V h_N), shape (B, H).
        m_x: mean source word embedding, shape (B, E).
        h0: initial decoder state h'_0 = tanh(V' c), shape (B, H).
        gate_context: [C_r c; C_z c; C c], shape (B, 3H).
        output_context: O_c c + O_w m_x + output bias, shape (B, 2 * maxout_units).
    """

    c: Tensor
    m_x: Tensor
    h0: Tensor
    gate_context: Tensor
    output_context: Tensor

    def index_select(self, index: Tensor) -> "SourceEncoding":
        """Gather rows, so that one encoded source can serve several targets."""
        return SourceEncoding(*(getattr(self, f.name).index_select(0, index) for f in fields(self)))


def _gru_update(x_proj: Tensor, hU: Tensor, h: Tensor) -> Tensor:
    """One GRU step (Eqs. 5-8; Appendix A) from precomputed projections.

    x_proj = [W_r e; W_z e; W e] (+ biases) and hU = [U_r h; U_z h; U h], both (B, 3H).
    The decoder passes hU + [C_r c; C_z c; C c], which gives exactly its equations.
    """
    x_r, x_z, x_h = x_proj.chunk(3, dim=-1)
    u_r, u_z, u_h = hU.chunk(3, dim=-1)
    r = torch.sigmoid(x_r + u_r)  # reset gate
    z = torch.sigmoid(x_z + u_z)  # update gate
    h_tilde = torch.tanh(x_h + r * u_h)
    return z * h + (1 - z) * h_tilde  # (B, H)


def _at_least_float32(x: Tensor) -> Tensor:
    """``x`` in float32, or in its own dtype if that is wider (float64 in tests)."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


def _log_normaliser(logits: Tensor, targets: Tensor) -> Tensor:
    """log sum_j exp(logits_j) per row of (n, K) logits, shape (n,).

    Read off the fused log_softmax at the target (x_y - log_softmax(x)_y), which on CPU is
    about twice as fast as logsumexp's chain of max, sub, exp, sum and log kernels.
    """
    index = targets.unsqueeze(-1)  # (n, 1)
    return (logits.gather(-1, index) - torch.log_softmax(logits, dim=-1).gather(-1, index)).squeeze(-1)


def _lengths_mask(lengths: Tensor, max_len: int) -> Tensor:
    """(B, T) bool mask, True on the real (unpadded) positions."""
    return torch.arange(max_len, device=lengths.device) < lengths.unsqueeze(1)


class RNNEncoderDecoder(nn.Module):
    """GRU encoder, GRU decoder conditioned on c, and a maxout output layer."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        E, H, M, R = config.embed_dim, config.hidden_dim, config.maxout_units, config.output_rank
        # Encoder (A.1).
        self.src_embed = nn.Embedding(config.src_vocab_size, E)  # e(x)
        self.enc_W = nn.Linear(E, 3 * H)  # [W_r; W_z; W]
        self.enc_U = nn.Linear(H, 3 * H, bias=False)  # [U_r; U_z; U]
        self.enc_V = nn.Linear(H, H)  # V
        # Decoder (A.1.1).
        self.trg_embed = nn.Embedding(config.trg_vocab_size, E)  # e(y)
        self.dec_W = nn.Linear(E, 3 * H)  # [W'_r; W'_z; W']
        self.dec_U = nn.Linear(H, 3 * H, bias=False)  # [U'_r; U'_z; U']
        self.dec_C = nn.Linear(H, 3 * H, bias=False)  # [C_r; C_z; C]
        self.dec_V = nn.Linear(H, H)  # V'
        # Output layer: s = O_h h' + O_y e(y_{t-1}) + O_c c + O_w m_x. The paper writes
        # O_y y_{t-1} with a one-hot y; like its input matrices we factor it through e(y).
        self.O_h = nn.Linear(H, 2 * M, bias=False)
        self.O_y = nn.Linear(E, 2 * M, bias=False)
        self.O_c = nn.Linear(H, 2 * M)  # carries the bias of s
        self.O_w = nn.Linear(E, 2 * M, bias=False)
        # G = G_l G_r. The paper gives G_r as 100 x 1000, but it multiplies the
        # maxout output s, which has maxout_units (500) elements: G_r is R x M.
        self.G_r = nn.Linear(M, R, bias=False)
        self.G_l = nn.Linear(R, config.trg_vocab_size)  # K x R, with the softmax bias
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):
        """Initialise as in Sec. 4.1.1.

        Weights ~ N(0, init_std^2) and biases 0, except the recurrent matrices (each of
        U_r, U_z, U and U'_r, U'_z, U'): the left singular vectors of a white Gaussian
        matrix times `recurrent_init_scale` (Saxe et al., 2014). The paper's text says
        the scale is 0.01; its GroundHog code used 1.0 (`rec_weight_scale`), our default.
        """
        H = self.config.hidden_dim
        for name, param in self.named_parameters():
            if name.endswith("bias"):
                param.zero_()
            elif name in ("enc_U.weight", "dec_U.weight"):
                for block in param.split(H, dim=0):  # (H, H) each
                    left, _, _ = torch.linalg.svd(torch.randn(H, H, device=param.device))
                    block.copy_(left * self.config.recurrent_init_scale)
            else:
                param.normal_(0.0, self.config.init_std)

    def num_parameters(self) -> int:
        """Number of trainable scalars."""
        return sum(p.numel() for p in self.parameters())

    def encode(self, src: Tensor, src_lengths: Tensor) -> SourceEncoding:
        """Encode sources `src` (B, S) of lengths `src_lengths` (B,), all >= 1."""
        B, S = src.shape
        mask = _lengths_mask(src_lengths, S)  # (B, S)
        e_x = self.src_embed(src)  # (B, S, E)
        x_proj = self.enc_W(e_x)  # (B, S, 3H), all steps in one matmul
        h = x_proj.new_zeros(B, self.config.hidden_dim)  # h_0 = 0
        for t in range(S):
            h_new = _gru_update(x_proj[:, t], self.enc_U(h), h)
            h = torch.where(mask[:, t, None], h_new, h)  # frozen after the end: h = h_N
        c = torch.tanh(self.enc_V(h))  # (B, H)   c = tanh(V h_N)
        real = mask.unsqueeze(-1).to(e_x.dtype)
        m_x = (e_x * real).sum(1) / src_lengths.clamp(min=1).unsqueeze(1).to(e_x.dtype)  # (B, E)
        return SourceEncoding(
            c=c,
            m_x=m_x,
            h0=torch.tanh(self.dec_V(c)),  # h'_0 = tanh(V' c)
            gate_context=self.dec_C(c),  # (B, 3H)
            output_context=self.O_c(c) + self.O_w(m_x),  # (B, 2M)
        )

    def initial_state(self, enc: SourceEncoding) -> Tensor:
        """The decoder's initial state h'_0, shape (B, H)."""
        return enc.h0

    def _maxout(self, h: Tensor, e_prev: Tensor, output_context: Tensor) -> Tensor:
        """s = O_h h' + O_y e(y_{t-1}) + O_c c + O_w m_x, then s_i = max(s_{2i-1}, s_{2i})."""
        s = self.O_h(h) + self.O_y(e_prev) + output_context  # (..., 2M)
        return s.unflatten(-1, (self.config.maxout_units, 2)).amax(-1)  # (..., M)

    def _logits(self, s_pooled: Tensor) -> Tensor:
        """g_j . s for every word j, with G = G_l G_r; in at least float32 precision."""
        return _at_least_float32(self.G_l(self.G_r(s_pooled)))  # (..., K)

    def output_log_probs(self, s_pooled: Tensor, targets: Tensor) -> Tensor:
        """log p(y_t = targets | ...) from maxout outputs (B, T, M) and ids (B, T) -> (B, T)."""
        logits = self._logits(s_pooled)  # (B, T, K)
        return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)

    def token_log_probs(self, enc: SourceEncoding, trg: Tensor, trg_lengths: Tensor) -> Tensor:
        """Per-step log p(y_t | y_<t, x) of targets `trg` (B, T) ending in EOS; 0 at padding."""
        B, T = trg.shape
        mask = _lengths_mask(trg_lengths, T)  # (B, T)
        e_y = self.trg_embed(trg)  # (B, T, E)
        e_prev = torch.cat([e_y.new_zeros(B, 1, e_y.size(-1)), e_y[:, :-1]], dim=1)  # e(y_0) = 0
        x_proj = self.dec_W(e_prev)  # (B, T, 3H)
        h = enc.h0
        states = []
        for t in range(T):
            h_new = _gru_update(x_proj[:, t], self.dec_U(h) + enc.gate_context, h)
            h = torch.where(mask[:, t, None], h_new, h)
            states.append(h)
        s_pooled = self._maxout(torch.stack(states, dim=1), e_prev, enc.output_context.unsqueeze(1))
        log_p = self.output_log_probs(s_pooled, trg)  # (B, T)
        return log_p.masked_fill(~mask, 0.0)

    def decode_log_prob(self, enc: SourceEncoding, trg: Tensor, trg_lengths: Tensor) -> Tensor:
        """log p(y | x) = sum_t log p(y_t | y_<t, x) over the real target steps, shape (B,)."""
        return self.token_log_probs(enc, trg, trg_lengths).sum(dim=1)

    def score_log_prob(self, enc: SourceEncoding, trg: Tensor, trg_lengths: Tensor,
                       row_block: int = 512) -> Tensor:
        """log p(y | x) as `decode_log_prob`, evaluated in the order that is fastest for scoring.

        The same equations, three changes of evaluation order: (1) rows are sorted by decreasing
        length, so step t runs the GRU on the n_t rows still going and never on padding; (2) the
        maxout and output layer run on the real (row, step) positions only; (3) the softmax
        normaliser log sum_j exp(g_j . s) is read off a fused log_softmax over blocks of
        `row_block` positions, so each (row_block, K) block of logits stays in cache, and the
        target's logit is the row-wise dot g_y . s (the full log_softmax is never materialised).
        States, gates and the normaliser are at least float32, also under bf16 autocast.
        Returns shape (B,).
        """
        order = torch.argsort(trg_lengths, descending=True, stable=True)  # (B,)
        trg, enc = trg[order], enc.index_select(order)
        active = _lengths_mask(trg_lengths[order], trg.size(1)).sum(0).tolist()  # n_t per step t
        e_y = self.trg_embed(trg)  # (B, T, E)
        e_prev = torch.cat([e_y.new_zeros(e_y.size(0), 1, e_y.size(-1)), e_y[:, :-1]], dim=1)
        x_proj = self.dec_W(e_prev)  # (B, T, 3H)
        h, gate_context, states = _at_least_float32(enc.h0), _at_least_float32(enc.gate_context), []
        for t, n in enumerate(active):
            hU = _at_least_float32(self.dec_U(h[:n])) + gate_context[:n]  # (n, 3H)
            h = _gru_update(_at_least_float32(x_proj[:n, t]), hU, h[:n])
            states.append(h)  # (n_t, H)
        rows = torch.cat([torch.arange(n, device=trg.device) for n in active])  # (N,) step-major
        steps = torch.cat([torch.full((n,), t, device=trg.device) for t, n in enumerate(active)])
        s_pooled = self._maxout(torch.cat(states), e_prev[rows, steps], enc.output_context[rows])  # (N, M)
        token_log_p = self._target_log_probs(s_pooled, trg[rows, steps], row_block)  # (N,)
        log_p = token_log_p.new_zeros(trg.size(0)).index_add_(0, rows, token_log_p)  # (B,)
        return torch.empty_like(log_p).index_copy_(0, order, log_p)

    def _target_log_probs(self, s_pooled: Tensor, targets: Tensor, row_block: int) -> Tensor:
        """log p(y_t = targets) from maxout outputs (N, M) and ids (N,), blockwise; shape (N,)."""
        g_r_s = self.G_r(s_pooled)  # (N, R)
        g_y = _at_least_float32(self.G_l.weight[targets])  # (N, R)
        target_logits = (_at_least_float32(g_r_s) * g_y).sum(-1) + self.G_l.bias[targets]
        blocks = zip(g_r_s.split(row_block), targets.split(row_block))  # (row_block, R), (row_block,)
        normaliser = torch.cat([_log_normaliser(_at_least_float32(self.G_l(block)), block_targets)
                                for block, block_targets in blocks])
        return target_logits - normaliser  # (N,)

    def log_prob(self, src: Tensor, src_lengths: Tensor, trg: Tensor, trg_lengths: Tensor) -> Tensor:
        """log p(y | x) for padded sources (B, S) and EOS-terminated targets (B, T), shape (B,)."""
        return self.decode_log_prob(self.encode(src, src_lengths), trg, trg_lengths)

    def step(self, enc: SourceEncoding, prev_words: Tensor | None, h: Tensor) -> tuple[Tensor, Tensor]:
        """One decoder step from state h'_{t-1} (B, H) and word ids y_{t-1} (B,).

        Pass prev_words=None at t = 1 (e(y_0) = 0). Returns (log p(y_t | ...) over the
        whole target vocabulary, shape (B, K); the new state h'_t, shape (B, H)).
        """
        if prev_words is None:
            e_prev = enc.m_x.new_zeros(h.size(0), self.config.embed_dim)
        else:
            e_prev = self.trg_embed(prev_words)  # (B, E)
        h = _gru_update(self.dec_W(e_prev), self.dec_U(h) + enc.gate_context, h)
        s_pooled = self._maxout(h, e_prev, enc.output_context)  # (B, M)
        return torch.log_softmax(self._logits(s_pooled), dim=-1), h


def save_model(path: str, model: RNNEncoderDecoder, extra: dict) -> None:
    """Write model config, weights and `extra` (plain dicts/lists/str/numbers) atomically."""
    clash = sorted(set(extra) & set(_CHECKPOINT_KEYS))
    if clash:
        raise ValueError(f"extra must not use the reserved keys: {', '.join(clash)}")
    checkpoint = {"format_version": FORMAT_VERSION, "config": model.config.to_dict(),
                  "state_dict": model.state_dict(), **extra}
    with atomic_file(path) as stream:
        torch.save(checkpoint, stream)


def load_model(path: str, map_location="cpu") -> tuple[RNNEncoderDecoder, dict]:
    """Load a `save_model` file safely (weights_only); return (model in eval mode, extra)."""
    try:
        checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        raise ValueError(f"{path}: not a mosesrnn model file, or holds objects that are unsafe "
                         f"to load: {e}") from e
    if not isinstance(checkpoint, dict) or any(k not in checkpoint for k in _CHECKPOINT_KEYS):
        raise ValueError(f"{path}: not a mosesrnn model file")
    if checkpoint["format_version"] != FORMAT_VERSION:
        raise ValueError(f"{path}: unsupported model format version {checkpoint['format_version']}")
    with torch.device("meta"):  # skip the random initialisation; the weights are loaded below
        model = RNNEncoderDecoder(ModelConfig.from_dict(checkpoint["config"]))
    model.load_state_dict(checkpoint["state_dict"], assign=True)
    extra = {k: v for k, v in checkpoint.items() if k not in _CHECKPOINT_KEYS}
    return model.eval(), extra
