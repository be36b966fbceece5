"""Scoring text pairs with an RNN Encoder-Decoder, in batches: the values of the rnn column.

Per batch of pairs: group the pairs by the phrase the model reads and encode each distinct one
once (its :class:`~mosesrnn.encdec.decoder.DecoderContext`), sort the pairs by output length and
cut them into batches of about ``batch_tokens`` tokens, decode each batch against its sources'
contexts (gathered with ``index_select``), and put the log-probabilities back in the pairs' order.
Model, batching and dtype are fixed for the whole run.

With ``normaliser="skip"`` (a model trained self-normalised, ``train --self-norm``) the decoder reads
the targets' raw scores g_y . s + b_y: only the rows of the output matrix G_l of the target ids, gathered
per batch, and no K-way normaliser (Devlin et al. 2014). Everything else is as above: each distinct
source is encoded once, its context shared by its targets. The value is log p(y | x) + the sum of
log Z over the predicted positions, which self-normalised training keeps near 0. Under int8 the output
matrix stays float32 there (it is a gather, not a matmul: nothing to quantise for speed).
"""
from __future__ import annotations

from typing import Protocol, Sequence

import torch

from ..runtime.devices import resolve_device
from ..runtime.precision import precision
from .batching import pad
from .decoder import NORMALISERS, DecoderContext
from .direction import orient, probability
from .model_file import TrainedModel

__all__ = ["Pair", "PairScorer", "group_by_source", "length_batches"]


class Pair(Protocol):
    """A pair as the scorer reads it: the source and target text, table orientation."""

    source: str
    target: str


def group_by_source(sources: Sequence[str]) -> tuple[list[str], list[int]]:
    """The distinct sources in order of first appearance, and each line's index into them.

    >>> group_by_source(["a", "b", "a"])
    (['a', 'b'], [0, 1, 0])
    """
    index: dict[str, int] = {}
    line_source = [index.setdefault(source, len(index)) for source in sources]
    return list(index), line_source


def length_batches(lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Cut positions into batches of similar length, shortest first.

    Positions are sorted by length (ties keep input order), then cut so that a batch's rows
    times its longest length stays within ``batch_tokens`` (a batch has at least one row).
    """
    batches: list[list[int]] = []
    current: list[int] = []
    for position in sorted(range(len(lengths)), key=lengths.__getitem__):
        if current and (len(current) + 1) * lengths[position] > batch_tokens:
            batches.append(current)
            current = []
        current.append(position)
    if current:
        batches.append(current)
    return batches


class PairScorer:
    """log p(output side | input side) of text pairs under a trained model.

    ``direction`` must equal the model's (None takes the model's): a ``target-to-source`` model
    reads the table's target phrase and scores p(source | target). With ``length_normalize``
    log p is divided by the number of predicted tokens (tokens + EOS). ``normaliser``: ``exact`` (log p)
    or ``skip`` (the raw score of a self-normalised model, see the module docstring; the caller checks
    that the model is one). ``name`` says in errors which model it is (the rnn column's, the rnn-rev
    column's).
    """

    def __init__(self, trained: TrainedModel, *, direction: str | None = None, device: str = "cpu",
                 dtype: str = "fp32", batch_tokens: int = 4096, length_normalize: bool = False,
                 normaliser: str = "exact", name: str = "rnn"):
        if direction is not None and direction != trained.direction:
            raise ValueError(f"the {name} model was trained {trained.direction} (it scores "
                             f"{probability(trained.direction)}), not {direction}")
        if normaliser not in NORMALISERS:
            raise ValueError(f"normalizer must be one of {', '.join(NORMALISERS)}, not {normaliser!r}")
        self.trained, self.direction = trained, trained.direction
        self.device, self.batch_tokens = resolve_device(device), batch_tokens
        self.precision = precision(dtype, self.device)
        self.dtype = self.precision.name  # auto resolved: the signature says what ran
        self.length_normalize, self.normaliser = length_normalize, normaliser
        # skipping the normaliser, the output matrix is read by rows (a gather): it stays float under int8
        output_layer = f"decoder.{trained.model.decoder.output_layer}"
        self.model = self.precision.prepare(trained.model, keep_float=(output_layer,) if normaliser == "skip" else ())

    def settings(self) -> dict:
        """Model digest and every setting that changes the values (the batch size and the device move
        them by float rounding alone, about 1e-6: not these)."""
        return {"model": self.trained.digest, "direction": self.direction, "dtype": self.dtype,
                "length_normalize": self.length_normalize, "normalizer": self.normaliser}

    def log_probs(self, pairs: Sequence[Pair]) -> list[float]:
        """log p(output side | input side) of every pair (anything with ``.source`` and ``.target`` text, in
        table orientation), in order (normalised if asked)."""
        if not pairs:
            return []
        inputs, outputs = zip(*(orient(self.direction, pair.source, pair.target) for pair in pairs))
        sources, line_source = group_by_source(inputs)
        input_codec, output_codec = self.trained.input_codec, self.trained.output_codec
        with torch.inference_mode(), self.precision.autocast():
            context, row_of_source = self._encode([input_codec.ids(source) for source in sources])
            targets = [output_codec.ids(output) for output in outputs]
            return self._decode(context, row_of_source[line_source], targets).tolist()

    def token_log_probs(self, pairs: Sequence[Pair]) -> list[list[float]]:
        """log p of each predicted token (the output side's tokens, then EOS) of every pair, in order: the
        terms whose sum :meth:`log_probs` gives (unnormalised)."""
        if not pairs:
            return []
        inputs, outputs = zip(*(orient(self.direction, pair.source, pair.target) for pair in pairs))
        sources, line_source = group_by_source(inputs)
        with torch.inference_mode(), self.precision.autocast():
            context, row_of_source = self._encode([self.trained.input_codec.ids(source) for source in sources])
            targets = [self.trained.output_codec.ids(output) for output in outputs]
            rows: list[list[float]] = [[] for _ in targets]
            for batch in length_batches([len(ids) + 1 for ids in targets], self.batch_tokens):
                trg, trg_lengths = pad([targets[i] for i in batch], append_eos=True)  # (b, T), (b,)
                ctx = context.index_select(row_of_source[[line_source[i] for i in batch]].to(self.device))
                steps = self.model.score_token_log_probs(ctx, trg.to(self.device), trg_lengths.to(self.device))
                for row, i in zip(steps.double().cpu().tolist(), batch):
                    rows[i] = row[:len(targets[i]) + 1]
        return rows

    def _encode(self, sources: list[list[int]]) -> tuple[DecoderContext, torch.Tensor]:
        """Encode each distinct source once, in length batches.

        Returns the contexts, rows in length order, and the row of each source, shape (sources,).
        """
        batches = length_batches([len(ids) for ids in sources], self.batch_tokens)
        parts = []
        for batch in batches:
            src, src_lengths = pad([sources[i] for i in batch])  # (b, S), (b,)
            parts.append(self.model.source_context(src.to(self.device), src_lengths.to(self.device)))
        order = torch.tensor([i for batch in batches for i in batch])
        row_of_source = torch.empty_like(order).index_copy_(0, order, torch.arange(len(order)))
        return type(parts[0]).cat(parts), row_of_source

    def _decode(self, context: DecoderContext, line_source: torch.Tensor,
                targets: list[list[int]]) -> torch.Tensor:
        """log p of every target against its source's context; returns (lines,) float64 on CPU."""
        log_p = torch.empty(len(targets), dtype=torch.float64)
        for batch in length_batches([len(ids) + 1 for ids in targets], self.batch_tokens):
            trg, trg_lengths = pad([targets[i] for i in batch], append_eos=True)  # (b, T), (b,)
            index = torch.tensor(batch)
            ctx = context.index_select(line_source[index].to(self.device))
            values = self.model.score_log_prob(ctx, trg.to(self.device), trg_lengths.to(self.device),
                                               normaliser=self.normaliser)
            if self.length_normalize:
                values = values / trg_lengths.to(values.device)
            log_p[index] = values.double().cpu()
        return log_p
