"""Per-token perplexity of gold targets under a model, and the same with the inputs shuffled across pairs.

Kalchbrenner & Blunsom (2013, Table 1) report the perplexity of gold translations; shuffling the
sources (a seeded permutation) keeps every target and every source but breaks their pairing, so
the gap between the two numbers measures how much the model's predictions use the source. Tokens
counted: target words (``<unk>`` included, as one word of the shortlist) plus one EOS per target,
the tokens log p(y|x) sums over.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import NamedTuple, Sequence

from ..encdec.model_file import TrainedEncoderDecoder
from ..encdec.scoring import PairScorer
from ..errors import MosesRNNError

__all__ = ["TextPair", "PerplexityResult", "perplexity", "shuffled"]


class TextPair(NamedTuple):
    source: str
    target: str


@dataclass(frozen=True)
class PerplexityResult:
    pairs: int
    tokens: int  # predicted tokens: words + EOS
    nll: float  # summed negative log-likelihood, nats
    shuffled_nll: float
    seed: int

    @property
    def ppl(self) -> float:
        return math.exp(self.nll / self.tokens)

    @property
    def shuffled_ppl(self) -> float:
        return math.exp(self.shuffled_nll / self.tokens)

    def summary(self) -> str:
        return (f"{self.pairs} pairs, {self.tokens} target tokens (words + EOS): perplexity {self.ppl:.2f} per token; "
                f"with sources shuffled across pairs (seed {self.seed}): {self.shuffled_ppl:.2f} "
                f"({self.shuffled_ppl / self.ppl:.2f}x)")


def shuffled(pairs: Sequence[TextPair], seed: int, side: int = 0) -> list[TextPair]:
    """The pairs with side ``side`` (0 source, 1 target) permuted (seeded); the other side stays."""
    moved = [pair[side] for pair in pairs]
    random.Random(seed).shuffle(moved)
    return [TextPair(*((new, pair[1]) if side == 0 else (pair[0], new))) for new, pair in zip(moved, pairs)]


def perplexity(trained: TrainedEncoderDecoder, pairs: Sequence[TextPair], *, seed: int = 1, device: str = "cpu",
               batch_tokens: int = 4096) -> PerplexityResult:
    """Perplexity of ``pairs`` (table-side source and target) and of the shuffled control.

    Pairs with an empty side are left out (the encoder needs a word).
    """
    pairs = [pair for pair in pairs if pair.source.strip() and pair.target.strip()]
    if not pairs:
        raise MosesRNNError("no pair with both a source and a target")
    scorer = PairScorer(trained, device=device, batch_tokens=batch_tokens)
    output_side = 1 if trained.direction == "source-to-target" else 0  # the input side is shuffled
    tokens = sum(len(trained.output_codec.ids(pair[output_side])) + 1 for pair in pairs)
    nll = -math.fsum(scorer.log_probs(pairs))
    shuffled_nll = -math.fsum(scorer.log_probs(shuffled(pairs, seed, 1 - output_side)))
    return PerplexityResult(len(pairs), tokens, nll, shuffled_nll, seed)
