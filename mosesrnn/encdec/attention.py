"""The attention encoder–decoder of Bahdanau, Cho and Bengio (2015, "Neural Machine Translation by Jointly
Learning to Align and Translate", BCB15): RNNsearch, its App. A.2.

The encoder is a bidirectional GRU; the annotation of source word j is h_j = [h→_j; h←_j] (Sec. 3.2):

    h_j = (1 - z_j) ∘ h_{j-1} + z_j ∘ h~_j,   h~_j = tanh(W E x_j + U [r_j ∘ h_{j-1}])       (A.2.1)
    z_j = σ(W_z E x_j + U_z h_{j-1}),          r_j = σ(W_r E x_j + U_r h_{j-1})

from h_0 = 0, once left to right (h→) and once right to left (h←), both reading the one embedding E.
The decoder is a GRU whose every step reads a context c_i, a weighted sum of the annotations:

    e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j),   α_ij = exp(e_ij) / Σ_k exp(e_ik),   c_i = Σ_j α_ij h_j  (A.1.2)
    s_i = (1 - z_i) ∘ s_{i-1} + z_i ∘ s~_i,   s~_i = tanh(W E y_{i-1} + U [r_i ∘ s_{i-1}] + C c_i)      (A.2.2)
    z_i = σ(W_z E y_{i-1} + U_z s_{i-1} + C_z c_i),   r_i = σ(W_r E y_{i-1} + U_r s_{i-1} + C_r c_i)
    s_0 = tanh(W_s h←_1)
    t~_i = U_o s_i + V_o E y_{i-1} + C_o c_i,   t_i = [max(t~_{i,2j-1}, t~_{i,2j})]_j,   p(y_i) ∝ exp(y_i^T W_o t_i)

U_a h_j is computed once per source (the context's ``keys``, as the paper's footnote advises); padding
positions get α = 0. The deep output reads s_i, as the paper's Eq. 4 writes p(y_i | ...) = g(y_{i-1}, s_i,
c_i) (its App. A.2.2 prints s_{i-1} in t~_i; the newest state is the one that has read y_{i-1} and c_i).
W_o is factorised as G_l G_r through ``output_rank`` (as C14's G, and as GroundHog's RNNsearch through a
rank-620 layer), so the output layer's sizes, bias, self-normalisation and int8 handling are C14's:
``maxout_units`` is l, ``embed_dim`` is m, ``hidden_dim`` is n, the setting ``attention_dim`` is n'.
Biases, which the paper leaves out, sit on the input side (W, U_a, W_s, C_o, G_l), not on U.
Initialisation (BCB15 App. B.1): W_a and U_a ~ N(0, 0.001^2), v_a = 0 (uniform attention to start), the
recurrent U's orthogonal, everything else as the model's rule (N(0, 0.01^2)).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Sequence

import torch
from torch import Tensor, nn

from ..errors import MosesRNNError
from .config import ModelConfig
from .decoder import C14Decoder, SequenceTerms, per_pair
from .encoders import Encoder
from .layers import at_least_float32, lengths_mask
from .packing import host_lengths, packing

__all__ = ["Annotations", "AttentionContext", "BiGRUEncoder", "AttentionDecoder", "gru_step"]


def gru_step(x_proj: Tensor, h: Tensor, U_rz: nn.Module, U: nn.Module) -> Tensor:
    """One GRU step of BCB15 (App. A.2.1-A.2.2): the reset gate acts before U, the update gate on h~.

    x_proj = [W_r x; W_z x; W x] + biases (+ [C_r c; C_z c; C c] in the decoder), (B, 3H); h (B, H);
    U_rz = [U_r; U_z], U: the recurrent matrices. Gates and state in at least float32 (as C14's).
    """
    x_r, x_z, x_h = at_least_float32(x_proj).chunk(3, dim=-1)
    u_r, u_z = at_least_float32(U_rz(h)).chunk(2, dim=-1)
    h = at_least_float32(h)
    r = torch.sigmoid(x_r + u_r)  # reset gate
    z = torch.sigmoid(x_z + u_z)  # update gate
    h_tilde = torch.tanh(x_h + at_least_float32(U(r * h)))  # tanh(W x + U [r ∘ h])
    return (1 - z) * h + z * h_tilde


@dataclass
class Annotations:
    """The encoder's output: h_j = [h→_j; h←_j] of every source word (B, S, 2H), 0 at padding, and the
    source lengths (B,)."""

    h: Tensor
    src_lengths: Tensor

    def index_select(self, index: Tensor) -> "Annotations":
        """Gather rows."""
        return Annotations(self.h.index_select(0, index), self.src_lengths.index_select(0, index))


def _widened(x: Tensor, width: int) -> Tensor:
    """``x`` (B, S, ...) zero-padded (False for bools) to ``width`` positions."""
    if x.size(1) == width:
        return x
    out = x.new_zeros(x.size(0), width, *x.shape[2:])
    out[:, :x.size(1)] = x
    return out


@dataclass
class AttentionContext:
    """The decoder's per-source terms, once per source.

    Attributes:
        h: the annotations (B, S, 2H), 0 at padding.
        keys: U_a h_j + b_a (B, S, A), the alignment model's source half.
        mask: (B, S), True on the real source words.
        s0: s_0 = tanh(W_s h←_1), (B, H).
    """

    h: Tensor
    keys: Tensor
    mask: Tensor
    s0: Tensor

    def index_select(self, index: Tensor) -> "AttentionContext":
        """Gather rows, so that one encoded source can serve several targets."""
        return AttentionContext(*(getattr(self, f.name).index_select(0, index) for f in fields(self)))

    @staticmethod
    def cat(contexts: Sequence["AttentionContext"]) -> "AttentionContext":
        """Stack the rows of several contexts, padding the sources to the longest (masked)."""
        width = max(ctx.h.size(1) for ctx in contexts)
        return AttentionContext(torch.cat([_widened(ctx.h, width) for ctx in contexts]),
                                torch.cat([_widened(ctx.keys, width) for ctx in contexts]),
                                torch.cat([_widened(ctx.mask, width) for ctx in contexts]),
                                torch.cat([ctx.s0 for ctx in contexts]))


class BiGRUEncoder(Encoder):
    """The bidirectional GRU encoder of BCB15 (Sec. 3.2, App. A.2.1): annotations h_j = [h→_j; h←_j].

    Each direction has its own [W_r; W_z; W] (with the biases), [U_r; U_z] and U; both read E.
    """

    recurrent_weights = ("U_rz_fwd.weight", "U_fwd.weight", "U_rz_bwd.weight", "U_bwd.weight")

    def __init__(self, config: ModelConfig):
        super().__init__()
        E, H = config.embed_dim, config.hidden_dim
        self.hidden_dim = H
        self.embed = nn.Embedding(config.src_vocab_size, E)  # E x_j
        self.W_fwd = nn.Linear(E, 3 * H)  # [W→_r; W→_z; W→]
        self.U_rz_fwd = nn.Linear(H, 2 * H, bias=False)  # [U→_r; U→_z]
        self.U_fwd = nn.Linear(H, H, bias=False)  # U→
        self.W_bwd = nn.Linear(E, 3 * H)  # the same for h←
        self.U_rz_bwd = nn.Linear(H, 2 * H, bias=False)
        self.U_bwd = nn.Linear(H, H, bias=False)

    def forward(self, src: Tensor, src_lengths: Tensor) -> Annotations:
        """Annotate sources (B, S) of lengths (B,)."""
        B, S = src.shape
        mask = lengths_mask(src_lengths, S)  # (B, S)
        e_x = self.embed(src)  # (B, S, E)
        x_fwd, x_bwd = self.W_fwd(e_x), self.W_bwd(e_x)  # (B, S, 3H) each, all steps in one matmul
        zeros = at_least_float32(x_fwd).new_zeros(B, self.hidden_dim)  # h_0 = 0
        h, forward = zeros, []
        for j in range(S):
            h = torch.where(mask[:, j, None], gru_step(x_fwd[:, j], h, self.U_rz_fwd, self.U_fwd), h)
            forward.append(h)
        h, backward = zeros, [zeros] * S
        for j in reversed(range(S)):  # a row starts at its own last word: padding leaves h← at 0
            h = torch.where(mask[:, j, None], gru_step(x_bwd[:, j], h, self.U_rz_bwd, self.U_bwd), h)
            backward[j] = h
        h = torch.cat([torch.stack(forward, 1), torch.stack(backward, 1)], dim=-1)  # (B, S, 2H)
        return Annotations(h * mask.unsqueeze(-1).to(h.dtype), src_lengths)


class AttentionDecoder(nn.Module):
    """The GRU decoder of BCB15 with its alignment model and a maxout deep output (see the module docstring)."""

    recurrent_weights = ("U_rz.weight", "U.weight")
    output_layer = "G_l"  # the K-way output matrix, read by rows when the normaliser is skipped

    def __init__(self, config: ModelConfig):
        super().__init__()
        E, H, M, R = config.embed_dim, config.hidden_dim, config.maxout_units, config.output_rank
        A = config.options["attention_dim"] or H  # n' = n in the paper
        self.embed_dim, self.maxout_units = E, M
        self.embed = nn.Embedding(config.trg_vocab_size, E)  # E y
        self.W = nn.Linear(E, 3 * H)  # [W_r; W_z; W], with the biases
        self.U_rz = nn.Linear(H, 2 * H, bias=False)  # [U_r; U_z]
        self.U = nn.Linear(H, H, bias=False)
        self.C = nn.Linear(2 * H, 3 * H, bias=False)  # [C_r; C_z; C]
        self.W_s = nn.Linear(H, H)  # s_0 = tanh(W_s h←_1)
        self.W_a = nn.Linear(H, A, bias=False)  # the alignment model (App. A.1.2)
        self.U_a = nn.Linear(2 * H, A)  # carries its bias
        self.v_a = nn.Linear(A, 1, bias=False)
        self.U_o = nn.Linear(H, 2 * M, bias=False)  # the deep output t~ (App. A.2.2)
        self.V_o = nn.Linear(E, 2 * M, bias=False)
        self.C_o = nn.Linear(2 * H, 2 * M)  # carries the bias of t~
        self.G_r = nn.Linear(M, R, bias=False)  # W_o = G_l G_r
        self.G_l = nn.Linear(R, config.trg_vocab_size)  # with the softmax bias

    @torch.no_grad()
    def reset_own_parameters(self):
        """BCB15 App. B.1: W_a, U_a ~ N(0, 0.001^2) and v_a = 0."""
        self.W_a.weight.normal_(0.0, 0.001)
        self.U_a.weight.normal_(0.0, 0.001)
        self.v_a.weight.zero_()

    # the output layer and the previous words as C14's (the same G = G_l G_r, embeddings and normaliser)
    previous_embeddings = C14Decoder.previous_embeddings
    logits = C14Decoder.logits
    _target_log_probs = C14Decoder._target_log_probs
    _target_terms = C14Decoder._target_terms
    _target_logits = C14Decoder._target_logits

    # -- the equations ---------------------------------------------------------------------------

    def context(self, enc: Annotations) -> AttentionContext:
        """U_a h_j once per source word, the mask and s_0 = tanh(W_s h←_1)."""
        H = enc.h.size(-1) // 2
        return AttentionContext(h=enc.h, keys=self.U_a(enc.h), mask=lengths_mask(enc.src_lengths, enc.h.size(1)),
                                s0=torch.tanh(self.W_s(enc.h[:, 0, H:])))

    def initial_state(self, ctx: AttentionContext) -> Tensor:
        """s_0, shape (B, H), in at least float32."""
        return at_least_float32(ctx.s0)

    def attend(self, ctx: AttentionContext, s: Tensor) -> Tensor:
        """c_i = Σ_j α_ij h_j from s_{i-1} (n, H), against the first n rows of ``ctx``; (n, 2H)."""
        n = s.size(0)
        e = self.v_a(torch.tanh(self.W_a(s).unsqueeze(1) + ctx.keys[:n])).squeeze(-1)  # (n, S)
        e = at_least_float32(e).masked_fill(~ctx.mask[:n], float("-inf"))
        # an empty source (Moses decodes an empty line to an empty one) has no word to attend to: its softmax over
        # nothing is NaN, and its c_i = 0, the sum over no annotation
        alpha = torch.softmax(e, dim=-1).masked_fill(~ctx.mask[:n], 0.0)  # (n, S)
        h = ctx.h[:n]
        return torch.bmm(alpha.unsqueeze(1).to(h.dtype), h).squeeze(1)  # (n, 2H)

    def next_state(self, x_proj: Tensor, s: Tensor, c: Tensor) -> Tensor:
        """s_i from x_proj = W E y_{i-1} (+ biases) (n, 3H), s_{i-1} (n, H) and c_i (n, 2H)."""
        return gru_step(at_least_float32(x_proj) + at_least_float32(self.C(c)), s, self.U_rz, self.U)

    def readout(self, s: Tensor, e_prev: Tensor, c: Tensor) -> Tensor:
        """t~ = U_o s_i + V_o E y_{i-1} + C_o c_i, then t_j = max(t~_{2j-1}, t~_{2j}); (..., M)."""
        t = self.U_o(s) + self.V_o(e_prev) + self.C_o(c)  # (..., 2M)
        return t.unflatten(-1, (self.maxout_units, 2)).amax(-1)

    # -- three evaluation orders -----------------------------------------------------------------

    def padded_readout(self, ctx: AttentionContext, trg: Tensor) -> Tensor:
        """t_i of every step of targets (B, T) in the padded order (padding steps too); (B, T, M)."""
        e_prev = self.previous_embeddings(trg)  # (B, T, E)
        x_proj = self.W(e_prev)  # (B, T, 3H)
        s, states, contexts = self.initial_state(ctx), [], []
        for i in range(trg.size(1)):
            c = self.attend(ctx, s)
            s = self.next_state(x_proj[:, i], s, c)
            states.append(s)
            contexts.append(c)
        return self.readout(torch.stack(states, 1), e_prev, torch.stack(contexts, 1))

    def token_log_probs(self, ctx: AttentionContext, trg: Tensor, trg_lengths: Tensor) -> Tensor:
        """Per-step log p(y_i | y_<i, x) of targets (B, T) ending in EOS, shape (B, T); 0 at padding."""
        logits = self.logits(self.padded_readout(ctx, trg))  # (B, T, K)
        log_p = logits.gather(-1, trg.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)
        return log_p.masked_fill(~lengths_mask(trg_lengths, trg.size(1)), 0.0)

    def sequence_log_prob(self, ctx: AttentionContext, trg: Tensor, trg_lengths: Tensor,
                          row_block: int = 512, normalizer: str = "exact", lengths=None) -> Tensor:
        """log p(y | x) of targets (B, T) ending in EOS, in the fast scoring order (C14's: rows sorted by
        length, the recurrence on the rows still going, the output layer blockwise on the real positions);
        (B,). ``normalizer="skip"``: the targets' raw scores g_y . t + b_y (a self-normalised model's).
        ``lengths``: the host's copy of ``trg_lengths``, where the caller has one (:mod:`~mosesrnn.encdec.packing`)."""
        order, rows, t_pooled, targets = self._packed_readout(ctx, trg, trg_lengths, lengths)
        if normalizer == "skip":
            token_scores = self._target_logits(self.G_r(t_pooled), targets)
        elif normalizer == "exact":
            token_scores = self._target_log_probs(t_pooled, targets, row_block)
        else:
            raise MosesRNNError(f"normalizer must be exact or skip, not {normalizer!r}")
        return per_pair(token_scores, rows, order)

    def sequence_terms(self, ctx: AttentionContext, trg: Tensor, trg_lengths: Tensor,
                       row_block: int = 512) -> SequenceTerms:
        """log p(y | x) and the sums of log Z and (log Z)^2 over each target's positions (fast order)."""
        order, rows, t_pooled, targets = self._packed_readout(ctx, trg, trg_lengths)
        target_logits, log_z = self._target_terms(self.G_r(t_pooled), targets, row_block)
        return SequenceTerms(per_pair(target_logits - log_z, rows, order), per_pair(log_z, rows, order),
                             per_pair(log_z.square(), rows, order))

    def _packed_readout(self, ctx: AttentionContext, trg: Tensor, trg_lengths: Tensor,
                        lengths=None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The deep outputs t_i of the real positions, rows sorted by decreasing length, step-major (the order
        and the positions worked out on the host: :mod:`~mosesrnn.encdec.packing`).

        Returns (order (B,): the sorted rows' input positions; rows (N,); t (N, M); targets (N,))."""
        pack = packing(host_lengths(lengths, trg_lengths), trg.device)
        trg, ctx = trg[pack.order], ctx.index_select(pack.order)
        e_prev = self.previous_embeddings(trg)  # (B, T, E)
        x_proj = self.W(e_prev)  # (B, T, 3H)
        s, states, contexts = self.initial_state(ctx), [], []
        for i, n in enumerate(pack.active):
            c = self.attend(ctx, s[:n])  # the first n rows of ctx
            s = self.next_state(x_proj[:n, i], s[:n], c)
            states.append(s)
            contexts.append(c)
        rows, steps = pack.rows, pack.steps  # (N,) step-major
        t_pooled = self.readout(torch.cat(states), e_prev[rows, steps], torch.cat(contexts))  # (N, M)
        return pack.order, rows, t_pooled, trg[rows, steps]

    def step(self, ctx: AttentionContext, prev_words: Tensor | None, s: Tensor) -> tuple[Tensor, Tensor]:
        """One step from s_{i-1} (B, H) and y_{i-1} (B,) (None at i = 1: E y_0 = 0; s = :meth:`initial_state`).

        Returns (log p(y_i | ...) over the whole target vocabulary (B, K); s_i (B, H))."""
        if prev_words is None:
            e_prev = s.new_zeros(s.size(0), self.embed_dim, dtype=self.embed.weight.dtype)
        else:
            e_prev = self.embed(prev_words)  # (B, E)
        c = self.attend(ctx, s)
        s = self.next_state(self.W(e_prev), s, c)
        return torch.log_softmax(self.logits(self.readout(s, e_prev, c)), dim=-1), s
