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
from typing import Iterator, NamedTuple, Sequence

from ..encdec.model_file import TrainedEncoderDecoder, load_encoder_decoder
from ..encdec.scoring import PairScorer
from ..errors import MosesRNNError
from ..formats.phrase_table import read_entries
from ..formats.text_file import parallel_lines
from ..models import HeldOutText
from ..runtime.devices import resolve_device

__all__ = ["TextPair", "PerplexityResult", "perplexity", "shuffled", "text_pairs", "held_out_lines"]


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


def text_pairs(inputs: Sequence[str], encoding: str = "utf-8", limit: int | None = None) -> list[TextPair]:
    """The first ``limit`` (None: all) line pairs of two files SRC TRG, or the unique pairs of one phrase table."""
    if len(inputs) == 2:
        with parallel_lines(inputs, encoding, limit) as rows:
            return [TextPair(*texts) for _, texts in rows]
    unique: dict[TextPair, None] = {}
    with read_entries(inputs[0], encoding) as entries:
        for entry in entries:
            unique[TextPair(entry.source, entry.target)] = None
            if len(unique) == limit:
                break
    return list(unique)


def held_out_lines(path: str, held_out: HeldOutText) -> Iterator[str]:
    """``mosesrnn perplexity`` of an RNN Encoder-Decoder file: the gold targets' perplexity on SRC TRG (or a table's
    unique pairs), and with the sources shuffled (the registry's measure for the kind).

    Args:
        path: the model file.
        held_out: SRC TRG, or one phrase table, and how much of it to read.

    Yields:
        One line: :meth:`PerplexityResult.summary`.

    Raises:
        MosesRNNError: an unreadable input or model file, or no pair to measure.
    """
    pairs = text_pairs(held_out.inputs, held_out.encoding, held_out.limit)
    device = resolve_device(held_out.device)
    trained = load_encoder_decoder(path, map_location=device)
    yield perplexity(trained, pairs, seed=held_out.seed, device=device).summary()
