"""Word shortlists (the paper's 15,000 most frequent words per language) and their files.

A vocabulary file is plain UTF-8 text with a version line, then one ``word<TAB>count`` line per
word, most frequent first. Ids 0, 1 and 2 are reserved for padding, the unknown word and the
end of a phrase; the file's first word gets id 3.
"""
from __future__ import annotations

import collections
import hashlib
import os
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from ..errors import MosesRNNError
from ..formats.phrase_table import PhraseEntry
from ..formats.text_file import text_lines
from ..io.atomic import atomic_file
from .tokenizers import words

__all__ = [
    "PAD", "UNK", "EOS", "RESERVED", "PAD_ID", "UNK_ID", "EOS_ID", "Vocabulary", "VocabularyPair", "CoverageReport",
    "unique_pairs", "shortlist", "build_vocabularies",
]

PAD, UNK, EOS = "<pad>", "<unk>", "</s>"
RESERVED = (PAD, UNK, EOS)
#: Their ids: PAD right-pads batches (never predicted), UNK stands for a token outside the
#: shortlist ([UNK] in the paper), EOS ends a phrase (appended to targets, so p(y|x) includes ending).
PAD_ID, UNK_ID, EOS_ID = range(len(RESERVED))
FORMAT_HEADER = "#mosesrnn vocabulary version: 1"
SOURCE_FILE, TARGET_FILE = "source.vocab", "target.vocab"


class Vocabulary:
    """A shortlist of words mapped to ids, the reserved symbols first."""

    def __init__(self, words_by_frequency: Sequence[str], counts: Sequence[int] | None = None):
        self.itos = list(RESERVED) + list(words_by_frequency)
        self.counts = list(counts) if counts is not None else [0] * len(words_by_frequency)
        self.stoi = {word: index for index, word in enumerate(self.itos)}
        #: A word's id, ``<unk>``'s for a word outside the shortlist (a C-level lookup, for mapping in bulk).
        self.id_of = _IdsOrUnknown(self.stoi).__getitem__
        self._words = frozenset(self.itos[len(RESERVED):])
        if len(self.stoi) != len(self.itos):
            raise MosesRNNError("vocabulary words must be unique and must not be reserved symbols")

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word: str) -> bool:
        return word in self._words

    def ids(self, phrase_words: Iterable[str]) -> list[int]:
        """Map words to ids; words outside the shortlist become the ``<unk>`` id."""
        return list(map(self.id_of, phrase_words))

    def count_unknown(self, phrase_words: Iterable[str]) -> int:
        """Number of words outside the shortlist."""
        known = self._words
        return sum(word not in known for word in phrase_words)

    def digest(self) -> str:
        """A short hash of the word list, for signatures."""
        return hashlib.sha256("\n".join(self.itos).encode("utf-8")).hexdigest()[:12]

    def save(self, path: str) -> None:
        """Write the vocabulary file (atomically)."""
        lines = [FORMAT_HEADER] + [f"{word}\t{count}" for word, count in zip(self.itos[len(RESERVED):], self.counts)]
        with atomic_file(path) as out:
            out.write(("\n".join(lines) + "\n").encode("utf-8"))

    @classmethod
    def load(cls, path: str) -> "Vocabulary":
        """Read a vocabulary file written by :meth:`save`."""
        with text_lines(path) as lines:
            if next(lines, (1, ""))[1] != FORMAT_HEADER:
                raise MosesRNNError(f"{path}:1: not a mosesrnn vocabulary (expected {FORMAT_HEADER!r})")
            entries = []
            for line_no, line in lines:
                parts = line.split("\t")
                if len(parts) != 2 or not parts[1].isdigit():
                    raise MosesRNNError(f"{path}:{line_no}: expected 'word<TAB>count'")
                entries.append((parts[0], int(parts[1])))
        return cls([word for word, _ in entries], [count for _, count in entries])


class _IdsOrUnknown(dict):
    """Word -> id, ``<unk>``'s id for any other word."""

    def __missing__(self, word: str) -> int:
        return UNK_ID


@dataclass(frozen=True)
class VocabularyPair:
    """The source and target shortlists of one model."""

    source: Vocabulary
    target: Vocabulary

    def save(self, directory: str) -> None:
        """Write ``source.vocab`` and ``target.vocab`` into ``directory``."""
        os.makedirs(directory, exist_ok=True)
        self.source.save(os.path.join(directory, SOURCE_FILE))
        self.target.save(os.path.join(directory, TARGET_FILE))

    @classmethod
    def load(cls, directory: str) -> "VocabularyPair":
        """Read the pair written by :meth:`save`."""
        return cls(Vocabulary.load(os.path.join(directory, SOURCE_FILE)),
                   Vocabulary.load(os.path.join(directory, TARGET_FILE)))

    def digest(self) -> str:
        """A short hash of both word lists."""
        return hashlib.sha256((self.source.digest() + self.target.digest()).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class CoverageReport:
    """How much of the running text of the unique pairs the shortlists cover."""

    pairs: int
    source_types: int
    target_types: int
    source_coverage: float
    target_coverage: float

    def __str__(self) -> str:
        return (f"{self.pairs:,} unique phrase pairs; shortlists cover "
                f"{100 * self.source_coverage:.1f}% of source words ({self.source_types:,} types) and "
                f"{100 * self.target_coverage:.1f}% of target words ({self.target_types:,} types)")


def unique_pairs(entries: Iterable[PhraseEntry]) -> Iterator[PhraseEntry]:
    """Drop repeated (source, target) pairs, as the paper trains on the *unique* pairs.

    Moses tables list all targets of a source together, so only the targets of the current
    source are remembered: memory stays constant in the table size.
    """
    current_source, seen_targets = None, set()
    for entry in entries:
        if entry.source != current_source:
            current_source, seen_targets = entry.source, set()
        if entry.target not in seen_targets:
            seen_targets.add(entry.target)
            yield entry


def shortlist(counts: Mapping[str, int], size: int) -> Vocabulary:
    """The ``size`` most frequent words, ties broken by the word itself so files are byte-identical."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:size]
    return Vocabulary([word for word, _ in ranked], [count for _, count in ranked])


def _coverage(counter: collections.Counter, vocabulary: Vocabulary) -> float:
    total = sum(counter.values())
    return sum(count for word, count in counter.items() if word in vocabulary) / total if total else 0.0


def build_vocabularies(entries: Iterable[PhraseEntry], size: int = 15000, target_size: int | None = None,
                       tokens: Callable[[str], list[str]] | None = None) -> tuple[VocabularyPair, CoverageReport]:
    """Count tokens (default: Moses words) over the unique phrase pairs; keep the ``size`` most frequent per side."""
    tokens = tokens or words
    source_counts: collections.Counter = collections.Counter()
    target_counts: collections.Counter = collections.Counter()
    pairs = 0
    for entry in unique_pairs(entries):
        source_counts.update(tokens(entry.source))
        target_counts.update(tokens(entry.target))
        pairs += 1
    reserved = set(RESERVED)
    for counter in (source_counts, target_counts):
        for symbol in reserved & counter.keys():
            del counter[symbol]  # a literal "<unk>" in a table is an unknown word, not our symbol
    vocabularies = VocabularyPair(shortlist(source_counts, size),
                                  shortlist(target_counts, target_size or size))
    report = CoverageReport(pairs, len(source_counts), len(target_counts),
                            _coverage(source_counts, vocabularies.source),
                            _coverage(target_counts, vocabularies.target))
    return vocabularies, report
