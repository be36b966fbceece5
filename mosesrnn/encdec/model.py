"""The RNN Encoder-Decoder of Cho et al. (2014), Sec. 2.2-2.3 and Appendix A: an encoder and its decoder.

:func:`build_model` picks the encoder and the decoder it feeds by the config's ``encoder`` field
(:data:`~mosesrnn.encdec.architectures.ARCHITECTURES`: the C14 decoder, or an RCTM's recurrent
language model); the rest of the code talks to :class:`EncoderDecoder` only and never asks which it has.
Every decoder offers ``context``, ``initial_state``, ``token_log_probs``, ``sequence_log_prob`` (with
its ``normalizer``: exact or skip), ``sequence_terms`` and ``step``; its context has ``index_select`` and ``cat``.
Biases, which the paper omits "to make the equations uncluttered", sit on the input-side
Linears and on the output layer; the recurrent matrices U have none.

Token ids: see :mod:`mosesrnn.text.vocab` (PAD_ID, UNK_ID, EOS_ID). Sources hold token ids
without EOS; targets hold token ids followed by EOS, so that log p(y|x) includes the probability
of ending the phrase. Batches are right-padded with PAD_ID and their lengths given explicitly.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from .architectures import architecture
from .config import ModelConfig
from .decoder import DecoderContext, SequenceTerms
from .encoders import EncoderOutput

__all__ = ["EncoderDecoder", "build_model"]


class EncoderDecoder(nn.Module):
    """An encoder (``config.encoder``) and the decoder it feeds (the C14 decoder, or an RCTM's)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        kind = architecture(config.encoder)
        self.encoder = kind.build_encoder(config)
        self.decoder = kind.build_decoder(config)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):
        """Initialise as in Sec. 4.1.1.

        Weights ~ N(0, init_std^2) and biases 0, except the recurrent matrices (each of
        U_r, U_z, U and U'_r, U'_z, U'): the left singular vectors of a white Gaussian
        matrix times `recurrent_init_scale` (Saxe et al., 2014). The paper's text says
        the scale is 0.01; its GroundHog code used 1.0 (`rec_weight_scale`), our default.
        A part may set its own scale (grConv: 0.4) and initialise its own special parameters
        (``reset_own_parameters``, e.g. RCTM II's Poisson means).
        """
        H = self.config.hidden_dim
        parts = (("encoder", self.encoder), ("decoder", self.decoder))
        recurrent = {f"{prefix}.{name}": getattr(part, "recurrent_init_scale", None) or self.config.recurrent_init_scale
                     for prefix, part in parts for name in part.recurrent_weights}
        for name, param in self.named_parameters():
            if name.endswith("bias"):
                param.zero_()
            elif name in recurrent:
                for block in param.split(H, dim=0):  # (H, H) each
                    left, _, _ = torch.linalg.svd(torch.randn(H, H, device=param.device))
                    block.copy_(left * recurrent[name])
            else:
                param.normal_(0.0, self.config.init_std)
        for _, part in parts:
            if hasattr(part, "reset_own_parameters"):
                part.reset_own_parameters()

    def num_parameters(self) -> int:
        """Number of trainable scalars."""
        return sum(p.numel() for p in self.parameters())

    def encode(self, src: Tensor, src_lengths: Tensor) -> EncoderOutput:
        """c and m_x of sources (B, S) of lengths (B,), all >= 1."""
        return self.encoder(src, src_lengths)

    def source_context(self, src: Tensor, src_lengths: Tensor) -> DecoderContext:
        """Encode sources (B, S) and compute the decoder's per-source terms, once per source."""
        return self.decoder.context(self.encoder(src, src_lengths))

    def log_prob(self, src: Tensor, src_lengths: Tensor, trg: Tensor, trg_lengths: Tensor) -> Tensor:
        """log p(y | x) for padded sources (B, S) and EOS-terminated targets (B, T), shape (B,)."""
        ctx = self.source_context(src, src_lengths)
        return self.decoder.token_log_probs(ctx, trg, trg_lengths).sum(dim=1)

    def forward(self, src: Tensor, src_lengths: Tensor, trg: Tensor, trg_lengths: Tensor,
                terms: bool = False) -> Tensor | SequenceTerms:
        """log p(y | x) of each pair, shape (B,), in the fast order (:meth:`score_log_prob`): what training
        minimises (through ``forward``, so that DistributedDataParallel sees the call). ``terms``: the
        :class:`~mosesrnn.encdec.decoder.SequenceTerms` instead (log p with the sums of log Z and (log Z)^2,
        for the self-normalisation penalty)."""
        ctx = self.source_context(src, src_lengths)
        if terms:
            return self.decoder.sequence_terms(ctx, trg, trg_lengths)
        return self.decoder.sequence_log_prob(ctx, trg, trg_lengths)

    def score_log_prob(self, ctx: DecoderContext, trg: Tensor, trg_lengths: Tensor,
                       normalizer: str = "exact", lengths=None) -> Tensor:
        """log p(y | x) of targets (B, T) against contexts (B rows), in the fast scoring order; (B,).
        ``normalizer="skip"``: the targets' raw scores without the softmax normaliser (a self-normalised
        model: log p + the sum of log Z over the positions). ``lengths``: the host's copy of ``trg_lengths``
        (numpy), so that a GPU is not read back to order the batch (:mod:`mosesrnn.encdec.packing`)."""
        return self.decoder.sequence_log_prob(ctx, trg, trg_lengths, normalizer=normalizer, lengths=lengths)

    def score_token_log_probs(self, ctx: DecoderContext, trg: Tensor, trg_lengths: Tensor) -> Tensor:
        """log p(y_t | y_<t, x) of each step of targets (B, T) against contexts (B rows); (B, T), 0 at padding."""
        return self.decoder.token_log_probs(ctx, trg, trg_lengths)

    def initial_state(self, ctx: DecoderContext) -> Tensor:
        """The decoder's initial state h'_0, shape (B, H)."""
        return self.decoder.initial_state(ctx)

    def step(self, ctx: DecoderContext, prev_words: Tensor | None, h: Tensor) -> tuple[Tensor, Tensor]:
        """One decoder step; see :meth:`mosesrnn.encdec.decoder.C14Decoder.step`."""
        return self.decoder.step(ctx, prev_words, h)


def build_model(config: ModelConfig) -> EncoderDecoder:
    """A freshly initialised model of ``config`` (its ``encoder`` picks the encoder)."""
    return EncoderDecoder(config)
