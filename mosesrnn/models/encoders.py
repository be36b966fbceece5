"""Encoders: a batch of source phrases -> what the decoder conditions on.

Every encoder returns an :class:`EncoderOutput`: the fixed-length phrase representation ``c``
and the mean source word embedding ``m_x`` that the C14 decoder's output layer reads (App. A).
A new encoder (grConv, a convolutional sentence model, a plain RNN) subclasses :class:`Encoder`
and is listed in :data:`ENCODERS` under the name a model config's ``encoder`` field gives.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from torch import Tensor, nn

from .config import ModelConfig
from .layers import gru_update, lengths_mask

__all__ = ["EncoderOutput", "Encoder", "GRUEncoder", "ENCODERS"]


@dataclass
class EncoderOutput:
    """What the decoder conditions on, one row per source.

    Attributes:
        c: the phrase representation, shape (B, H).
        m_x: the mean of the source word embeddings e(x_i), shape (B, E).
    """

    c: Tensor
    m_x: Tensor

    def index_select(self, index: Tensor) -> "EncoderOutput":
        """Gather rows, so that one encoded source can serve several targets."""
        return EncoderOutput(*(getattr(self, f.name).index_select(0, index) for f in fields(self)))


class Encoder(nn.Module):
    """Base of the encoders: ``forward(src (B, S), src_lengths (B,)) -> EncoderOutput``.

    Sources hold token ids without EOS, right-padded with PAD_ID; every length is at least 1.
    ``recurrent_weights`` names the parameters initialised as orthogonal blocks (see
    :meth:`mosesrnn.models.encdec.EncoderDecoder.reset_parameters`).
    """

    recurrent_weights: tuple[str, ...] = ()

    def forward(self, src: Tensor, src_lengths: Tensor) -> EncoderOutput:
        raise NotImplementedError

    @staticmethod
    def mean_embedding(e_x: Tensor, mask: Tensor, src_lengths: Tensor) -> Tensor:
        """m_x: the mean of the real positions of e_x (B, S, E) under mask (B, S), shape (B, E)."""
        real = mask.unsqueeze(-1).to(e_x.dtype)
        return (e_x * real).sum(1) / src_lengths.clamp(min=1).unsqueeze(1).to(e_x.dtype)


class GRUEncoder(Encoder):
    """The RNN encoder of C14 (Sec. 2.3, App. A.1) with gated recurrent units.

    h_t = GRU(e(x_t), h_{t-1}) from h_0 = 0, and c = tanh(V h_N). The three gate matrices are
    fused in the order [reset r; update z; candidate h~]; biases sit on the input side.
    """

    recurrent_weights = ("U.weight",)

    def __init__(self, config: ModelConfig):
        super().__init__()
        E, H = config.embed_dim, config.hidden_dim
        self.hidden_dim = H
        self.embed = nn.Embedding(config.src_vocab_size, E)  # e(x)
        self.W = nn.Linear(E, 3 * H)  # [W_r; W_z; W]
        self.U = nn.Linear(H, 3 * H, bias=False)  # [U_r; U_z; U]
        self.V = nn.Linear(H, H)  # V

    def forward(self, src: Tensor, src_lengths: Tensor) -> EncoderOutput:
        """Encode sources (B, S) of lengths (B,)."""
        B, S = src.shape
        mask = lengths_mask(src_lengths, S)  # (B, S)
        e_x = self.embed(src)  # (B, S, E)
        x_proj = self.W(e_x)  # (B, S, 3H), all steps in one matmul
        h = x_proj.new_zeros(B, self.hidden_dim)  # h_0 = 0
        for t in range(S):
            h_new = gru_update(x_proj[:, t], self.U(h), h)
            h = torch.where(mask[:, t, None], h_new, h)  # frozen after the end: h = h_N
        c = torch.tanh(self.V(h))  # (B, H)   c = tanh(V h_N)
        return EncoderOutput(c=c, m_x=self.mean_embedding(e_x, mask, src_lengths))


#: Encoder kinds by the name a model config's ``encoder`` field uses.
ENCODERS: dict[str, type[Encoder]] = {"gru": GRUEncoder}
