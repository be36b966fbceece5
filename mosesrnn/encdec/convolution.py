"""The convolutions of Kalchbrenner & Blunsom (2013), KB13 below: CSM, CGM and the inverse CGM.

A sentence matrix holds one q-dimensional column per word (Eq. 5). A kernel K^i is a (q, i)
matrix; each row is a one-dimensional filter over the matching row of the input (Eq. 6), so
``K^i * M`` has i - 1 columns fewer than M: a depthwise ``conv1d``. The CSM applies K^2, K^3, ...
one after the other, each followed by the nonlinearity (Eq. 7), until one column is left; when the
next kernel is wider than what is left, a "top" matrix L^j of the remaining width j ends it
(Sec. 3.1). A column at level i represents an n-gram of n = 1 + (1 + 2 + ... + (i - 1)) words.

:func:`csm_plan` writes down which kernels a sentence of a given length meets; it depends on the
length only, so a batch is computed one length (one plan) at a time. Kernels wider than a bank
holds are factorised into two narrower ones, as KB13 Sec. 5.1.2 does for long test sentences.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["csm_plan", "KernelBank", "apply_plan", "invert_plan", "grouped"]

#: A plan: ("K", i) is a convolution with the level kernel of width i, ("L", j) with the top kernel of width j.
Plan = list[tuple[str, int]]


def csm_plan(length: int, max_gram: int | None = None) -> Plan:
    """The convolutions the CSM applies to a sentence of ``length`` words (KB13 Sec. 3.1).

    With ``max_gram`` (the CGM, Sec. 4.1) it stops at the highest level whose columns represent
    at most ``max_gram`` words; a sentence of at most ``max_gram`` words is one such n-gram and
    gets the whole CSM (down to one column).

    >>> csm_plan(6), csm_plan(7), csm_plan(9, max_gram=4), csm_plan(3, max_gram=4)
    ([('K', 2), ('K', 3), ('L', 3)], [('K', 2), ('K', 3), ('K', 4)], [('K', 2), ('K', 3)], [('K', 2), ('L', 2)])
    """
    plan: Plan = []
    columns, width, gram = length, 2, 1
    while columns > 1:
        if max_gram is not None and length > max_gram and gram + width - 1 > max_gram:
            break  # the n-gram level of the CGM
        if columns >= width:
            plan.append(("K", width))
            columns, gram, width = columns - (width - 1), gram + width - 1, width + 1
        else:
            plan.append(("L", columns))
            columns = 1
    return plan


def plan_columns(length: int, plan: Plan) -> int:
    """The number of columns left after applying ``plan`` to ``length`` columns."""
    return length - sum(width - 1 for _, width in plan)


class KernelBank(nn.Module):
    """Depthwise kernels of widths 2..max_width, each (q, width) with a bias (q,) (KB13 Eq. 6).

    Parameters: ``weight_<i>`` of shape (q, i) and ``bias`` of shape (max_width - 1, q).
    """

    def __init__(self, q: int, max_width: int):
        super().__init__()
        self.q, self.max_width = q, max_width
        for width in range(2, max_width + 1):
            self.register_parameter(f"weight_{width}", nn.Parameter(torch.empty(q, width)))
        self.bias = nn.Parameter(torch.empty(max_width - 1, q))

    def convolve(self, x: Tensor, width: int, transposed: bool = False) -> Tensor:
        """K^width * x for x (b, q, L): (b, q, L - width + 1); transposed: (b, q, L + width - 1).

        A width above ``max_width`` is the composition of the widest kernel and one of width
        ``width - max_width + 1`` (KB13 Sec. 5.1.2: "factorized into two smaller weight matrices").
        """
        if width > self.max_width:
            x = self.convolve(x, self.max_width, transposed)
            return self.convolve(x, width - self.max_width + 1, transposed)
        weight = getattr(self, f"weight_{width}").unsqueeze(1).to(x.dtype)  # (q, 1, width)
        bias = self.bias[width - 2].to(x.dtype)
        if transposed:  # each column spreads over `width` columns: the inverse direction
            return F.conv_transpose1d(x, weight, bias, groups=self.q)
        return F.conv1d(x, weight, bias, groups=self.q)  # sum_i K_{:,i} * M_{:,a+i}  (Eq. 6)


def apply_plan(x: Tensor, plan: Plan, level: KernelBank, top: KernelBank, sigma: Callable) -> Tensor:
    """E_{i+1} = sigma(K^{i+1} * E_i) along ``plan`` (KB13 Eq. 7b); x (b, q, L) -> (b, q, L')."""
    for kind, width in plan:
        x = sigma((level if kind == "K" else top).convolve(x, width))
    return x


def invert_plan(x: Tensor, plan: Plan, level: KernelBank, top: KernelBank, sigma: Callable) -> Tensor:
    """The inverse of :func:`apply_plan`: transposed convolutions in reverse order, (b, q, L') -> (b, q, L)."""
    for kind, width in reversed(plan):
        x = sigma((level if kind == "K" else top).convolve(x, width, transposed=True))
    return x


def grouped(keys: list, compute: Callable[[object, Tensor], Tensor], rows: int, width: int,
            like: Tensor) -> Tensor:
    """Run ``compute(key, row_index)`` once per distinct key and gather the results row by row.

    ``compute`` returns (n, width_k, q) for the n rows of its key, width_k <= width; the result is
    (rows, width, q), zero beyond each row's own width.
    """
    out = like.new_zeros(rows, width, like.size(-1))
    for key in sorted(set(keys)):
        index = torch.tensor([row for row, k in enumerate(keys) if k == key], device=like.device)
        value = compute(key, index)  # (n, width_k, q)
        out[index, :value.size(1)] = value.to(out.dtype)
    return out
