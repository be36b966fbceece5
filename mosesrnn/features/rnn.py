"""The RNN Encoder-Decoder's log p(target | source) as a feature.

Per batch of pairs: group the pairs by the phrase the model reads and encode each distinct one
once (its :class:`~mosesrnn.models.decoder.DecoderContext`), sort the pairs by output length and
cut them into batches of about ``batch_tokens`` tokens, decode each batch against its sources'
contexts (gathered with ``index_select``), and put the log-probabilities back in the pairs' order.
Model, batching and dtype are fixed for the whole run.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..devices import resolve_device
from ..direction import SOURCE_TO_TARGET, opposite, orient, probability
from ..models.batching import pad
from ..models.decoder import DecoderContext
from ..models.model_file import TrainedModel
from ..models.precision import precision
from .registry import FEATURES, FeatureOptions, Pair

__all__ = ["RNNFeature", "group_by_source", "length_batches", "build", "build_reverse"]


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


class RNNFeature:
    """log p(output side | input side) under a trained model.

    ``direction`` must equal the model's (None takes the model's): a ``target-to-source`` model
    reads the table's target phrase and scores p(source | target). With ``length_normalize``
    log p is divided by the number of predicted tokens (tokens + EOS). ``spec`` names the column:
    ``rnn``, or ``rnn-rev`` for the second model of the other direction.
    """

    def __init__(self, trained: TrainedModel, *, spec=FEATURES["rnn"], direction: str | None = None,
                 device: str = "cpu", dtype: str = "fp32", batch_tokens: int = 4096,
                 length_normalize: bool = False):
        if direction is not None and direction != trained.direction:
            raise ValueError(f"the {spec.name} model was trained {trained.direction} (it scores "
                             f"{probability(trained.direction)}), not {direction}")
        self.spec = spec
        self.trained, self.direction = trained, trained.direction
        self.device, self.batch_tokens = resolve_device(device), batch_tokens
        self.precision = precision(dtype, self.device)
        self.dtype = self.precision.name  # auto resolved: the signature says what ran
        self.length_normalize = length_normalize
        self.model = self.precision.prepare(trained.model)

    def settings(self) -> dict:
        """Model digest and every setting that changes the values."""
        return {"model": self.trained.digest, "direction": self.direction, "dtype": self.dtype,
                "length_normalize": self.length_normalize, "batch_tokens": self.batch_tokens,
                "device": self.device}

    def values(self, pairs: Sequence[Pair]) -> list[float]:
        """log p(output side | input side) of every pair, in order (normalised if asked)."""
        if not pairs:
            return []
        inputs, outputs = zip(*(orient(self.direction, pair.source, pair.target) for pair in pairs))
        sources, line_source = group_by_source(inputs)
        input_codec, output_codec = self.trained.input_codec, self.trained.output_codec
        with torch.inference_mode(), self.precision.autocast():
            context, row_of_source = self._encode([input_codec.ids(source) for source in sources])
            targets = [output_codec.ids(output) for output in outputs]
            return self._decode(context, row_of_source[line_source], targets).tolist()

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
            values = self.model.score_log_prob(ctx, trg.to(self.device), trg_lengths.to(self.device))
            if self.length_normalize:
                values = values / trg_lengths.to(values.device)
            log_p[index] = values.double().cpu()
        return log_p


def build(options: FeatureOptions) -> RNNFeature:
    """The feature over ``--model``, with the scoring options."""
    return RNNFeature(options.trained_model("rnn"), direction=options.direction,
                      device=options.device, dtype=options.dtype, batch_tokens=options.batch_tokens,
                      length_normalize=options.length_normalize)


def build_reverse(options: FeatureOptions) -> RNNFeature:
    """The feature over ``--reverse-model``, which must score the direction opposite to rnn's
    (``--direction``, else the ``-m`` model's, else source-to-target): p(source | target) beside
    p(target | source), as Moses keeps both translation directions."""
    forward = options.direction or (options.trained_model("rnn").direction if options.model else SOURCE_TO_TARGET)
    wanted = opposite(forward)
    trained = options.trained_model("rnn-rev", "reverse_model")
    if trained.direction != wanted:
        raise ValueError(f"--reverse-model {options.reverse_model} was trained {trained.direction} (it scores "
                         f"{probability(trained.direction)}); rnn-rev needs a model trained {wanted} "
                         f"(mosesrnn train TABLE --direction {wanted})")
    return RNNFeature(trained, spec=FEATURES["rnn-rev"], direction=wanted, device=options.device,
                      dtype=options.dtype, batch_tokens=options.batch_tokens,
                      length_normalize=options.length_normalize)
