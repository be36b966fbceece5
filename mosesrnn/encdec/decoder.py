"""The decoder of C14 (Sec. 2.2, App. A.1.1-A.1.2): a GRU conditioned on c, and a maxout output layer.

Parameters carry the paper's names with the prime of the decoder left out: e(y), [W'_r; W'_z; W'],
[U'_r; U'_z; U'], [C_r; C_z; C], V', O_h, O_y, O_c, O_w and G = G_l G_r. The equations live in
three small methods, :meth:`C14Decoder.next_state`, :meth:`~C14Decoder.readout` and
:meth:`~C14Decoder.logits`; three evaluation orders use them: :meth:`~C14Decoder.token_log_probs`
(padded batches, for training), :meth:`~C14Decoder.sequence_log_prob` (packed by length, for fast
scoring) and :meth:`~C14Decoder.step` (one step at a time, for search and sampling).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import NamedTuple, Sequence

import torch
from torch import Tensor, nn

from ..errors import MosesRNNError
from .compiled import active_rows, recurrent_step
from .config import NORMALIZERS, ModelConfig
from .encoders import EncoderOutput
from .layers import at_least_float32, gru_update, lengths_mask, log_normaliser
from .packing import host_lengths, packing

__all__ = ["DecoderContext", "SequenceTerms", "per_pair", "C14Decoder"]

class SequenceTerms(NamedTuple):
    """Per-pair sums over the predicted positions t of a target (EOS included), each shape (B,).

    Attributes:
        log_p: log p(y | x) = sum_t (g_{y_t} . s_t + b_{y_t} - log Z_t).
        log_z: sum_t log Z_t, with log Z_t = log sum_j exp(g_j . s_t + b_j).
        log_z_sq: sum_t (log Z_t)^2 (the self-normalisation penalty's term).
    """

    log_p: Tensor
    log_z: Tensor
    log_z_sq: Tensor


def per_pair(values: Tensor, rows: Tensor, order: Tensor) -> Tensor:
    """Sum per-position ``values`` (N,) into their ``rows`` (N,) of the sorted batch, then put the rows
    back in the input order (``order`` sorted them); shape (B,)."""
    summed = values.new_zeros(order.size(0)).index_add_(0, rows, values)  # (B,) sorted
    return torch.empty_like(summed).index_copy_(0, order, summed)


@dataclass
class DecoderContext:
    """The decoder's per-source terms, computed once per source and shared by all its targets.

    Attributes:
        h0: initial state h'_0 = tanh(V' c), shape (B, H).
        gate_context: [C_r c; C_z c; C c], shape (B, 3H).
        output_context: O_c c + O_w m_x + the output bias, shape (B, 2M).
    """

    h0: Tensor
    gate_context: Tensor
    output_context: Tensor

    def index_select(self, index: Tensor) -> "DecoderContext":
        """Gather rows, so that one encoded source can serve several targets."""
        return DecoderContext(*(getattr(self, f.name).index_select(0, index) for f in fields(self)))

    @staticmethod
    def cat(contexts: Sequence["DecoderContext"]) -> "DecoderContext":
        """Stack the rows of several contexts into one."""
        return DecoderContext(*(torch.cat([getattr(ctx, f.name) for ctx in contexts])
                                for f in fields(DecoderContext)))


class C14Decoder(nn.Module):
    """GRU decoder conditioned on c at every step, with a maxout output layer and G = G_l G_r."""

    recurrent_weights = ("U.weight",)
    output_layer = "G_l"  # the K-way output matrix, read by rows when the normaliser is skipped
    compiles_steps = True  # next_state runs through recurrent_step (mosesrnn.encdec.compiled)

    def __init__(self, config: ModelConfig):
        super().__init__()
        E, H, M, R = config.embed_dim, config.hidden_dim, config.maxout_units, config.output_rank
        self.embed_dim, self.maxout_units = E, M
        self.embed = nn.Embedding(config.trg_vocab_size, E)  # e(y)
        self.W = nn.Linear(E, 3 * H)  # [W'_r; W'_z; W']
        self.U = nn.Linear(H, 3 * H, bias=False)  # [U'_r; U'_z; U']
        self.C = nn.Linear(H, 3 * H, bias=False)  # [C_r; C_z; C]
        self.V = nn.Linear(H, H)  # V'
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

    # -- the equations ---------------------------------------------------------------------------

    def context(self, enc: EncoderOutput) -> DecoderContext:
        """The per-source terms of the equations below, from the encoder's c and m_x."""
        return DecoderContext(
            h0=torch.tanh(self.V(enc.c)),  # h'_0 = tanh(V' c)
            gate_context=self.C(enc.c),  # (B, 3H)
            output_context=self.O_c(enc.c) + self.O_w(enc.m_x),  # (B, 2M)
        )

    def initial_state(self, ctx: DecoderContext) -> Tensor:
        """h'_0, shape (B, H), in at least float32 (states stay so under bf16 autocast)."""
        return at_least_float32(ctx.h0)

    def previous_embeddings(self, trg: Tensor) -> Tensor:
        """e(y_{t-1}) for every step of targets (B, T), with e(y_0) = 0; shape (B, T, E)."""
        e_y = self.embed(trg)  # (B, T, E)
        return torch.cat([e_y.new_zeros(e_y.size(0), 1, e_y.size(-1)), e_y[:, :-1]], dim=1)

    def next_state(self, x_proj: Tensor, h: Tensor, gate_context: Tensor) -> Tensor:
        """h'_t from x_proj = W' e(y_{t-1}) (+ bias) (B, 3H), h'_{t-1} (B, H) and [C_r c; C_z c; C c]."""
        hU = at_least_float32(self.U(h)) + at_least_float32(gate_context)  # (B, 3H)
        return gru_update(at_least_float32(x_proj), hU, h)

    def readout(self, h: Tensor, e_prev: Tensor, output_context: Tensor) -> Tensor:
        """s = O_h h' + O_y e(y_{t-1}) + O_c c + O_w m_x, then s_i = max(s_{2i-1}, s_{2i}); (..., M)."""
        s = self.O_h(h) + self.O_y(e_prev) + output_context  # (..., 2M)
        return s.unflatten(-1, (self.maxout_units, 2)).amax(-1)

    def logits(self, s_pooled: Tensor) -> Tensor:
        """g_j . s for every word j, with G = G_l G_r; in at least float32 precision, (..., K)."""
        return at_least_float32(self.G_l(self.G_r(s_pooled)))

    # -- three evaluation orders -----------------------------------------------------------------

    def token_log_probs(self, ctx: DecoderContext, trg: Tensor, trg_lengths: Tensor) -> Tensor:
        """Per-step log p(y_t | y_<t, x) of targets (B, T) ending in EOS, shape (B, T); 0 at padding."""
        mask = lengths_mask(trg_lengths, trg.size(1))  # (B, T)
        e_prev = self.previous_embeddings(trg)  # (B, T, E)
        x_proj = self.W(e_prev)  # (B, T, 3H)
        h, states = self.initial_state(ctx), []
        for t in range(trg.size(1)):
            h = torch.where(mask[:, t, None], self.next_state(x_proj[:, t], h, ctx.gate_context), h)
            states.append(h)
        logits = self.logits(self.readout(torch.stack(states, dim=1), e_prev, ctx.output_context.unsqueeze(1)))
        log_p = logits.gather(-1, trg.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)  # (B, T)
        return log_p.masked_fill(~mask, 0.0)

    def sequence_log_prob(self, ctx: DecoderContext, trg: Tensor, trg_lengths: Tensor,
                          row_block: int = 512, normalizer: str = "exact", lengths=None) -> Tensor:
        """log p(y | x) of targets (B, T) ending in EOS, evaluated in the order fastest for scoring; (B,).

        The same equations as :meth:`token_log_probs`, three changes of evaluation order: (1) rows
        are sorted by decreasing length, so step t runs the GRU on the n_t rows still going and
        never on padding; (2) the maxout and output layer run on the real (row, step) positions
        only; (3) the softmax normaliser log sum_j exp(g_j . s) is read off a fused log_softmax
        over blocks of ``row_block`` positions, so each (row_block, K) block of logits stays in
        cache, and the target's logit is the row-wise dot g_y . s (the full log_softmax is never
        materialised). States, gates and the normaliser are at least float32, also under bf16.

        ``normalizer="skip"`` (a self-normalised model, see :data:`~mosesrnn.encdec.config.NORMALIZERS`): the sum of the
        targets' raw scores g_y . s + b_y, the rows of G_l gathered for the target ids alone; no
        (N, K) matmul, no normaliser. It equals log p(y | x) + the sum of log Z over the positions.

        ``lengths``: the host's copy of ``trg_lengths`` (a numpy array), where the caller has one: the order and
        the positions are then worked out without reading the device back (:mod:`~mosesrnn.encdec.packing`).
        """
        order, rows, s_pooled, targets = self._packed_readout(ctx, trg, trg_lengths, lengths)
        if normalizer == "skip":
            token_scores = self._target_logits(self.G_r(s_pooled), targets)  # (N,)
        elif normalizer == "exact":
            token_scores = self._target_log_probs(s_pooled, targets, row_block)  # (N,)
        else:
            raise MosesRNNError(f"normalizer must be one of {', '.join(NORMALIZERS)}, not {normalizer!r}")
        return per_pair(token_scores, rows, order)

    def sequence_terms(self, ctx: DecoderContext, trg: Tensor, trg_lengths: Tensor,
                       row_block: int = 512) -> SequenceTerms:
        """log p(y | x) and the sums of log Z and (log Z)^2 over each target's positions, in the order of
        :meth:`sequence_log_prob` (training with the self-normalisation penalty, validation)."""
        order, rows, s_pooled, targets = self._packed_readout(ctx, trg, trg_lengths)
        target_logits, log_z = self._target_terms(self.G_r(s_pooled), targets, row_block)  # (N,), (N,)
        return SequenceTerms(per_pair(target_logits - log_z, rows, order), per_pair(log_z, rows, order),
                             per_pair(log_z.square(), rows, order))

    def _packed_readout(self, ctx: DecoderContext, trg: Tensor, trg_lengths: Tensor,
                        lengths=None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The maxout outputs of the real positions, rows sorted by decreasing length, step-major.

        Returns (order (B,): the sorted rows' input positions; rows (N,): each position's sorted row;
        s_pooled (N, M); targets (N,): y_t at each position)."""
        pack = packing(host_lengths(lengths, trg_lengths), trg.device)  # the bookkeeping, on the host
        trg, ctx = trg[pack.order], ctx.index_select(pack.order)
        e_prev = self.previous_embeddings(trg)  # (B, T, E)
        x_proj = self.W(e_prev)  # (B, T, 3H)
        h, states = self.initial_state(ctx), []
        step, batch = recurrent_step(self, "next_state"), trg.size(0)
        for t, n in enumerate(pack.active):
            computed = active_rows(n, batch)  # n, or more where CUDA graphs replay fixed row counts
            h = step(x_proj[:computed, t], h[:computed], ctx.gate_context[:computed])
            states.append(h[:n])  # (n_t, H)
        rows, steps = pack.rows, pack.steps  # (N,) step-major
        s_pooled = self.readout(torch.cat(states), e_prev[rows, steps], ctx.output_context[rows])  # (N, M)
        return pack.order, rows, s_pooled, trg[rows, steps]

    def _target_log_probs(self, s_pooled: Tensor, targets: Tensor, row_block: int) -> Tensor:
        """log p(y_t = targets) from maxout outputs (N, M) and ids (N,), blockwise; shape (N,)."""
        g_r_s = self.G_r(s_pooled)  # (N, R)
        if not isinstance(self.G_l, nn.Linear):  # int8 (mosesrnn.runtime.precision): one matmul gives both terms
            return torch.cat([torch.log_softmax(at_least_float32(self.G_l(block)), -1).gather(-1, t[:, None])[:, 0]
                              for block, t in zip(g_r_s.split(row_block), targets.split(row_block))])
        target_logits, normaliser = self._target_terms(g_r_s, targets, row_block)
        return target_logits - normaliser  # (N,)

    def _target_terms(self, g_r_s: Tensor, targets: Tensor, row_block: int) -> tuple[Tensor, Tensor]:
        """(g_y . s + b_y, log Z = log sum_j exp(g_j . s + b_j)) from G_r s (N, R) and ids (N,); (N,) each."""
        target_logits = self._target_logits(g_r_s, targets)
        blocks = zip(g_r_s.split(row_block), targets.split(row_block))  # (row_block, R), (row_block,)
        normaliser = torch.cat([log_normaliser(at_least_float32(self.G_l(block)), block_targets)
                                for block, block_targets in blocks])
        return target_logits, normaliser  # (N,), (N,)

    def _target_logits(self, g_r_s: Tensor, targets: Tensor) -> Tensor:
        """g_y . s + b_y from G_r s (N, R) and ids (N,): the rows of G_l of the targets alone; (N,)."""
        if isinstance(self.G_l, nn.Linear):
            weight, bias = self.G_l.weight, self.G_l.bias
        else:  # a dynamically quantised G_l: its int8 rows, dequantised
            weight, bias = self.G_l.weight().dequantize(), self.G_l.bias()
        g_y = at_least_float32(weight[targets])  # (N, R)
        return (at_least_float32(g_r_s) * g_y).sum(-1) + bias[targets]

    def step(self, ctx: DecoderContext, prev_words: Tensor | None, h: Tensor) -> tuple[Tensor, Tensor]:
        """One decoder step from state h'_{t-1} (B, H) and word ids y_{t-1} (B,).

        Pass prev_words=None at t = 1 (e(y_0) = 0) and h = :meth:`initial_state`. Returns
        (log p(y_t | ...) over the whole target vocabulary, shape (B, K); the state h'_t, (B, H)).
        """
        if prev_words is None:
            e_prev = h.new_zeros(h.size(0), self.embed_dim, dtype=self.embed.weight.dtype)
        else:
            e_prev = self.embed(prev_words)  # (B, E)
        h = self.next_state(self.W(e_prev), h, ctx.gate_context)
        return torch.log_softmax(self.logits(self.readout(h, e_prev, ctx.output_context)), dim=-1), h
