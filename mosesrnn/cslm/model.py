"""The CSLM network (C14 Sec. 5.1.1; Schwenk 2007; the shape of NPLM, Vaswani et al. 2013).

An n-gram model: the n-1 previous words are each embedded (a row of E), concatenated
((n-1)E), passed through rectified hidden layers, and an output layer gives one score per word
of the shortlist. The probability is the softmax of the scores; a model trained to be
*self-normalised* (its log-normaliser log Z close to 0) can use the raw score as the
log-probability, which is what Moses' ``NeuralLM`` reads (NPLM's ``normalization`` off).

The shape and the presets are in :mod:`mosesrnn.cslm.config`.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .config import CSLMConfig

__all__ = ["CSLM"]

class CSLM(nn.Module):
    """scores(context) = O relu(... relu(H_1 [e(w_1); ...; e(w_{n-1})] + b_1) ...) + b_O (C14 Sec. 5.1.1)."""

    def __init__(self, config: CSLMConfig):
        super().__init__()
        self.config = config
        V, E, n = config.vocab_size, config.embed_dim, config.order
        self.embed = nn.Embedding(V, E)  # e(w), shared by the n-1 context positions
        sizes = [(n - 1) * E, *config.hidden_dims]
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
        self.output = nn.Linear(sizes[-1], V)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Weights uniform in [-r, r] (C14: r = 0.01), biases 0, except the output bias: -log V, so that
        the scores start as the uniform distribution's log-probabilities and log Z starts at 0."""
        r = self.config.init_range
        for name, param in self.named_parameters():
            if name.endswith("bias"):
                param.zero_()
            else:
                param.uniform_(-r, r)
        self.output.bias.fill_(-math.log(self.config.vocab_size))

    def num_parameters(self) -> int:
        """Number of trainable scalars."""
        return sum(p.numel() for p in self.parameters())

    def hidden_state(self, context: Tensor) -> Tensor:
        """The last hidden layer for contexts (B, n-1) of word ids, oldest first; shape (B, H)."""
        x = self.embed(context).flatten(1)  # (B, (n-1)E)
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return x

    def forward(self, context: Tensor) -> Tensor:
        """Unnormalised scores of every word after each context, shape (B, V)."""
        return self.output(self.hidden_state(context))
