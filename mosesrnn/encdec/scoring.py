"""Scoring text pairs with an RNN Encoder-Decoder, in batches: the values of the rnn column, and the held-out
pairs' NLL and perplexity (:func:`evaluate`, :func:`evaluate_log_z`) that training validates with.

Per batch of pairs: the text becomes ids in bulk (:class:`~mosesrnn.encdec.pair_ids.PairEncoder`: each
distinct phrase the model reads once, every phrase as one flat array; a worker process may do this part),
each distinct input is encoded once (its :class:`~mosesrnn.encdec.decoder.DecoderContext`), the pairs are
sorted by output length and cut into batches of about ``batch_tokens`` tokens, each batch's padded rows
cut from the arrays in one gather, copied to the device from pinned memory without waiting, and decoded
against its sources' contexts (gathered with ``index_select``); the values stay on the device until the
last batch, so that on a GPU the next batch is prepared while the current one runs, and come back in the
pairs' order in one copy. The lengths and every index that depends on them (the batches, each batch's order by
length and its real positions, :mod:`~mosesrnn.encdec.packing`) are worked out on the host, from the numpy
arrays they come from: nothing is read back from the device until that one copy, so a chunk waits for a GPU
once. Model, batching and dtype are fixed for the whole run.

``compile`` runs the recurrent steps compiled (:mod:`~mosesrnn.encdec.compiled`: ``torch.compile``, and CUDA
graphs on a GPU); off by default, the values of the eager path are written byte for byte.

With ``normalizer="skip"`` (a model trained self-normalised, ``train --self-norm``) the decoder reads
the targets' raw scores g_y . s + b_y: only the rows of the output matrix G_l of the target ids, gathered
per batch, and no K-way normaliser (Devlin et al. 2014). Everything else is as above: each distinct
source is encoded once, its context shared by its targets. The value is log p(y | x) + the sum of
log Z over the predicted positions, which self-normalised training keeps near 0. Under int8 the output
matrix stays float32 there (it is a gather, not a matmul: nothing to quantise for speed).
"""
from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ..errors import MosesRNNError
from ..runtime.devices import resolve_device
from ..runtime.precision import precision
from ..text.id_arrays import IdArrays, length_batches
from .compiled import compile_mode, compiled_steps
from .config import NORMALIZERS
from .data import PairSet
from .decoder import DecoderContext
from .direction import probability
from .model import EncoderDecoder
from .model_file import TrainedEncoderDecoder
from .packing import to_device
from .pair_ids import EncodedPairs, Pair, PairEncoder

__all__ = ["PairScorer", "ScoresInFlight", "word_perplexity", "autocast", "evaluate", "ValidStats", "evaluate_log_z"]


class PairScorer:
    """log p(output side | input side) of text pairs under a trained model.

    ``direction`` must equal the model's (None takes the model's): a ``target-to-source`` model
    reads the table's target phrase and scores p(source | target). With ``length_normalize``
    log p is divided by the number of predicted tokens (tokens + EOS). ``normalizer``: ``exact`` (log p)
    or ``skip`` (the raw score of a self-normalised model, see the module docstring; the caller checks
    that the model is one). ``name`` says in errors which model it is (the rnn column's, the rnn-rev
    column's). ``encoder`` turns text into the ids :meth:`score` reads (picklable, for worker processes).
    ``compile``: False (eager), True or a mode of :data:`~mosesrnn.encdec.compiled.COMPILE_MODES` (the
    recurrent steps compiled; the values move by float rounding).
    """

    def __init__(self, trained: TrainedEncoderDecoder, *, direction: str | None = None, device: str = "cpu",
                 dtype: str = "fp32", batch_tokens: int = 4096, length_normalize: bool = False,
                 normalizer: str = "exact", name: str = "rnn", compile: bool | str = False):
        if direction is not None and direction != trained.direction:
            raise MosesRNNError(f"the {name} model was trained {trained.direction} (it scores "
                                f"{probability(trained.direction)}), not {direction}")
        if normalizer not in NORMALIZERS:
            raise MosesRNNError(f"normalizer must be one of {', '.join(NORMALIZERS)}, not {normalizer!r}")
        self.trained, self.direction = trained, trained.direction
        self.device, self.batch_tokens = resolve_device(device), batch_tokens
        self.precision = precision(dtype, self.device)
        self.dtype = self.precision.name  # auto resolved: the signature says what ran
        self.length_normalize, self.normalizer = length_normalize, normalizer
        self.compile = compile_mode(compile, self.device)  # None: eager
        self.encoder = PairEncoder(trained.input_codec, trained.output_codec, trained.direction)
        # skipping the normaliser, the output matrix is read by rows (a gather): it stays float under int8
        output_layer = f"decoder.{trained.model.decoder.output_layer}"
        self.model = self.precision.prepare(trained.model, keep_float=(output_layer,) if normalizer == "skip" else ())

    def settings(self) -> dict:
        """Model digest and every setting that changes the values (the batch size and the device move
        them by float rounding alone, about 1e-6: not these)."""
        return {"model": self.trained.digest, "direction": self.direction, "dtype": self.dtype,
                "length_normalize": self.length_normalize, "normalizer": self.normalizer}

    def log_probs(self, pairs: Sequence[Pair]) -> list[float]:
        """log p(output side | input side) of every pair (anything with ``.source`` and ``.target`` text, in
        table orientation), in order (normalised if asked)."""
        return self.score(self.encoder(pairs)).tolist()

    def score(self, encoded: EncodedPairs) -> np.ndarray:
        """:meth:`log_probs` of pairs already in ids (by :attr:`encoder`, maybe in another process): (pairs,)
        float64."""
        return self.launch(encoded).values()

    def launch(self, encoded: EncodedPairs) -> "ScoresInFlight":
        """:meth:`score`, started: on a GPU every batch is queued and the values' copy back too, and this returns
        without waiting for them, so that the caller can queue the next chunk before it reads this one's
        (:meth:`ScoresInFlight.values`); on a CPU the work is done here."""
        if not len(encoded):
            return ScoresInFlight(np.empty(0, dtype=np.int64), torch.empty(0, dtype=torch.float64))
        with torch.inference_mode(), self.precision.autocast(), compiled_steps(self.compile):
            context, row_of_input = self._encode(encoded.inputs)
            return self._decode(context, row_of_input[encoded.line_input], encoded.outputs)

    def token_log_probs(self, pairs: Sequence[Pair]) -> list[list[float]]:
        """log p of each predicted token (the output side's tokens, then EOS) of every pair, in order: the
        terms whose sum :meth:`log_probs` gives (unnormalised)."""
        encoded = self.encoder(pairs)
        if not len(encoded):
            return []
        rows: list[list[float]] = [[] for _ in range(len(encoded))]
        with torch.inference_mode(), self.precision.autocast():
            context, row_of_input = self._encode(encoded.inputs)
            line_row = row_of_input[encoded.line_input]
            for batch in length_batches(encoded.outputs.lengths + 1, self.batch_tokens):
                trg, trg_lengths = self._padded(encoded.outputs, batch, append_eos=True)  # (b, T), (b,)
                steps = self.model.score_token_log_probs(context.index_select(self._copied(line_row[batch])),
                                                         trg, trg_lengths)
                for row, i, length in zip(steps.double().cpu().tolist(), batch.tolist(), trg_lengths.tolist()):
                    rows[i] = row[:length]
        return rows

    def _copied(self, array: np.ndarray) -> torch.Tensor:
        """``array`` on the device: as it is on a CPU; else from pinned memory, without waiting."""
        return to_device(array, self.device)

    def _padded(self, phrases: IdArrays, rows: np.ndarray, append_eos: bool = False) -> tuple[torch.Tensor, ...]:
        """The padded ids and lengths of ``phrases[rows]`` on the device."""
        return tuple(map(self._copied, phrases.padded(rows, append_eos)))

    def _encode(self, inputs: IdArrays) -> tuple[DecoderContext, np.ndarray]:
        """Encode each distinct input once, in length batches.

        Returns the contexts, rows in length order, and the row of each input, shape (inputs,).
        """
        batches = length_batches(inputs.lengths, self.batch_tokens)
        parts = [self.model.source_context(*self._padded(inputs, batch)) for batch in batches]
        order = np.concatenate(batches)
        row_of_input = np.empty_like(order)
        row_of_input[order] = np.arange(len(order))
        return type(parts[0]).cat(parts), row_of_input

    def _decode(self, context: DecoderContext, line_row: np.ndarray, outputs: IdArrays) -> "ScoresInFlight":
        """log p of every output against its context row ``line_row``, in flight (see :meth:`launch`)."""
        batches = length_batches(outputs.lengths + 1, self.batch_tokens)
        order = np.concatenate(batches)
        rows = self._copied(line_row[order])  # each pair's context row, in batch order: one copy
        values, start = [], 0
        for batch in batches:
            padded, lengths = outputs.padded(batch, True)  # on the host: (b, T), (b,), EOS appended
            trg, trg_lengths = self._copied(padded), self._copied(lengths)
            ctx = context.index_select(rows[start:start + len(batch)])
            value = self.model.score_log_prob(ctx, trg, trg_lengths, normalizer=self.normalizer, lengths=lengths)
            if self.length_normalize:
                value = value / trg_lengths
            values.append(value.double())
            start += len(batch)
        return ScoresInFlight(order, torch.cat(values))


class ScoresInFlight:
    """The values of one :meth:`PairScorer.launch`: on a GPU, copied to pinned host memory behind the batches that
    make them, an event recorded after the copy; :meth:`values` waits for that event, the one wait of a chunk."""

    def __init__(self, order: np.ndarray, values: torch.Tensor):
        self._order, self._event = order, None
        if values.device.type == "cpu":
            self._host = values
            return
        self._host = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
        self._host.copy_(values, non_blocking=True)
        self._event = torch.cuda.Event()
        self._event.record()

    def values(self) -> np.ndarray:
        """The values, (pairs,) float64 in the pairs' order (waiting for the device where they are on one)."""
        if self._event is not None:
            self._event.synchronize()
        log_p = np.empty(len(self._order))
        log_p[self._order] = self._host.numpy()
        return log_p


def word_perplexity(nll_per_pair: float, pairs: int, output_words: int) -> float:
    """Perplexity per Moses word: exp(total NLL / (output words + one EOS per pair)).

    The same normaliser for every tokenizer, so word and subword models compare."""
    return math.exp(nll_per_pair * pairs / (output_words + pairs))


def autocast(device: torch.device, dtype: str):
    """bfloat16 autocast (fp32 master weights) for ``bf16``, else nothing."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16) if dtype == "bf16" else nullcontext()


@torch.no_grad()
def evaluate(model: EncoderDecoder, pairs: PairSet, batch_size: int = 256,
             device: torch.device = torch.device("cpu"), dtype: str = "fp32") -> tuple[float, float]:
    """(NLL per pair in nats, per-token perplexity) of ``pairs``, batched by similar lengths."""
    was_training = model.training
    model.eval()
    lengths = np.diff(pairs.src_offsets) * 1000 + np.diff(pairs.trg_offsets)
    order = np.argsort(lengths, kind="stable")
    total = 0.0
    for start in range(0, len(order), batch_size):
        with autocast(device, dtype):
            log_p = model.log_prob(*pairs.batch(order[start:start + batch_size], device))  # (B,)
        total -= float(log_p.double().sum())
    model.train(was_training)
    return total / len(pairs), math.exp(total / pairs.target_tokens())


@dataclass(frozen=True)
class ValidStats:
    """The held-out pairs' exact NLL per pair and perplexity per token, and log Z = log sum_j exp(g_j . s)
    over their predicted positions: its mean and standard deviation (0 for a self-normalised model)."""

    nll: float
    perplexity: float
    log_z_mean: float
    log_z_std: float


@torch.no_grad()
def evaluate_log_z(model: EncoderDecoder, pairs: PairSet, batch_size: int = 256,
                   device: torch.device = torch.device("cpu"), dtype: str = "fp32") -> ValidStats:
    """:func:`evaluate`'s exact NLL and perplexity (in the scorer's order) with log Z's mean and spread over
    the predicted positions (RCTM II's EOS position, a Poisson length term, counts with log Z = 0)."""
    was_training = model.training
    model.eval()
    lengths = np.diff(pairs.src_offsets) * 1000 + np.diff(pairs.trg_offsets)
    order = np.argsort(lengths, kind="stable")
    total = log_z = log_z_sq = 0.0
    for start in range(0, len(order), batch_size):
        with autocast(device, dtype):
            terms = model(*pairs.batch(order[start:start + batch_size], device), terms=True)  # (B,) each
        total -= float(terms.log_p.double().sum())
        log_z += float(terms.log_z.double().sum())
        log_z_sq += float(terms.log_z_sq.double().sum())
    model.train(was_training)
    positions = pairs.target_tokens()
    mean = log_z / positions
    return ValidStats(total / len(pairs), math.exp(total / positions), mean,
                      math.sqrt(max(log_z_sq / positions - mean * mean, 0.0)))
