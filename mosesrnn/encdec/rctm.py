"""The decoders of the Recurrent Continuous Translation Models (Kalchbrenner & Blunsom 2013, KB13).

Both are the recurrent language model of KB13 Sec. 2.1 with a conditioning term added to every
hidden layer, q = hidden_dim units, sigma = tanh and a full softmax output O (KB13's 256 word
classes, a speed-up, are left out):

    h_t = tanh(R h_{t-1} + I v(y_{t-1}) + cond_t),   o_t = O h_t,   P(y_t | y_<t, e) = softmax(o_t)

KB13 write the recurrence from h_1 = sigma(I v(f_1) + s), which reads the first word; like the C14
decoder we start one position earlier with h_0 = 0 and v(y_0) = 0, so that the first word is
predicted too, and targets end in EOS. Biases: b_h sits on S, b_o on O.

- RCTM I (Sec. 3.2, Eqs. 8a-d): cond_t = s = S csm(e), the same at every position.
- RCTM II (Sec. 4.2, Eqs. 9-11): cond_t = S F_{:,t} with F = icgm(F^g, m), which unfolds the
  source's n-gram columns onto the m words of the target, and P(f | e) = P(m | k) P(f | m, e).
  Knowing m, the word softmax leaves EOS out; the EOS position of our targets carries the
  length term log P(m | k) = log Poisson(m; lambda_k) instead, so log p sums over the same m + 1
  positions as for the other models and the per-token perplexities compare. lambda_k (one per
  source length k, the last shared by all longer sources) is a parameter fitted by the same
  likelihood (its maximum is the mean target length of the sources of length k), initialised
  to k.

The inverse CGM: KB13 give only its parts (kernels J^2..J^s and H^2..H^s) and that it is the
"inverted truncated CSM for a sentence of length m". We take exactly that: the CGM plan of a
length-m sentence (its levels K^i, and its top L^j for m <= n), inverted into transposed
convolutions J^i (and H^j), each followed by sigma; it starts from that sentence's number of
n-gram columns m_g, to which a "bridge" first maps the source's g columns: a transposed
convolution with H^(m_g - g + 1) when g < m_g, a convolution with H^(g - m_g + 1) when g > m_g.

Search with RCTM II (``step``): the conditioning depends on the target length, so the context
carries a chosen length m (``with_target_length``; by default the mode of Poisson(lambda_k), as
KB13 Sec. 5.3.1 fix m before sampling). For t <= m, step gives the word distribution without EOS;
at t = m + 1 only EOS is allowed, with log-probability log P(m | k), so a finished hypothesis has
exactly its ``score_log_prob``; past that, EOS has log-probability 0.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Sequence

import torch
from torch import Tensor, nn

from ..errors import MosesRNNError
from .config import EOS_ID, ModelConfig
from .convolution import KernelBank, csm_plan, grouped, invert_plan, plan_columns
from .decoder import SequenceTerms, per_pair
from .encoders import EncoderOutput, NgramOutput
from .layers import at_least_float32, lengths_mask, log_normaliser
from .packing import host_lengths, packing

__all__ = ["RCTM1Context", "RCTM2Context", "RCTM1Decoder", "RCTM2Decoder", "LENGTH_CLASSES"]

#: Source lengths with their own Poisson mean lambda_k; longer sources share the last.
LENGTH_CLASSES = 100


def _cat(contexts: Sequence):
    cls = type(contexts[0])
    return cls(*(torch.cat([getattr(ctx, f.name) for ctx in contexts]) for f in fields(cls)))


def _select(ctx, index: Tensor):
    return type(ctx)(*(getattr(ctx, f.name).index_select(0, index) for f in fields(ctx)))


@dataclass
class RCTM1Context:
    """RCTM I's per-source term s = S csm(e) + b_h, shape (B, q) (Eq. 8a)."""

    s: Tensor

    index_select = _select
    cat = staticmethod(_cat)


@dataclass
class RCTM2Context:
    """RCTM II's per-source terms.

    Attributes:
        columns: F^g, (B, G, q), zero beyond each source's count.
        counts: the number of n-gram columns of each source, (B,).
        log_lambda: log lambda_k of each source's length k, (B,).
        target_length: the length m (words, EOS excluded) that ``step`` conditions on, (B,).
    """

    columns: Tensor
    counts: Tensor
    log_lambda: Tensor
    target_length: Tensor

    index_select = _select

    @staticmethod
    def cat(contexts: Sequence["RCTM2Context"]) -> "RCTM2Context":
        """Stack the rows of several contexts, padding F^g to the widest."""
        width = max(ctx.columns.size(1) for ctx in contexts)
        padded = [replace(ctx, columns=torch.nn.functional.pad(ctx.columns, (0, 0, 0, width - ctx.columns.size(1))))
                  for ctx in contexts]
        return _cat(padded)

    def with_target_length(self, m: Tensor | int) -> "RCTM2Context":
        """The same sources, ``step`` conditioned on target length(s) m (words, EOS excluded)."""
        m = torch.as_tensor(m, device=self.counts.device).expand_as(self.counts)
        return replace(self, target_length=m.clone())


def poisson_log_prob(m: Tensor, log_lambda: Tensor) -> Tensor:
    """log Poisson(m; lambda) = m log lambda - lambda - log m!  (KB13 Eq. 11)."""
    m = m.to(log_lambda.dtype)
    return m * log_lambda - log_lambda.exp() - torch.lgamma(m + 1)


class RecurrentLMDecoder(nn.Module):
    """The conditioned RLM shared by both RCTMs; subclasses give the conditioning per position."""

    recurrent_weights = ("R.weight",)
    output_layer = "O"  # the K-way output matrix, read by rows when the normaliser is skipped

    def __init__(self, config: ModelConfig):
        super().__init__()
        q, K = config.hidden_dim, config.trg_vocab_size
        self.q = q
        self.I = nn.Embedding(K, q)  # I v(y)
        self.R = nn.Linear(q, q, bias=False)
        self.S = nn.Linear(q, q)  # carries b_h
        self.O = nn.Linear(q, K)  # carries b_o

    def previous_inputs(self, trg: Tensor) -> Tensor:
        """I v(y_{t-1}) for every step of targets (B, T), with v(y_0) = 0; shape (B, T, q)."""
        x = self.I(trg)
        return torch.cat([x.new_zeros(x.size(0), 1, x.size(-1)), x[:, :-1]], dim=1)

    def next_state(self, x: Tensor, h: Tensor, cond: Tensor) -> Tensor:
        """h_t = tanh(R h_{t-1} + I v(y_{t-1}) + cond_t)  (KB13 Eqs. 8b-c, 10d-e)."""
        return torch.tanh(at_least_float32(self.R(h)) + at_least_float32(x) + at_least_float32(cond))

    def logits(self, h: Tensor) -> Tensor:
        """o_t = O h_t + b_o, in at least float32, (..., K)  (Eq. 3c)."""
        return at_least_float32(self.O(h))

    def _states(self, ctx, trg: Tensor, steps: Tensor) -> Tensor:
        """h_1..h_T of targets (B, T); rows stop at their ``steps``; (B, T, q)."""
        x = self.previous_inputs(trg)
        cond = self.conditioning(ctx, steps, trg.size(1))  # (B, T or 1, q)
        mask = lengths_mask(steps, trg.size(1))
        h, states = x.new_zeros(trg.size(0), self.q, dtype=at_least_float32(x).dtype), []
        for t in range(trg.size(1)):
            h = torch.where(mask[:, t, None], self.next_state(x[:, t], h, cond[:, min(t, cond.size(1) - 1)]), h)
            states.append(h)
        return torch.stack(states, dim=1)

    def _packed_states(self, ctx, trg: Tensor, steps: Tensor, host_steps=None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The states of each row's first ``steps`` positions in the fast scoring order: rows sorted by
        decreasing length, the recurrence run on the rows still going (the order worked out on the host,
        from ``host_steps`` where the caller has them: :mod:`~mosesrnn.encdec.packing`).

        Returns (order (B,): the sorted rows' input positions; rows (N,): each position's sorted row;
        h (N, q); targets (N,)), step-major; N may be 0."""
        pack = packing(host_lengths(host_steps, steps), trg.device)
        trg, steps, ctx = trg[pack.order], steps[pack.order], ctx.index_select(pack.order)
        x = self.previous_inputs(trg)
        cond = self.conditioning(ctx, steps, trg.size(1))
        h = x.new_zeros(trg.size(0), self.q, dtype=at_least_float32(x).dtype)
        states = [h[:0]]  # no positions at all when every row has m = 0 (RCTM II)
        for t, n in enumerate(pack.active):
            h = self.next_state(x[:n, t], h[:n], cond[:n, min(t, cond.size(1) - 1)])
            states.append(h)
        return pack.order, pack.rows, torch.cat(states), trg[pack.rows, pack.steps]

    def _packed_log_probs(self, ctx, trg: Tensor, steps: Tensor, row_block: int,
                          normalizer: str = "exact", host_steps=None) -> Tensor:
        """Sum over each row's first ``steps`` positions of log P(y_t), in the fast scoring order; (B,).

        Rows sorted by decreasing length, the recurrence runs on the rows still going, and the
        output layer on the real positions only, its normaliser blockwise (as C14's scorer does).
        ``normalizer="skip"``: the raw scores o_{y_t} alone, the rows of O of the targets gathered.
        """
        order, rows, h, targets = self._packed_states(ctx, trg, steps, host_steps)
        if normalizer == "skip":
            token_scores = self._target_logits(h, targets)
        elif normalizer == "exact":
            token_scores = self._target_log_probs(h, targets, row_block)
        else:
            raise MosesRNNError(f"normalizer must be exact or skip, not {normalizer!r}")
        return per_pair(token_scores, rows, order)

    def _packed_terms(self, ctx, trg: Tensor, steps: Tensor, row_block: int) -> SequenceTerms:
        """:class:`~mosesrnn.encdec.decoder.SequenceTerms` of each row's first ``steps`` positions."""
        order, rows, h, targets = self._packed_states(ctx, trg, steps)
        target_logits, log_z = self._target_terms(h, targets, row_block)
        return SequenceTerms(per_pair(target_logits - log_z, rows, order), per_pair(log_z, rows, order),
                             per_pair(log_z.square(), rows, order))

    def _target_log_probs(self, h: Tensor, targets: Tensor, row_block: int) -> Tensor:
        """log P(y = targets) from states (N, q) and ids (N,), blockwise; (N,)."""
        out = []
        for block, block_targets in zip(h.split(row_block), targets.split(row_block)):
            logits = self.mask_logits(self.logits(block))
            out.append(logits.gather(-1, block_targets[:, None]).squeeze(-1) - log_normaliser(logits, block_targets))
        return torch.cat(out) if out else h.new_zeros(0)

    def _target_terms(self, h: Tensor, targets: Tensor, row_block: int) -> tuple[Tensor, Tensor]:
        """(o_y, log Z = log sum_j exp(o_j)) from states (N, q) and ids (N,), blockwise; (N,) each."""
        logits, log_z = [], []
        for block, block_targets in zip(h.split(row_block), targets.split(row_block)):
            block_logits = self.mask_logits(self.logits(block))
            logits.append(block_logits.gather(-1, block_targets[:, None]).squeeze(-1))
            log_z.append(log_normaliser(block_logits, block_targets))
        return (torch.cat(logits), torch.cat(log_z)) if logits else (h.new_zeros(0), h.new_zeros(0))

    def _target_logits(self, h: Tensor, targets: Tensor) -> Tensor:
        """o_y = O_y . h + b_y from states (N, q) and ids (N,): the rows of O of the targets alone; (N,)."""
        if isinstance(self.O, nn.Linear):
            weight, bias = self.O.weight, self.O.bias
        else:  # a dynamically quantised O: its int8 rows, dequantised
            weight, bias = self.O.weight().dequantize(), self.O.bias()
        return (at_least_float32(h) * at_least_float32(weight[targets])).sum(-1) + bias[targets]

    def mask_logits(self, logits: Tensor) -> Tensor:
        """The word softmax's logits (RCTM II leaves EOS out)."""
        return logits


class RCTM1Decoder(RecurrentLMDecoder):
    """RCTM I (KB13 Sec. 3.2): the RLM with s = S csm(e) added to every hidden layer."""

    def context(self, enc: EncoderOutput) -> RCTM1Context:
        """s = S csm(e) + b_h  (Eq. 8a)."""
        return RCTM1Context(s=self.S(enc.c))

    def conditioning(self, ctx: RCTM1Context, steps: Tensor, T: int) -> Tensor:
        return ctx.s.unsqueeze(1)  # (B, 1, q)

    def initial_state(self, ctx: RCTM1Context) -> Tensor:
        """h_0 = 0, (B, q)."""
        return at_least_float32(ctx.s).new_zeros(ctx.s.shape)

    def token_log_probs(self, ctx: RCTM1Context, trg: Tensor, trg_lengths: Tensor) -> Tensor:
        """Per-step log P(y_t | y_<t, e) of targets (B, T) ending in EOS, (B, T); 0 at padding."""
        logits = self.logits(self._states(ctx, trg, trg_lengths))  # (B, T, K)
        log_p = logits.gather(-1, trg.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)
        return log_p.masked_fill(~lengths_mask(trg_lengths, trg.size(1)), 0.0)

    def sequence_log_prob(self, ctx: RCTM1Context, trg: Tensor, trg_lengths: Tensor,
                          row_block: int = 512, normalizer: str = "exact", lengths=None) -> Tensor:
        """log P(y | e) of targets (B, T) ending in EOS, in the fast scoring order; (B,). ``normalizer="skip"``:
        the sum of the raw scores o_y instead (a self-normalised model's). ``lengths``: the host's copy of
        ``trg_lengths``, where the caller has one."""
        return self._packed_log_probs(ctx, trg, trg_lengths, row_block, normalizer, lengths)

    def sequence_terms(self, ctx: RCTM1Context, trg: Tensor, trg_lengths: Tensor,
                       row_block: int = 512) -> SequenceTerms:
        """log P(y | e) and the sums of log Z and (log Z)^2 over the positions, fast scoring order."""
        return self._packed_terms(ctx, trg, trg_lengths, row_block)

    def step(self, ctx: RCTM1Context, prev_words: Tensor | None, h: Tensor) -> tuple[Tensor, Tensor]:
        """One step from h_{t-1} (B, q) and y_{t-1} (B,) (None at t = 1): (log P(y_t) (B, K), h_t)."""
        x = h.new_zeros(h.size(0), self.q, dtype=self.I.weight.dtype) if prev_words is None else self.I(prev_words)
        h = self.next_state(x, h, ctx.s)
        return torch.log_softmax(self.logits(h), dim=-1), h


class RCTM2Decoder(RecurrentLMDecoder):
    """RCTM II (KB13 Sec. 4.2): the RLM conditioned on icgm(F^g, m), and P(m | k) = Poisson(lambda_k)."""

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.ngram = config.options["cgm_ngram"]
        self.J = KernelBank(self.q, config.options["icgm_kernels"])
        self.H = KernelBank(self.q, config.options["icgm_kernels"])
        self.log_lambda = nn.Parameter(torch.empty(LENGTH_CLASSES))

    @torch.no_grad()
    def reset_own_parameters(self):
        """lambda_k = k to start with (the target about as long as the source)."""
        self.log_lambda.copy_(torch.arange(1, LENGTH_CLASSES + 1, device=self.log_lambda.device).log())

    def context(self, enc: NgramOutput) -> RCTM2Context:
        """F^g with each source's log lambda_k; ``step`` conditions on the mode of Poisson(lambda_k)."""
        log_lambda = self.log_lambda[(enc.src_lengths.clamp(1, LENGTH_CLASSES) - 1)]
        mode = log_lambda.detach().exp().floor().long().clamp(min=1)
        return RCTM2Context(enc.columns, enc.counts, log_lambda, mode)

    def icgm(self, ctx: RCTM2Context, m: Tensor) -> Tensor:
        """F = icgm(F^g, m): the n-gram columns unfolded onto m columns per row, (B, max m, q)."""
        keys = list(zip(ctx.counts.tolist(), m.tolist()))

        def unfold(key: tuple[int, int], rows: Tensor) -> Tensor:
            g, length = key
            if length == 0:
                return ctx.columns.new_zeros(len(rows), 0, self.q)
            plan = csm_plan(length, self.ngram)
            m_g = plan_columns(length, plan)
            x = ctx.columns[rows, :g].transpose(1, 2)  # (n, q, g)
            if g == 0:  # an empty source: nothing to bridge from, its columns 0 (as the GRU's h_0 = 0 stays)
                x = x.new_zeros(len(rows), self.q, m_g)
            elif g != m_g:  # the bridge from the source's n-gram columns to the target's
                x = torch.tanh(self.H.convolve(x, abs(m_g - g) + 1, transposed=m_g > g))
            return invert_plan(x, plan, self.J, self.H, torch.tanh).transpose(1, 2)  # (n, m, q)

        return grouped(keys, unfold, len(keys), max(max(m.tolist()), 1), ctx.columns)

    def conditioning(self, ctx: RCTM2Context, steps: Tensor, T: int) -> Tensor:
        """S F_{:,t} + b_h for t = 1..m of each row (``steps`` = m), (B, max m, q)  (Eq. 10e)."""
        return self.S(self.icgm(ctx, steps))

    def mask_logits(self, logits: Tensor) -> Tensor:
        return logits.index_fill(-1, torch.tensor([EOS_ID], device=logits.device), float("-inf"))

    def initial_state(self, ctx: RCTM2Context) -> Tensor:
        """(h_0 = 0, t = 0): the state is h (q columns) and the number of words read so far, (B, q + 1)."""
        return at_least_float32(ctx.columns).new_zeros(ctx.columns.size(0), self.q + 1)

    def token_log_probs(self, ctx: RCTM2Context, trg: Tensor, trg_lengths: Tensor) -> Tensor:
        """log P(y_t | y_<t, m, e) at the m word positions, log P(m | k) at EOS, (B, T); 0 at padding."""
        m = trg_lengths - 1
        logits = self.mask_logits(self.logits(self._states(ctx, trg, m)))  # (B, T, K)
        log_p = logits.gather(-1, trg.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)
        log_p = log_p.masked_fill(~lengths_mask(m, trg.size(1)), 0.0)
        at_eos = torch.nn.functional.one_hot(m, trg.size(1)).to(log_p.dtype)  # (B, T)
        return log_p + at_eos * poisson_log_prob(m, ctx.log_lambda).unsqueeze(1)

    def sequence_log_prob(self, ctx: RCTM2Context, trg: Tensor, trg_lengths: Tensor,
                          row_block: int = 512, normalizer: str = "exact", lengths=None) -> Tensor:
        """log P(m | k) + log P(y | m, e) of targets (B, T) ending in EOS, fast scoring order; (B,).
        ``normalizer="skip"``: the word positions' raw scores o_y instead of their log P (the length
        term, a Poisson, is normalised already)."""
        m = trg_lengths - 1
        host_m = None if lengths is None else lengths - 1  # icgm still reads m back (a wait per batch on a GPU)
        return (self._packed_log_probs(ctx, trg, m, row_block, normalizer, host_m)
                + poisson_log_prob(m, ctx.log_lambda))

    def sequence_terms(self, ctx: RCTM2Context, trg: Tensor, trg_lengths: Tensor,
                       row_block: int = 512) -> SequenceTerms:
        """log P(m | k) + log P(y | m, e) and the sums of the word positions' log Z and (log Z)^2 (the
        length term has none)."""
        m = trg_lengths - 1
        terms = self._packed_terms(ctx, trg, m, row_block)
        return terms._replace(log_p=terms.log_p + poisson_log_prob(m, ctx.log_lambda))

    def step(self, ctx: RCTM2Context, prev_words: Tensor | None, state: Tensor) -> tuple[Tensor, Tensor]:
        """One step conditioned on ``ctx.target_length``; see the module docstring; state (B, q + 1)."""
        h, t = state[:, :self.q], state[:, self.q].long()  # t words read so far
        m = ctx.target_length
        x = h.new_zeros(h.size(0), self.q, dtype=self.I.weight.dtype) if prev_words is None else self.I(prev_words)
        F = self.icgm(ctx, m)  # (B, max m, q)
        column = F[torch.arange(len(t), device=t.device), t.clamp(max=F.size(1) - 1)]  # F_{:,t+1}
        h = self.next_state(x, h, self.S(column))
        log_p = torch.log_softmax(self.mask_logits(self.logits(h)), dim=-1)
        ending = torch.full_like(log_p, float("-inf"))
        ending[:, EOS_ID] = torch.where(t == m, poisson_log_prob(m, ctx.log_lambda).to(log_p.dtype), 0.0)
        log_p = torch.where((t < m)[:, None], log_p, ending)
        return log_p, torch.cat([h, (t + 1).unsqueeze(1).to(h.dtype)], dim=1)

