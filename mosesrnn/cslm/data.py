"""The CSLM's data: the n-grams of a tokenised corpus, its shortlist, and the validation split.

A corpus is one tokenised sentence a line (Moses words, factor 0; gzip or not), tokenised exactly as
the Moses system whose target side the LM scores. Each sentence becomes the stream
``<s> ... <s> w_1 ... w_m </s>`` with n-1 ``<s>`` in front, the padding NPLM and Moses use at the
start of a sentence; every position after the padding is one training example, predicted from
the n-1 tokens before it. Streams are kept flat (4 bytes a token) and contexts gathered per batch.

The vocabulary is the ``<pad>`` (NPLM's ``<null>``), ``<unk>``, ``</s>`` and ``<s>`` tokens and the
most frequent words; other words are ``<unk>``. Validation: a given file, or the sentences whose
hash falls in the first ``valid_share`` of the hash range (:mod:`mosesrnn.train.validation`: the split does not
depend on the order).
"""
from __future__ import annotations

import collections
import hashlib
from array import array
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import torch

from ..errors import MosesRNNError
from ..formats.text_file import text_lines
from ..text.tokenizers import words
from ..text.vocab import EOS_ID, RESERVED, Vocabulary, shortlist
from ..train.validation import held_out, split_hash

__all__ = ["BOS", "NgramSet", "LMData", "lm_vocabulary", "ngrams", "load_lm_data"]

BOS = "<s>"
#: Tokens no corpus word may be: NPLM's specials and ours.
SPECIAL = frozenset({*RESERVED, BOS, "<null>"})


def lm_vocabulary(counts: collections.Counter, size: int) -> Vocabulary:
    """``<s>`` and the ``size`` most frequent words (ties by the word), after the reserved tokens."""
    words_only = shortlist({w: c for w, c in counts.items() if w not in SPECIAL}, size)
    return Vocabulary([BOS, *words_only.itos[len(RESERVED):]], [0, *words_only.counts])


@dataclass
class NgramSet:
    """Token streams (int32, flat) and the positions (int64) of the tokens to predict."""

    tokens: np.ndarray
    positions: np.ndarray
    order: int
    words: int  # corpus words (</s> excluded), for reports

    def __len__(self) -> int:
        return len(self.positions)

    def contexts(self) -> np.ndarray:
        """Every example's context ``(N, n-1)``, oldest word first."""
        return self.tokens[self.positions[:, None] + np.arange(1 - self.order, 0)]

    def targets(self) -> np.ndarray:
        """Every example's predicted word ``(N,)``."""
        return self.tokens[self.positions]

    def fingerprint(self) -> str:
        """The count and a hash of the tokens (the ranks of a torchrun run compare it)."""
        digest = hashlib.blake2b(self.tokens.tobytes(), digest_size=8).hexdigest()
        return f"{len(self)} training n-grams, tokens {digest}"

    def batch(self, index: np.ndarray, device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
        """Contexts (B, n-1), oldest word first, and targets (B,) of the examples ``index``."""
        position = self.positions[index]  # (B,)
        context = self.tokens[position[:, None] + np.arange(1 - self.order, 0)]  # (B, n-1)
        return (torch.from_numpy(context.astype(np.int64)).to(device),
                torch.from_numpy(self.tokens[position].astype(np.int64)).to(device))


def ngrams(sentences: Iterable[list[int]], order: int, bos_id: int) -> NgramSet:
    """The n-gram examples of sentences given as word ids (no ``<s>``/``</s>``)."""
    tokens, positions, count = array("i"), array("q"), 0
    for ids in sentences:
        start = len(tokens) + order - 1
        tokens.extend([bos_id] * (order - 1))
        tokens.extend(ids)
        tokens.append(EOS_ID)
        positions.extend(range(start, len(tokens)))
        count += len(ids)
    return NgramSet(np.frombuffer(tokens, dtype=np.int32).copy(), np.frombuffer(positions, dtype=np.int64).copy(),
                    order, count)


@dataclass
class LMData:
    """Training and validation n-grams, the vocabulary, and how they were made."""

    train: NgramSet
    valid: NgramSet
    vocabulary: Vocabulary
    description: str
    coverage: float  # share of the training corpus' words inside the shortlist
    continued: object = None  # the network of the run being continued (its last.pt), None for a fresh one


def _sentences(path: str, encoding: str) -> list[tuple[int, list[str]]]:
    with text_lines(path, encoding) as lines:
        found = [(line_no, words(text.strip())) for line_no, text in lines]
    found = [(line_no, tokens) for line_no, tokens in found if tokens]
    if not found:
        raise MosesRNNError(f"{path}: no sentences (the file is empty or holds only blank lines)")
    return found


def load_lm_data(corpus: str, *, order: int, vocab_size: int, valid: str | None = None,
                 valid_share: float = 0.01, batch_size: int = 1, encoding: str = "utf-8",
                 vocabulary: Vocabulary | None = None) -> LMData:
    """Read ``corpus`` (and ``valid``), build the shortlist (or take ``vocabulary``), cut the n-grams.

    Raises FileLineError for text that is not ``encoding``, and MosesRNNError for an empty corpus or
    one too small to hold out a validation set and fill one training batch.
    """
    sentences = _sentences(corpus, encoding)
    if valid is not None:
        train_sentences, valid_sentences = [s for _, s in sentences], [s for _, s in _sentences(valid, encoding)]
    else:
        held = held_out(np.array([split_hash(" ".join(sentence)) for _, sentence in sentences], dtype=np.uint64),
                        valid_share)
        train_sentences = [s for (_, s), h in zip(sentences, held) if not h]
        valid_sentences = [s for (_, s), h in zip(sentences, held) if h]
        if not valid_sentences or not train_sentences:
            raise MosesRNNError(f"{corpus}: {len(sentences)} sentences are too few to hold out {valid_share:.1%} "
                                f"for validation and train on the rest: give a larger corpus, --valid-share, or "
                                "--valid FILE")
    counts = collections.Counter(word for sentence in train_sentences for word in sentence)
    vocabulary = vocabulary or lm_vocabulary(counts, vocab_size)
    bos = vocabulary.stoi[BOS]
    train = ngrams((vocabulary.ids(s) for s in train_sentences), order, bos)
    if len(train) < batch_size:
        raise MosesRNNError(f"{corpus}: {len(train)} training n-grams, fewer than one batch of {batch_size}")
    covered = sum(count for word, count in counts.items() if word in vocabulary) / max(sum(counts.values()), 1)
    what = f"corpus {corpus}" + (f", validation {valid}" if valid else f" ({valid_share:.1%} held out by hash)")
    return LMData(train, ngrams((vocabulary.ids(s) for s in valid_sentences), order, bos), vocabulary, what, covered)
