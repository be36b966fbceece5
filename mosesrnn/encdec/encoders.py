"""Encoders: a batch of source phrases -> what the decoder conditions on.

The encoders of the C14 decoder (``gru``, ``grconv``, ``rnn``) return an :class:`EncoderOutput`:
the fixed-length phrase representation ``c`` and the mean source word embedding ``m_x`` that the
C14 decoder's output layer reads (App. A). The RCTM encoders feed their own decoders
(:mod:`mosesrnn.encdec.rctm`): RCTM I's CSM an :class:`EncoderOutput` whose ``c`` is csm(e),
RCTM II's CGM an :class:`NgramOutput`. Which decoder each feeds, and under which name a model
config's ``encoder`` field picks it, is :data:`mosesrnn.encdec.architectures.ARCHITECTURES`.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from torch import Tensor, nn

from .compiled import recurrent_step
from .config import ModelConfig
from .convolution import KernelBank, apply_plan, csm_plan, grouped, plan_columns
from .layers import at_least_float32, gru_update, lengths_mask

__all__ = ["EncoderOutput", "NgramOutput", "Encoder", "GRUEncoder", "GrConvEncoder", "RNNEncoder",
           "CSMEncoder", "CGMEncoder"]


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


@dataclass
class NgramOutput:
    """RCTM II's source side: the n-gram columns F^g = sigma(T cgm(e, n)) (KB13 Eqs. 10a-b).

    Attributes:
        columns: F^g, one row per source, shape (B, G, q), zero beyond each source's own count.
        counts: the number of n-gram columns of each source, shape (B,).
        src_lengths: the source lengths k, shape (B,) (the length model P(m | k) reads them).
    """

    columns: Tensor
    counts: Tensor
    src_lengths: Tensor

    def index_select(self, index: Tensor) -> "NgramOutput":
        """Gather rows."""
        return NgramOutput(*(getattr(self, f.name).index_select(0, index) for f in fields(self)))


class Encoder(nn.Module):
    """Base of the encoders: ``forward(src (B, S), src_lengths (B,)) -> EncoderOutput``.

    Sources hold token ids without EOS, right-padded with PAD_ID; every length is at least 1.
    ``recurrent_weights`` names the parameters initialised as orthogonal blocks, scaled by
    ``recurrent_init_scale`` or, where that is None, by the config's (see
    :meth:`mosesrnn.encdec.model.EncoderDecoder.reset_parameters`). ``decoder`` names the decoder
    that reads this encoder's output. A decoder, too, says ``compiles_steps`` where it does.
    """

    recurrent_weights: tuple[str, ...] = ()
    recurrent_init_scale: float | None = None
    #: whether its recurrent step runs through :func:`~mosesrnn.encdec.compiled.recurrent_step` (``--compile``)
    compiles_steps = False

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
    compiles_steps = True
    #: Run the recurrence as one library GRU call (``torch.gru``: ATen's loop on a CPU, cuDNN's on cuda) instead of
    #: a step at a time. Its equations are C14's (the reset gate on U h, Eq. 8; the input-side biases, with a zero
    #: hidden-side one); it is off until the device check measures that it pays (``benchmarks/compile_speed.py``'s
    #: ``native-gru`` row). Under autocast the step loop runs anyway: it keeps the state in float32.
    native = False

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
        if self.native and not torch.is_autocast_enabled(e_x.device.type):
            h = self.library_states(e_x, src_lengths)
        else:
            x_proj = self.W(e_x)  # (B, S, 3H), all steps in one matmul
            h = x_proj.new_zeros(B, self.hidden_dim)  # h_0 = 0
            step = recurrent_step(self, "next_state")  # compiled where the scorer asks (mosesrnn.encdec.compiled)
            for t in range(S):
                h = step(x_proj[:, t], h, mask[:, t, None])
        c = torch.tanh(self.V(h))  # (B, H)   c = tanh(V h_N)
        return EncoderOutput(c=c, m_x=self.mean_embedding(e_x, mask, src_lengths))

    def library_states(self, e_x: Tensor, src_lengths: Tensor) -> Tensor:
        """h_N of each source (B, H) by one ``torch.gru`` call over e_x (B, S, E) (:attr:`native`): the states past
        a source's end are computed on its padding and not read."""
        B, H = e_x.shape[0], self.hidden_dim
        weights = [self.W.weight, self.U.weight, self.W.bias, self.U.weight.new_zeros(3 * H)]  # [b_ih, b_hh = 0]
        states, _ = torch.gru(e_x, e_x.new_zeros(1, B, H), weights, True, 1, 0.0, self.training, False, True)
        return states[torch.arange(B, device=e_x.device), src_lengths - 1]

    def next_state(self, x_proj: Tensor, h: Tensor, going: Tensor) -> Tensor:
        """h_t from x_proj = [W_r e; W_z e; W e](x_t) (+ biases) (B, 3H) and h_{t-1} (B, H); rows whose source
        has ended (``going`` (B, 1) False) keep their state: h = h_N."""
        return torch.where(going, gru_update(x_proj, self.U(h), h), h)


class GrConvEncoder(Encoder):
    """The gated recursive convolutional encoder (grConv) of Cho et al. (2014b), Sec. 2.2.

    h^(0)_j = U x_j; at each level t = 1..T-1 node j merges its children h_l = h^(t-1)_j and
    h_r = h^(t-1)_{j+1}:

        h~ = phi(W^l h_l + W^r h_r + b)                        (the candidate)
        [w_c, w_l, w_r] = softmax(G^l h_l + G^r h_r + b_G)      (the gater)
        h^(t)_j = w_c h~ + w_l h_l + w_r h_r                   (Eq. 3)

    with the same weights at every level and phi the rectifier (Sec. 5.2). The paper prints h~ and
    the gater from level t; both read the children at level t-1, as its Fig. 1 and GroundHog's code
    do. c = the top node h^(T-1)_1; W^l and W^r are orthogonal with spectral radius
    ``grconv_init_scale`` (0.4, Sec. 5.2).
    """

    recurrent_weights = ("W_l.weight", "W_r.weight")

    def __init__(self, config: ModelConfig):
        super().__init__()
        E, H = config.embed_dim, config.hidden_dim
        self.recurrent_init_scale = config.options["grconv_init_scale"]
        self.embed = nn.Embedding(config.src_vocab_size, E)  # x_j = e(x_j)
        self.U = nn.Linear(E, H)  # h^(0)_j = U x_j
        self.W_l = nn.Linear(H, H)  # carries b
        self.W_r = nn.Linear(H, H, bias=False)
        self.G_l = nn.Linear(H, 3)  # carries b_G; rows [c; l; r]
        self.G_r = nn.Linear(H, 3, bias=False)

    def forward(self, src: Tensor, src_lengths: Tensor) -> EncoderOutput:
        """Encode sources (B, S) of lengths (B,)."""
        S = src.size(1)
        mask = lengths_mask(src_lengths, S)  # (B, S)
        e_x = self.embed(src)  # (B, S, E)
        h = self.U(e_x)  # (B, S, H)  level 0
        top = h[:, 0]  # a one-word source is its own top node
        for t in range(1, S):
            h_l, h_r = h[:, :-1], h[:, 1:]  # (B, S - t, H) each: the children of the S - t nodes
            h_tilde = torch.relu(self.W_l(h_l) + self.W_r(h_r))
            omega = torch.softmax(self.G_l(h_l) + self.G_r(h_r), dim=-1)  # (B, S - t, 3)
            h_tilde, omega, h_l, h_r = map(at_least_float32, (h_tilde, omega, h_l, h_r))  # bf16 would round the mix
            h = omega[..., 0:1] * h_tilde + omega[..., 1:2] * h_l + omega[..., 2:3] * h_r
            top = torch.where((src_lengths == t + 1)[:, None], h[:, 0], top)  # level T - 1 of each row
        return EncoderOutput(c=top, m_x=self.mean_embedding(e_x, mask, src_lengths))


class RNNEncoder(Encoder):
    """A plain RNN encoder with tanh units, the baseline of the gated units (Hu & Jing, Sec. 2.2).

    h_t = tanh(W e(x_t) + U h_{t-1}) from h_0 = 0, and c = tanh(V h_N) (their Eq. 5, C14 Eq. 1).
    Hu & Jing name the sigmoid for f; tanh is the usual choice and keeps h in C14's range.
    """

    recurrent_weights = ("U.weight",)

    def __init__(self, config: ModelConfig):
        super().__init__()
        E, H = config.embed_dim, config.hidden_dim
        self.hidden_dim = H
        self.embed = nn.Embedding(config.src_vocab_size, E)  # e(x)
        self.W = nn.Linear(E, H)  # W, with the bias
        self.U = nn.Linear(H, H, bias=False)
        self.V = nn.Linear(H, H)

    def forward(self, src: Tensor, src_lengths: Tensor) -> EncoderOutput:
        """Encode sources (B, S) of lengths (B,)."""
        B, S = src.shape
        mask = lengths_mask(src_lengths, S)  # (B, S)
        e_x = self.embed(src)  # (B, S, E)
        x_proj = self.W(e_x)  # (B, S, H)
        h = x_proj.new_zeros(B, self.hidden_dim, dtype=at_least_float32(x_proj).dtype)  # h_0 = 0; a float32 state
        for t in range(S):  # under bf16 autocast, as the GRU's (layers.gru_update)
            h_new = torch.tanh(at_least_float32(x_proj[:, t]) + at_least_float32(self.U(h)))
            h = torch.where(mask[:, t, None], h_new, h)
        return EncoderOutput(c=torch.tanh(self.V(h)), m_x=self.mean_embedding(e_x, mask, src_lengths))


class CSMEncoder(Encoder):
    """RCTM I's convolutional sentence model (KB13 Sec. 3.1): c = csm(e), shape (B, q).

    Word vectors v(e_i) of size q = hidden_dim; kernels K^2..K^r and top matrices L^2..L^r with
    r = ``csm_kernels``; sigma = tanh. A one-word source is its word vector.
    """


    def __init__(self, config: ModelConfig):
        super().__init__()
        q = config.hidden_dim
        self.embed = nn.Embedding(config.src_vocab_size, q)  # v(e_i)
        self.K = KernelBank(q, config.options["csm_kernels"])
        self.L = KernelBank(q, config.options["csm_kernels"])

    def forward(self, src: Tensor, src_lengths: Tensor) -> EncoderOutput:
        """csm(e) of sources (B, S) of lengths (B,), as ``c``; m_x as for the other encoders."""
        v = self.embed(src)  # (B, S, q)
        lengths = src_lengths.tolist()

        def csm(k: int, rows: Tensor) -> Tensor:  # the sources of length k: (n, 1, q)
            E = v[rows, :k].transpose(1, 2)  # sentence matrices E^e, (n, q, k)  (Eq. 5)
            return apply_plan(E, csm_plan(k), self.K, self.L, torch.tanh).transpose(1, 2)

        c = grouped(lengths, csm, len(lengths), 1, v)[:, 0]  # (B, q)
        return EncoderOutput(c=c, m_x=self.mean_embedding(v, lengths_mask(src_lengths, src.size(1)), src_lengths))


class CGMEncoder(Encoder):
    """RCTM II's source side: the convolutional n-gram model and T (KB13 Eqs. 10a-b).

    E^g = cgm(e, n) with n = ``cgm_ngram``, kernels K^2..K^r and L^2..L^r (r = ``cgm_kernels``);
    F^g_{:,j} = sigma(T E^g_{:,j}). sigma = tanh.
    """


    def __init__(self, config: ModelConfig):
        super().__init__()
        q = config.hidden_dim
        self.ngram = config.options["cgm_ngram"]
        self.embed = nn.Embedding(config.src_vocab_size, q)  # v(e_i)
        self.K = KernelBank(q, config.options["cgm_kernels"])
        self.L = KernelBank(q, config.options["cgm_kernels"])
        self.T = nn.Linear(q, q)

    def forward(self, src: Tensor, src_lengths: Tensor) -> NgramOutput:
        """The n-gram columns F^g of sources (B, S) of lengths (B,)."""
        v = self.embed(src)  # (B, S, q)
        lengths = src_lengths.tolist()
        counts = [plan_columns(k, csm_plan(k, self.ngram)) for k in lengths]

        def cgm(k: int, rows: Tensor) -> Tensor:  # (n, g_k, q)
            E = v[rows, :k].transpose(1, 2)  # (n, q, k)
            return apply_plan(E, csm_plan(k, self.ngram), self.K, self.L, torch.tanh).transpose(1, 2)

        E_g = grouped(lengths, cgm, len(lengths), max(counts), v)  # (B, G, q)
        real = lengths_mask(torch.tensor(counts, device=src.device), E_g.size(1)).unsqueeze(-1)
        F_g = torch.tanh(self.T(E_g)) * real  # (B, G, q)  (Eq. 10b), zero beyond each count
        return NgramOutput(columns=F_g, counts=torch.tensor(counts, device=src.device), src_lengths=src_lengths)
