"""The RNN Encoder-Decoder score as a phrase-table column: exp(log p(target | source)).

Per chunk of lines: group the lines by source phrase and encode each distinct source once
(`SourceEncoding`: c, m_x, h'_0, the gate and output contexts), sort the pairs by target length
and cut them into batches of about `batch_tokens` target tokens, decode each batch against its
sources' encodings (gathered with `index_select`), and put the log-probabilities back in the
lines' order. Model, batching and dtype are fixed for the whole run.
"""
from __future__ import annotations

import contextlib
from dataclasses import fields
from typing import Sequence

import torch

from .batching import pad, phrase_ids
from .devices import resolve_device
from .features import moses_exp
from .model import SourceEncoding
from .model_file import DIRECTIONS, TrainedModel
from .phrase_table import PhraseEntry

__all__ = ["RNNFeature", "DTYPES", "group_by_source", "length_batches"]

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


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


def _concat(encodings: Sequence[SourceEncoding]) -> SourceEncoding:
    """Stack the rows of several SourceEncodings into one."""
    return SourceEncoding(*(torch.cat([getattr(enc, f.name) for enc in encodings])
                            for f in fields(SourceEncoding)))


class RNNFeature:
    """log p(target | source) under a trained model, written as exp(log p) with 9 digits.

    ``direction`` must equal the model's (None takes the model's): a ``target-to-source`` model
    reads the table's target phrase and scores p(source | target). With ``length_normalize``
    log p is divided by the number of predicted tokens (words + EOS).
    """

    name = "rnn"

    def __init__(self, trained: TrainedModel, *, direction: str | None = None, device: str = "cpu",
                 dtype: str = "fp32", batch_tokens: int = 4096, length_normalize: bool = False,
                 digits: int = 9):
        if direction is not None and direction != trained.direction:
            raise ValueError(f"the model was trained {trained.direction} (it scores "
                             f"{_probability(trained.direction)}), not {direction}")
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
        self.trained, self.direction = trained, trained.direction
        self.device, self.dtype, self.batch_tokens = resolve_device(device), dtype, batch_tokens
        self.length_normalize, self.digits = length_normalize, digits
        self.model = trained.model.to(self.device).eval()

    def describe(self) -> str:
        """Model digest and every setting that changes the values, for the signature."""
        return (f"rnn(model={self.trained.digest},direction={self.direction},dtype={self.dtype},"
                f"length_normalize={str(self.length_normalize).lower()})")

    def compute(self, entries: Sequence[PhraseEntry]) -> list[str]:
        """``exp(log p)`` of every entry, in order, with ``digits`` significant digits."""
        return [moses_exp(value, self.digits) for value in self.log_probs(entries)]

    def log_probs(self, entries: Sequence[PhraseEntry]) -> list[float]:
        """log p(output side | input side) of every entry, in order (normalised if asked)."""
        if not entries:
            return []
        forward = self.direction == DIRECTIONS[0]
        inputs = [entry.source if forward else entry.target for entry in entries]
        outputs = [entry.target if forward else entry.source for entry in entries]
        sources, line_source = group_by_source(inputs)
        with torch.inference_mode(), self._autocast():
            encoding, row_of_source = self._encode([phrase_ids(self.trained.input_vocabulary, s)
                                                    for s in sources])
            targets = [phrase_ids(self.trained.output_vocabulary, t) for t in outputs]
            return self._decode(encoding, row_of_source[line_source], targets).tolist()

    def _autocast(self):
        if self.dtype == "fp32":
            return contextlib.nullcontext()
        return torch.autocast(self.device, dtype=DTYPES[self.dtype])

    def _encode(self, sources: list[list[int]]) -> tuple[SourceEncoding, torch.Tensor]:
        """Encode each distinct source once, in length batches.

        Returns the encodings, rows in length order, and the row of each source, shape (sources,).
        """
        batches = length_batches([len(ids) for ids in sources], self.batch_tokens)
        parts = []
        for batch in batches:
            src, src_lengths = pad([sources[i] for i in batch])  # (b, S), (b,)
            parts.append(self.model.encode(src.to(self.device), src_lengths.to(self.device)))
        order = torch.tensor([i for batch in batches for i in batch])
        row_of_source = torch.empty_like(order).index_copy_(0, order, torch.arange(len(order)))
        return _concat(parts), row_of_source

    def _decode(self, encoding: SourceEncoding, line_source: torch.Tensor,
                targets: list[list[int]]) -> torch.Tensor:
        """log p of every target against its source's encoding; returns (lines,) float64 on CPU."""
        log_p = torch.empty(len(targets), dtype=torch.float64)
        for batch in length_batches([len(ids) + 1 for ids in targets], self.batch_tokens):
            trg, trg_lengths = pad([targets[i] for i in batch], append_eos=True)  # (b, T), (b,)
            index = torch.tensor(batch)
            enc = encoding.index_select(line_source[index].to(self.device))
            values = self.model.score_log_prob(enc, trg.to(self.device), trg_lengths.to(self.device))
            if self.length_normalize:
                values = values / trg_lengths.to(values.device)
            log_p[index] = values.double().cpu()
        return log_p


def _probability(direction: str) -> str:
    return "p(target | source)" if direction == DIRECTIONS[0] else "p(source | target)"
