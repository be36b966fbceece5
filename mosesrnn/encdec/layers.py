"""Small tensor functions shared by the encoders and the decoder."""
from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["gru_update", "at_least_float32", "log_normaliser", "lengths_mask"]


def gru_update(x_proj: Tensor, hU: Tensor, h: Tensor) -> Tensor:
    """One GRU step (C14 Eqs. 5-8; Appendix A) from precomputed projections.

    x_proj = [W_r e; W_z e; W e] (+ biases) and hU = [U_r h; U_z h; U h], both (B, 3H); h (B, H).
    The decoder passes hU + [C_r c; C_z c; C c], which gives exactly its equations (A.1.1).

    The gates and the new state are computed in at least float32 whatever the inputs' dtype: under
    bf16 autocast the projections arrive in bfloat16, and a state kept in bfloat16 (8 bits of mantissa)
    is rounded again at every step. On the shipped model that alone moved log p by 0.33 nats on average
    (docs/performance.md, "Precision"); the matmuls producing x_proj and hU stay in bf16.
    """
    x_r, x_z, x_h = at_least_float32(x_proj).chunk(3, dim=-1)
    u_r, u_z, u_h = at_least_float32(hU).chunk(3, dim=-1)
    h = at_least_float32(h)
    r = torch.sigmoid(x_r + u_r)  # reset gate
    z = torch.sigmoid(x_z + u_z)  # update gate
    h_tilde = torch.tanh(x_h + r * u_h)
    return z * h + (1 - z) * h_tilde  # (B, H)


def at_least_float32(x: Tensor) -> Tensor:
    """``x`` in float32, or in its own dtype if that is wider (float64 in tests)."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


def log_normaliser(logits: Tensor, targets: Tensor) -> Tensor:
    """log sum_j exp(logits_j) per row of (n, K) logits, shape (n,).

    Read off the fused log_softmax at the target (x_y - log_softmax(x)_y), which on CPU is
    about twice as fast as logsumexp's chain of max, sub, exp, sum and log kernels.
    """
    index = targets.unsqueeze(-1)  # (n, 1)
    return (logits.gather(-1, index) - torch.log_softmax(logits, dim=-1).gather(-1, index)).squeeze(-1)


def lengths_mask(lengths: Tensor, max_len: int) -> Tensor:
    """(B, T) bool mask, True on the real (unpadded) positions."""
    return torch.arange(max_len, device=lengths.device) < lengths.unsqueeze(1)
