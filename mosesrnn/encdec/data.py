"""Training data: phrase pairs as compact id arrays, the validation split, shuffled minibatches.

Pairs come from a Moses phrase table (the paper's way: its *unique* pairs, frequencies ignored)
or from a sentence-aligned corpus (two text files, one sentence per line, gzipped or not; every
line pair is kept, duplicates included, but those with an empty side: nothing to read or to
predict). Text is cut into tokens by the run's tokenizers (Moses
words, factor 0 only, by default; or SentencePiece pieces of those words); a corpus is expected
to be tokenized already. With subword tokenizers the Moses words of each output phrase are
counted too, so that perplexity can be given per word whatever the segmentation.

Memory: a pair costs 4 bytes per word id on each side plus two int64 offsets, i.e.
``4 * (source words + target words) + 16`` bytes (the EOS is added when a batch is built). The
Tatoeba table's 2.68M unique pairs average 8.1 words per pair: about 49 bytes per pair, 130 MB.

The validation set is chosen by **input phrase**: a pair is held out when a hash of the phrase
the encoder reads (the table's source side for ``source-to-target``) falls below a threshold, so
no input phrase occurs in both sets and the split does not depend on the file order. The hash is
of the input's Moses words, whatever the tokenizer, so word and subword runs hold out the same pairs.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import torch

from ..errors import MosesRNNError
from ..formats.phrase_table import read_entries
from ..formats.text_file import parallel_lines
from ..text.codec import Codec, CodecPair
from ..text.tokenizers import MosesWords, Tokenizer, words
from ..text.vocab import EOS_ID, PAD_ID, RESERVED, UNK_ID, Vocabulary, VocabularyPair, shortlist, unique_pairs
from ..train.validation import held_out as held_out_by_hash
from ..train.validation import split_hash
from .direction import SOURCE_TO_TARGET, TARGET_TO_SOURCE, check_direction

__all__ = ["PairSet", "TrainingData", "load_table", "load_corpus", "split_share"]



@dataclass
class PairSet:
    """Phrase pairs as flat int32 id arrays with int64 offsets: pair i's input is
    ``src_ids[src_offsets[i]:src_offsets[i + 1]]`` (no EOS), likewise its output."""

    src_ids: np.ndarray
    src_offsets: np.ndarray
    trg_ids: np.ndarray
    trg_offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.src_offsets) - 1

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return sum(a.nbytes for a in (self.src_ids, self.src_offsets, self.trg_ids, self.trg_offsets))

    def target_tokens(self) -> int:
        """Number of predicted tokens: output words plus one EOS per pair."""
        return len(self.trg_ids) + len(self)

    def subset(self, index: np.ndarray) -> "PairSet":
        """The pairs at positions ``index`` (int array or boolean mask), in that order."""
        src_ids, src_offsets = _gather(self.src_ids, self.src_offsets, index)
        trg_ids, trg_offsets = _gather(self.trg_ids, self.trg_offsets, index)
        return PairSet(src_ids, src_offsets, trg_ids, trg_offsets)

    def batch(self, index: np.ndarray, device: str | torch.device = "cpu") -> tuple[torch.Tensor, ...]:
        """Padded tensors ``(src (B, S), src_len (B,), trg (B, T), trg_len (B,))`` for the model;
        targets end with EOS, which their lengths count."""
        src, src_len = _padded(self.src_ids, self.src_offsets, index, append_eos=False)
        trg, trg_len = _padded(self.trg_ids, self.trg_offsets, index, append_eos=True)
        return tuple(torch.from_numpy(a).to(device=device, dtype=torch.long)
                     for a in (src, src_len, trg, trg_len))

    def swapped(self) -> "PairSet":
        """The same pairs with input and output exchanged."""
        return PairSet(self.trg_ids, self.trg_offsets, self.src_ids, self.src_offsets)


def _gather(flat: np.ndarray, offsets: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Select ragged rows: returns the new flat ids and offsets."""
    starts = offsets[:-1][index]
    lengths = offsets[1:][index] - starts
    new_offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    positions = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
    return flat[positions], new_offsets


def _padded(flat: np.ndarray, offsets: np.ndarray, index: np.ndarray,
            append_eos: bool) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded ids (B, max_len [+1]) and lengths (B,) of the rows ``index``."""
    starts = offsets[index]
    lengths = offsets[index + 1] - starts  # (B,)
    width = int(lengths.max()) + int(append_eos)
    columns = np.arange(width)
    real = columns < lengths[:, None]  # (B, W)
    positions = np.minimum(starts[:, None] + columns, len(flat) - 1)
    ids = np.where(real, flat[positions], PAD_ID)  # (B, W)
    if append_eos:
        ids[np.arange(len(index)), lengths] = EOS_ID
        lengths = lengths + 1
    return ids, lengths


@dataclass
class TrainingData:
    """The training and validation pairs (in the model's direction) and the table-side shortlists."""

    train: PairSet
    valid: PairSet
    vocabularies: VocabularyPair  # .source = the table's source side, whatever the direction
    tokenizers: tuple[Tokenizer, Tokenizer]  # (source side, target side)
    description: str
    dropped: int  # pairs skipped: an empty side or longer than max_len
    coverage: tuple[float, float]  # share of source / target words inside the shortlists
    valid_words: int = 0  # Moses words of the validation outputs (EOS excluded), for per-word perplexity

    @property
    def text(self) -> CodecPair:
        """The codecs of the two sides, as the trained model will own them."""
        return CodecPair(Codec(self.tokenizers[0], self.vocabularies.source),
                         Codec(self.tokenizers[1], self.vocabularies.target))


class _Collector:
    """Accumulates pairs as temporary ids (one id per distinct word) and split hashes."""

    def __init__(self, reverse: bool, max_len: int | None):
        self.reverse, self.max_len, self.dropped = reverse, max_len, 0
        self.index: tuple[dict, dict] = ({}, {})
        self.ids = (array("i"), array("i"))
        self.lengths = (array("q"), array("q"))
        self.hashes = array("Q")
        self.output_words = array("i")  # Moses words per output phrase, when tokens are not words
        self._last_key, self._last_hash = None, 0

    def add(self, source: list[str], target: list[str],
            phrase_words: tuple[list[str], list[str]] | None = None) -> None:
        """Add one pair given as token lists, in table orientation; ``phrase_words`` are the
        sides' Moses words when the tokens are not words (they key the split and count words)."""
        if not source or not target or (self.max_len and max(len(source), len(target)) > self.max_len):
            self.dropped += 1
            return
        for side, phrase in enumerate((source, target)):
            index = self.index[side]
            self.ids[side].extend([index.setdefault(w, len(index)) for w in phrase])
            self.lengths[side].append(len(phrase))
        if phrase_words is not None:
            self.output_words.append(len(phrase_words[0 if self.reverse else 1]))
            source, target = phrase_words
        key = " ".join(target if self.reverse else source)
        if key != self._last_key:  # tables list each source's pairs together
            self._last_key, self._last_hash = key, split_hash(key)
        self.hashes.append(self._last_hash)

    def side(self, side: int, size: int,
             given: Vocabulary | None) -> tuple[Vocabulary, np.ndarray, np.ndarray]:
        """The shortlist of one side, its final ids (flat) and offsets."""
        temp_ids = np.frombuffer(self.ids[side], dtype=np.int32)
        words_by_id = list(self.index[side])
        counts = np.bincount(temp_ids, minlength=len(words_by_id))
        vocabulary = given if given is not None else shortlist(
            {word: int(counts[i]) for i, word in enumerate(words_by_id) if word not in RESERVED}, size)
        remap = np.array([UNK_ID if w in RESERVED else vocabulary.stoi.get(w, UNK_ID) for w in words_by_id],
                         dtype=np.int32)
        offsets = np.zeros(len(self.lengths[side]) + 1, dtype=np.int64)
        np.cumsum(np.frombuffer(self.lengths[side], dtype=np.int64), out=offsets[1:])
        return vocabulary, remap[temp_ids] if len(temp_ids) else temp_ids.copy(), offsets


def _finish(collector: _Collector, tokenizers: tuple[Tokenizer, Tokenizer], vocab_size: int,
            vocabularies: VocabularyPair | None, valid_share: float | None, valid_size: int | None,
            description: str) -> TrainingData:
    """Build vocabularies, map ids, split by input-phrase hash and orient for the model."""
    if not collector.hashes:
        raise MosesRNNError(f"{description}: no usable pairs")
    given = vocabularies or VocabularyPair(None, None)
    src_vocab, src_ids, src_offsets = collector.side(0, vocab_size, given.source)
    trg_vocab, trg_ids, trg_offsets = collector.side(1, vocab_size, given.target)
    pairs = PairSet(src_ids, src_offsets, trg_ids, trg_offsets)
    if collector.reverse:
        pairs = pairs.swapped()
    held_out = split_share(np.frombuffer(collector.hashes, dtype=np.uint64), valid_share, valid_size)
    coverage = tuple(float(np.mean(ids != UNK_ID)) for ids in (src_ids, trg_ids))
    valid = pairs.subset(held_out)
    output_words = np.frombuffer(collector.output_words, dtype=np.int32)
    valid_words = int(output_words[held_out].sum()) if len(output_words) else len(valid.trg_ids)
    return TrainingData(pairs.subset(~held_out), valid, VocabularyPair(src_vocab, trg_vocab),
                        tokenizers, description, collector.dropped, coverage, valid_words)


def split_share(hashes: np.ndarray, valid_share: float | None, valid_size: int | None) -> np.ndarray:
    """Boolean mask of held-out pairs from their input-phrase hashes (uint64).

    With ``valid_size`` the smallest hashes are taken until at least that many pairs are held
    out (all pairs of an input phrase go together); otherwise hashes below ``valid_share`` of
    the hash range (:func:`~mosesrnn.train.validation.held_out`). Raises MosesRNNError if either set would be
    empty.
    """
    if valid_size is not None:
        if not 0 < valid_size < len(hashes):
            raise MosesRNNError(f"valid_size must be between 1 and {len(hashes) - 1} (pairs read), "
                                f"got {valid_size}")
        threshold = np.partition(hashes, valid_size - 1)[valid_size - 1]
        held_out = hashes <= threshold
    else:
        if not 0 < (valid_share or 0) < 1:
            raise MosesRNNError(f"valid_share must be between 0 and 1, got {valid_share}")
        held_out = held_out_by_hash(hashes, valid_share)
    if held_out.all() or not held_out.any():
        raise MosesRNNError(f"the validation split leaves an empty set ({int(held_out.sum())} of "
                            f"{len(hashes)} pairs held out); change valid_share or valid_size")
    return held_out


def load_table(path: str, *, direction: str = SOURCE_TO_TARGET, vocabularies: VocabularyPair | None = None,
               vocab_size: int = 15000, max_len: int | None = None, valid_share: float | None = 0.01,
               valid_size: int | None = None, encoding: str = "utf-8",
               tokenizers: tuple[Tokenizer, Tokenizer] = (MosesWords(), MosesWords()),
               progress: Callable[[Iterable], Iterable] = iter) -> TrainingData:
    """Read the unique phrase pairs of a Moses table (see the module docstring).

    ``tokenizers`` cut the (source, target) sides into tokens. Without ``vocabularies`` the
    ``vocab_size`` most frequent tokens per side are kept. Raises PhraseTableError,
    FileNotFoundError or MosesRNNError.
    """
    collector = _Collector(_reverse(direction), max_len)
    with read_entries(path, encoding) as entries:
        pairs = ((entry.source, entry.target) for entry in unique_pairs(entries))
        _collect(collector, progress(pairs), tokenizers)
    return _finish(collector, tokenizers, vocab_size, vocabularies, valid_share, valid_size,
                   f"phrase table {path} (unique pairs)")


def load_corpus(source_path: str, target_path: str, *, direction: str = SOURCE_TO_TARGET,
                vocabularies: VocabularyPair | None = None, vocab_size: int = 15000,
                max_len: int | None = None, valid_share: float | None = 0.01, valid_size: int | None = None,
                encoding: str = "utf-8", tokenizers: tuple[Tokenizer, Tokenizer] = (MosesWords(), MosesWords()),
                progress: Callable[[Iterable], Iterable] = iter) -> TrainingData:
    """Read a sentence-aligned corpus: line i of ``source_path`` translates line i of ``target_path``.

    Raises FileNotFoundError, or MosesRNNError if the files differ in length or are not ``encoding``.
    """
    collector = _Collector(_reverse(direction), max_len)
    with parallel_lines((source_path, target_path), encoding) as rows:
        _collect(collector, progress(texts for _, texts in rows), tokenizers)
    return _finish(collector, tokenizers, vocab_size, vocabularies, valid_share, valid_size,
                   f"corpus {source_path} + {target_path}")


def _collect(collector: _Collector, pairs: Iterable[tuple[str, str]], tokenizers: tuple[Tokenizer, Tokenizer]) -> None:
    """Tokenize (source, target) texts into the collector; a repeated source is cut once."""
    source_tokens, target_tokens = (tokenizer.tokens for tokenizer in tokenizers)
    word_level = all(isinstance(tokenizer, MosesWords) for tokenizer in tokenizers)
    last_source, cut = None, ([], [])
    for source, target in pairs:
        if source != last_source:
            last_source, cut = source, (source_tokens(source), None if word_level else words(source))
        if word_level:
            collector.add(cut[0], target_tokens(target))
        else:
            collector.add(cut[0], target_tokens(target), (cut[1], words(target)))


def _reverse(direction: str) -> bool:
    return check_direction(direction) == TARGET_TO_SOURCE
