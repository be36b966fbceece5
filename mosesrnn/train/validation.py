"""What every family's validation shares: which examples are held out, and the unigram baseline.

**The hold-out rule.** An example is held out when the hash of its key (:func:`split_hash`: the input
phrase of a pair, a sentence, a sentence pair) falls in the first ``share`` of the hash range
(:func:`held_out`), so the split does not depend on the order of the data, and examples of one key go
together.

**The record.** Each model file says what it was validated on (``info["validation"]``, :func:`validation_record`):
a ``--valid`` file by the sha256 of its content and its line count, else the share (or number) held out, so that a
tuning that chooses on the dev set can refuse a model that read it (``tune --select-on half``).

**The baseline.** A validation perplexity is reported beside that of the add-one unigram model of the
training targets (:func:`unigram_perplexity`), which a model that learnt anything beats.
"""
from __future__ import annotations

import hashlib
import math
import os
from typing import Sequence

import numpy as np

from ..formats.text_file import text_lines
from ..io.digests import content_sha256

__all__ = ["split_hash", "held_out", "validation_record", "target_counts", "unigram_log_probs", "unigram_perplexity"]

_HASH_SCALE = 2.0 ** 64


def split_hash(key: str) -> int:
    """The place of ``key`` in the hash range: the first 8 bytes of its BLAKE2b digest (UTF-8), little-endian."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little")


def held_out(hashes: np.ndarray, share: float) -> np.ndarray:
    """Which of ``hashes`` (uint64, by :func:`split_hash`) fall in the first ``share`` of the hash range: a boolean
    mask, True for the held-out examples."""
    return hashes < np.uint64(min(share * _HASH_SCALE, _HASH_SCALE - 1))


def validation_record(valid: str | None = None, encoding: str = "utf-8", share: float | None = None,
                      size: int | None = None) -> dict:
    """What a model is validated on, as its file records it: the text ``valid`` (``{"file", "sha256", "lines"}``: its
    absolute path, the sha256 of its bytes, its line count), else the examples held out of the training data by hash,
    ``size`` of them (``{"size"}``) or a ``share`` (``{"share"}``)."""
    if valid is not None:
        with text_lines(valid, encoding) as lines:
            count = sum(1 for _ in lines)
        return {"file": os.path.abspath(valid), "sha256": content_sha256(valid), "lines": count}
    return {"size": size} if size is not None else {"share": share}


def target_counts(targets: np.ndarray, size: int) -> np.ndarray:
    """How often each of ``size`` ids is among ``targets``, float64 (V,)."""
    return np.bincount(targets, minlength=size).astype(np.float64)


def unigram_log_probs(counts: np.ndarray, predictable: int) -> np.ndarray:
    """log p of each id under the add-one unigram model of ``counts`` (V,) over the ``predictable`` ids that may be
    targets, float64 (V,): ``(count + 1) / (total + predictable)``."""
    return np.log(counts + 1.0) - math.log(counts.sum() + predictable)


def unigram_perplexity(counts: np.ndarray, valid: np.ndarray, predictable: int, never: Sequence[int] = (),
                       ends: int = 0, end_id: int = 0) -> float:
    """Per-token perplexity of the ids ``valid`` under the add-one unigram model of the training ``counts`` over
    ``predictable`` ids (:func:`unigram_log_probs`); ``never``: ids that are never targets (log p = -inf);
    ``ends``: sequences whose end ``end_id`` (the encoder-decoder's EOS) ``valid`` leaves out, one each."""
    log_p = unigram_log_probs(counts, predictable)
    log_p[list(never)] = -np.inf
    total = log_p[valid].sum()
    if ends:
        total += ends * log_p[end_id]
    return math.exp(-total / (len(valid) + ends))
