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
        self.embed = nn.Embedding(config.input_vocab_size or V, E)  # e(w), shared by the n-1 context positions
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

    def hidden_state(self, context: Tensor, dropout: float = 0.0) -> Tensor:
        """The last hidden layer for contexts (B, n-1) of word ids, oldest first; shape (B, H).

        ``dropout`` drops the concatenated embeddings and each hidden layer's output in training mode only
        (inverted dropout: in evaluation, or at 0, the network is exactly the one NPLM evaluates)."""
        drop = (lambda x: nn.functional.dropout(x, dropout)) if dropout and self.training else (lambda x: x)
        x = self.embed(context).flatten(1)  # (B, (n-1)E)
        for layer in self.hidden:
            x = torch.relu(layer(drop(x)))
        return drop(x)

    def forward(self, context: Tensor, dropout: float = 0.0, words: Tensor | None = None) -> Tensor:
        """Unnormalised scores after each context (B, n-1): of every word, shape (B, V), or of the word ids
        ``words`` (W,) only, shape (B, W) (for sampled estimators such as NCE)."""
        hidden = self.hidden_state(context, dropout)
        if words is None:
            return self.output(hidden)
        return nn.functional.linear(hidden, self.output.weight[words], self.output.bias[words])
