"""Search and sampling with a trained encoder-decoder, all through the decoder's one step function.

Three ways to produce target sequences for a batch of sources (B, S):

- :func:`greedy`: the most probable word at every step;
- :func:`beam_search`: the beam search of Cho et al. (2014b, Sec. 3, after Graves 2012 and
  Boulanger-Lewandowski et al. 2013), batched over sentences with one beam per sentence. A
  hypothesis ends when it emits EOS and leaves the beam, which then shrinks by one, so each
  sentence collects ``beam_size`` finished hypotheses (beam 1 is greedy search). Hypotheses with
  an unknown word are excluded, as in the paper, by never extending one with ``<unk>``. Finished
  hypotheses are ranked by log p(y|x), or by log p(y|x) / (words + EOS) with ``length_normalize``;
- :func:`sample`: ancestral sampling from p(y|x) (C14, Table 3), reproducible with a
  ``torch.Generator``.

Every hypothesis ends with EOS: at a source's length limit (:func:`max_lengths`) only EOS may be
chosen. Log-probabilities include the EOS, as in scoring, so a hypothesis' ``log_prob`` equals what
``mosesrnn score`` gives the same pair (to float rounding).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..errors import MosesRNNError
from ..text.vocab import EOS_ID, PAD_ID, UNK_ID
from .model import EncoderDecoder

__all__ = ["DecodedSequence", "max_lengths", "greedy", "beam_search", "sample"]

NEG_INF = float("-inf")


@dataclass(frozen=True)
class DecodedSequence:
    """A finished target sequence: ``ids`` without the EOS; ``log_prob`` = log p(y|x) with the EOS;
    ``score`` is what ranks it (``log_prob``, or ``log_prob / (len(ids) + 1)`` when normalised)."""

    ids: tuple[int, ...]
    log_prob: float
    score: float


def _decoded(ids, log_prob: float, length_normalize: bool) -> DecodedSequence:
    ids = tuple(int(i) for i in ids)
    return DecodedSequence(ids, log_prob, log_prob / (len(ids) + 1) if length_normalize else log_prob)


def max_lengths(src_lengths: Tensor, ratio: float = 2.0, extra: int = 10) -> Tensor:
    """Most words a hypothesis may have before its EOS: ``ratio * source length + extra``; (B,)."""
    return (src_lengths.double() * ratio).floor().long() + extra


def _allowed(log_probs: Tensor, steps_done: Tensor, limit: Tensor, exclude_unk: bool) -> Tensor:
    """log p (R, K) with the words that may not come next at -inf: PAD always, UNK if excluded,
    and every word but EOS for rows whose hypotheses have ``limit`` words already (R,)."""
    log_probs = log_probs.clone()
    log_probs[:, PAD_ID] = NEG_INF
    if exclude_unk:
        log_probs[:, UNK_ID] = NEG_INF
    at_limit = steps_done >= limit  # (R,)
    if at_limit.any():
        eos = log_probs[at_limit, EOS_ID].clone()
        log_probs[at_limit] = NEG_INF
        log_probs[at_limit, EOS_ID] = eos
    return log_probs


@torch.inference_mode()
def greedy(model: EncoderDecoder, src: Tensor, src_lengths: Tensor, *, exclude_unk: bool = True,
           limit: Tensor | None = None) -> list[DecodedSequence]:
    """The most probable next word at each step until EOS, for sources (B, S) of lengths (B,)."""
    limit = max_lengths(src_lengths) if limit is None else limit
    ctx = model.source_context(src, src_lengths)
    h, prev = model.initial_state(ctx), None
    B = src.size(0)
    words = torch.zeros(B, 0, dtype=torch.long, device=src.device)
    log_prob = torch.zeros(B, dtype=torch.float64, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    while not done.all():
        log_probs, h = model.step(ctx, prev, h)  # (B, K), (B, H)
        log_probs = _allowed(log_probs, torch.full_like(limit, words.size(1)), limit, exclude_unk)
        best, prev = log_probs.max(dim=-1)  # (B,), (B,)
        log_prob += torch.where(done, 0.0, best.double())
        words = torch.cat([words, torch.where(done, PAD_ID, prev)[:, None]], dim=1)
        done |= prev == EOS_ID
    return [_decoded([w for w in row.tolist() if w not in (EOS_ID, PAD_ID)], float(lp), False)
            for row, lp in zip(words, log_prob)]


@torch.inference_mode()
def beam_search(model: EncoderDecoder, src: Tensor, src_lengths: Tensor, beam_size: int, *,
                nbest: int = 1, length_normalize: bool = False, exclude_unk: bool = True,
                limit: Tensor | None = None, with_greedy: bool = True) -> list[list[DecodedSequence]]:
    """Beam search for sources (B, S) of lengths (B,); the ``nbest`` best of each sentence's
    ``beam_size`` finished hypotheses, best first.

    A beam can prune the path greedy search follows and end below it (a tiny random model: beam 2
    -71.94 against greedy -71.86). With ``with_greedy`` the greedy hypothesis joins each sentence's
    finished ones (at 1/beam_size of the cost), so the best returned never scores below greedy's.

    State: ``k = beam_size`` lanes per sentence (rows ``b * k + j``); a lane whose score is -inf is
    empty. Each step extends the live lanes of every unfinished sentence with every word, keeps a
    sentence's ``k - finished`` best extensions, and moves those ending in EOS to its finished list.
    """
    if not 1 <= nbest <= beam_size:
        raise MosesRNNError(f"nbest must be between 1 and the beam size {beam_size}, not {nbest}")
    k, B, device = beam_size, src.size(0), src.device
    limit = max_lengths(src_lengths) if limit is None else limit
    sentences = torch.arange(B, device=device)  # which input sentence each active sentence is
    ctx = model.source_context(src, src_lengths).index_select(sentences.repeat_interleave(k))
    h, prev = model.initial_state(ctx), None  # (B*k, H)
    scores = torch.full((B, k), NEG_INF, dtype=torch.float64, device=device)
    scores[:, 0] = 0.0  # one live hypothesis to start with
    words = torch.zeros(B * k, 0, dtype=torch.long, device=device)  # (rows, t)
    finished: list[list[DecodedSequence]] = [[] for _ in range(B)]
    while len(sentences):
        log_probs, h = model.step(ctx, prev, h)  # (n*k, K)
        steps_done = torch.full((len(sentences) * k,), words.size(1), device=device)
        log_probs = _allowed(log_probs, steps_done, limit[sentences].repeat_interleave(k), exclude_unk)
        vocab = log_probs.size(-1)
        candidates = (scores[:, :, None] + log_probs.double().view(-1, k, vocab)).view(-1, k * vocab)
        top_scores, top = candidates.topk(k, dim=-1)  # (n, k), sorted best first
        width = torch.tensor([k - len(finished[b]) for b in sentences.tolist()], device=device)
        top_scores = top_scores.masked_fill(torch.arange(k, device=device) >= width[:, None], NEG_INF)
        lane, word = top // vocab, top % vocab  # (n, k)
        rows = (torch.arange(len(sentences), device=device)[:, None] * k + lane).view(-1)  # (n*k,)
        words = torch.cat([words[rows], word.view(-1, 1)], dim=1)
        ends = (word == EOS_ID) & (top_scores > NEG_INF)  # (n, k)
        for i, j in ends.nonzero().tolist():
            finished[sentences[i]].append(_decoded(words[i * k + j, :-1], float(top_scores[i, j]),
                                                      length_normalize))
        scores = top_scores.masked_fill(ends, NEG_INF)
        keep = torch.tensor([len(finished[b]) < k for b in sentences.tolist()], device=device) \
            & (scores > NEG_INF).any(dim=1)
        keep_rows = (keep.nonzero().view(-1, 1) * k + torch.arange(k, device=device)).view(-1)
        rows = rows[keep_rows]
        sentences, scores, words = sentences[keep], scores[keep], words[keep_rows]
        # A sentence's lanes share its source, so its context rows stay where they are.
        h, prev, ctx = h[rows], words[:, -1], ctx.index_select(keep_rows)
    if with_greedy:
        for hyps, best in zip(finished, greedy(model, src, src_lengths, exclude_unk=exclude_unk, limit=limit)):
            if all(hyp.ids != best.ids for hyp in hyps):
                hyps.append(_decoded(best.ids, best.log_prob, length_normalize))
    return [sorted(hyps, key=lambda hyp: -hyp.score)[:nbest] for hyps in finished]


@torch.inference_mode()
def sample(model: EncoderDecoder, src: Tensor, src_lengths: Tensor, num_samples: int, *,
           generator: torch.Generator | None = None, exclude_unk: bool = False,
           limit: Tensor | None = None) -> list[list[DecodedSequence]]:
    """``num_samples`` ancestral samples y ~ p(y|x) per source (B, S): at each step the next word
    is drawn from the decoder's distribution (with ``generator``, so a seed reproduces them)."""
    B, n = src.size(0), num_samples
    limit = (max_lengths(src_lengths) if limit is None else limit).repeat_interleave(n)
    ctx = model.source_context(src, src_lengths).index_select(torch.arange(B, device=src.device)
                                                              .repeat_interleave(n))
    h, prev = model.initial_state(ctx), None
    words = torch.zeros(B * n, 0, dtype=torch.long, device=src.device)
    log_prob = torch.zeros(B * n, dtype=torch.float64, device=src.device)
    done = torch.zeros(B * n, dtype=torch.bool, device=src.device)
    while not done.all():
        log_probs, h = model.step(ctx, prev, h)  # (B*n, K)
        log_probs = _allowed(log_probs, torch.full_like(limit, words.size(1)), limit, exclude_unk)
        prev = torch.multinomial(log_probs.float().exp(), 1, generator=generator).view(-1)  # (B*n,)
        log_prob += torch.where(done, 0.0, log_probs.gather(1, prev[:, None]).view(-1).double())
        prev = torch.where(done, PAD_ID, prev)
        words = torch.cat([words, prev[:, None]], dim=1)
        done |= prev == EOS_ID
    hyps = [_decoded([w for w in row.tolist() if w not in (EOS_ID, PAD_ID)], float(lp), False)
            for row, lp in zip(words, log_prob)]
    return [hyps[b * n:(b + 1) * n] for b in range(B)]
