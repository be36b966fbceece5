"""The joint model's examples, exactly as Moses' ``BilingualNPLM`` queries the model.

Each target word ``t_i`` is predicted from the ``order - 1`` target words before it and a window of
``2m + 1`` source words (``m``: the source window) centred on its *affiliated* source word
(Devlin et al. 2014, Sec. 2.1): the middle of the source words it is aligned to (the lower middle,
``sorted(links)[(k - 1) // 2]``); an unaligned target word takes the links of its nearest aligned
neighbour, right first (``i + 1``, ``i - 1``, ``i + 2``...). Positions before the source are ``<s>``,
after it ``</s>``; the target history is padded with ``<s>``. In training, ``</s>`` closes each
target sentence and is affiliated with the source's end (as Moses' ``extract.py``).

The other directions of Devlin et al. (target-to-source, right-to-left) are this path on a reoriented
pair (:class:`~mosesrnn.bilm.orientation.Orientation`): :func:`aligned_sentences` reorients each pair as
it reads it, so "source" and "target" below are the window side and the predicted side.

One NPLM n-gram is ``[2m + 1 source ids, order - 1 history ids, the target id]``; the ids are those
of :class:`JointVocabulary` — the target words first, then the source words, each list starting
with ``<unk>`` — which is the layout ``BilingualNPLM`` builds from its two vocabulary files
(``moses/LM/bilingual-lm/BiLM_NPLM.cpp``: ``loadModel``).
"""
from __future__ import annotations

import collections
import hashlib
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import torch

from ..errors import MosesRNNError
from ..formats.errors import FileLineError
from ..formats.text_file import parallel_lines
from ..io.readers import reader
from ..text.tokenizers import words
from ..train.validation import held_out, split_hash
from .orientation import FORWARD, Orientation

__all__ = ["BOS", "EOS", "UNK", "NULL", "JointVocabulary", "ExampleSet", "JointData", "affiliations",
           "read_alignment", "window_examples", "aligned_sentences", "examples", "load_joint_data",
           "joint_vocabulary"]

BOS, EOS, UNK, NULL = "<s>", "</s>", "<unk>", "<null>"
#: The words each list starts with; ``<unk>`` first, as BilingualNPLM takes the first word as unknown.
TARGET_SPECIALS = (UNK, NULL, BOS, EOS)
SOURCE_SPECIALS = (UNK, BOS, EOS)
#: The share of a corpus's sentence pairs below which too few have an alignment link: the alignment is not theirs.
MIN_LINKED_SHARE = 0.5


class AlignmentError(FileLineError):
    """A malformed or mismatched alignment line (``FILE:LINE: problem``)."""


@dataclass(frozen=True)
class JointVocabulary:
    """The target and source word lists; NPLM ids: target word ``i`` is ``i``, source word ``j`` is
    ``len(target) + j``. The output vocabulary is the target list."""

    target: tuple[str, ...]
    source: tuple[str, ...]

    def __post_init__(self):
        if (self.target[:len(TARGET_SPECIALS)] != TARGET_SPECIALS
                or self.source[:len(SOURCE_SPECIALS)] != SOURCE_SPECIALS):
            raise MosesRNNError("a joint vocabulary starts with <unk> (and the other special tokens) on each side")
        object.__setattr__(self, "_target_ids", {word: i for i, word in enumerate(self.target)})
        object.__setattr__(self, "_source_ids", {word: len(self.target) + j for j, word in enumerate(self.source)})

    @property
    def input_size(self) -> int:
        """Rows of the input embeddings: both lists."""
        return len(self.target) + len(self.source)

    def target_ids(self, tokens: Iterable[str]) -> list[int]:
        """Target words as ids (``<unk>``, 0, outside the list)."""
        return [self._target_ids.get(word, 0) for word in tokens]

    def source_ids(self, tokens: Iterable[str]) -> list[int]:
        """Source words as ids (the source ``<unk>``, ``len(target)``, outside the list)."""
        unknown = len(self.target)
        return [self._source_ids.get(word, unknown) for word in tokens]

    def digest(self) -> str:
        """A short fingerprint of both lists."""
        text = "\n".join(self.target) + "\n\n" + "\n".join(self.source)
        return hashlib.blake2b(text.encode("utf-8"), digest_size=6).hexdigest()

    def to_dict(self) -> dict:
        """Plain lists for the model file."""
        return {"target": list(self.target), "source": list(self.source)}

    @classmethod
    def from_dict(cls, values: dict) -> "JointVocabulary":
        """Rebuild from :meth:`to_dict`."""
        return cls(tuple(values["target"]), tuple(values["source"]))


def joint_vocabulary(target_counts: collections.Counter, source_counts: collections.Counter, target_size: int,
                     source_size: int) -> JointVocabulary:
    """The ``target_size``/``source_size`` most frequent words of each side (ties by the word) after the specials."""
    def top(counts: collections.Counter, size: int, specials: tuple[str, ...]) -> tuple[str, ...]:
        ranked = sorted((w for w in counts if w not in specials), key=lambda w: (-counts[w], w))
        return specials + tuple(ranked[:size])

    return JointVocabulary(top(target_counts, target_size, TARGET_SPECIALS),
                           top(source_counts, source_size, SOURCE_SPECIALS))


def read_alignment(text: str, source_len: int, target_len: int, path: str | None = None, line_no: int = 0
                   ) -> list[list[int]]:
    """The source positions aligned to each target position of an ``i-j`` line (i: source, j: target).

    Raises AlignmentError at ``path``'s line ``line_no`` (MosesRNNError without a ``path``: the caller says where)
    for a malformed link or one outside the sentences."""
    def error(problem: str) -> MosesRNNError:
        return AlignmentError(path, line_no, problem) if path is not None else MosesRNNError(problem)

    links: list[list[int]] = [[] for _ in range(target_len)]
    for link in text.split():
        source, dash, target = link.partition("-")
        if not dash or not source.isdigit() or not target.isdigit():
            raise error(f"{link!r} is not an i-j alignment link")
        i, j = int(source), int(target)
        if i >= source_len or j >= target_len:
            raise error(f"link {link} is outside the sentence pair ({source_len} source and {target_len} target "
                        f"words): is the alignment of these files?")
        links[j].append(i)
    return links


def affiliations(links: Sequence[Sequence[int]]) -> list[int | None]:
    """Each target position's affiliated source position: the lower middle of its links, or of its nearest
    linked neighbour's (right first); None for all when nothing is linked."""
    found: list[int | None] = []
    for i in range(len(links)):
        for distance in range(len(links)):
            neighbours = [k for k in (i + distance, i - distance) if 0 <= k < len(links) and links[k]]
            if neighbours:
                chosen = sorted(links[neighbours[0]])
                found.append(chosen[(len(chosen) - 1) // 2])
                break
        else:
            found.append(None)
    return found


def window_examples(source_ids: Sequence[int], target_ids: Sequence[int], affiliated: Sequence[int],
                    window: int, order: int, bos: tuple[int, int], eos_source: int) -> np.ndarray:
    """The n-grams ``[source window, target history, target]`` of one sentence pair, int32 ``(T, 2m+1+order)``.

    ``affiliated[i]``: the source position of target ``i``; ``bos``: the ``<s>`` ids (source, target);
    ``eos_source``: the source ``</s>`` id (beyond the source's end)."""
    padded_source = np.array([bos[0]] * window + list(source_ids) + [eos_source] * (window + 1), dtype=np.int32)
    padded_target = np.array([bos[1]] * (order - 1) + list(target_ids), dtype=np.int32)
    rows = np.arange(len(target_ids))
    centre = np.minimum(np.asarray(affiliated, dtype=np.int64), len(source_ids)) + window  # in padded_source
    source = padded_source[centre[:, None] + np.arange(-window, window + 1)]
    target = padded_target[rows[:, None] + np.arange(order)]
    return np.concatenate([source, target], axis=1)


@dataclass
class ExampleSet:
    """The n-grams of a corpus as one int32 matrix ``(N, 2m+1+order)``, the predicted target id last."""

    grams: np.ndarray
    words: int  # target words (</s> excluded), for reports

    def __len__(self) -> int:
        return len(self.grams)

    def contexts(self) -> np.ndarray:
        """Every example's input ids ``(N, n-1)``."""
        return self.grams[:, :-1]

    def targets(self) -> np.ndarray:
        """Every example's predicted id ``(N,)``."""
        return self.grams[:, -1]

    def batch(self, index: np.ndarray, device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
        """Contexts ``(B, n-1)`` and targets ``(B,)`` of the examples ``index``."""
        rows = torch.from_numpy(self.grams[index].astype(np.int64)).to(device)
        return rows[:, :-1], rows[:, -1]

    def fingerprint(self) -> str:
        """The count and a hash of the ids (the ranks of a torchrun run compare it)."""
        return f"{len(self)} training n-grams, ids {hashlib.blake2b(self.grams.tobytes(), digest_size=8).hexdigest()}"


@dataclass
class JointData:
    """Training and validation examples, the vocabularies, and how they were made."""

    train: ExampleSet
    valid: ExampleSet
    vocabulary: JointVocabulary
    description: str
    coverage: float  # share of the training target words inside the target list
    continued: object = None  # the network of the run being continued, None for a fresh one


@reader
def aligned_sentences(source: str, target: str, alignment: str, encoding: str = "utf-8", limit: int | None = None,
                      orientation: Orientation = FORWARD):
    """``(source words, target words, links per target word)`` of each sentence pair of the aligned corpus that
    has an alignment link, line by line (the first ``limit`` lines only, when given), as a
    :class:`~mosesrnn.io.readers.Reader`: ``with aligned_sentences(...) as pairs:``. Each pair is reoriented for
    a model of ``orientation`` (:meth:`~mosesrnn.bilm.orientation.Orientation.apply`): its window side, its
    predicted side and the window positions linked to each predicted word.

    A pair without a link is skipped (it has no affiliation to learn from); raises FileLineError where the three
    files disagree, and MosesRNNError naming the alignment when fewer than half of the pairs have a link (an
    alignment of empty lines, or of another corpus)."""
    pairs = linked = 0
    with parallel_lines((source, target, alignment), encoding, limit) as rows:
        for line_no, (src, trg, align) in rows:
            src_words, trg_words = words(src.strip()), words(trg.strip())
            if not trg_words:
                continue
            links = read_alignment(align, len(src_words), len(trg_words), alignment, line_no)
            pairs += 1
            if any(links):
                linked += 1
                yield orientation.apply(src_words, trg_words, links)
    if not pairs:
        raise MosesRNNError(f"{target}: no sentences (the file is empty, or holds blank lines only)")
    if linked < MIN_LINKED_SHARE * pairs:
        raise MosesRNNError(f"{alignment}: {linked} of the {pairs} sentence pairs have an alignment link: is it the "
                            f"word alignment of {source} and {target} (Moses' i-j pairs, e.g. "
                            f"model/aligned.grow-diag-final-and)?")


def examples(pairs: Iterable[tuple[list[str], list[str], list[list[int]]]], vocabulary: JointVocabulary,
             window: int, order: int) -> ExampleSet:
    """The training n-grams of aligned sentence pairs, ``</s>`` included (affiliated with the source's end); a pair
    without a link is left out."""
    bos = (vocabulary.source_ids([BOS])[0], vocabulary.target_ids([BOS])[0])
    eos_source, eos_target = vocabulary.source_ids([EOS])[0], vocabulary.target_ids([EOS])[0]
    blocks, count = [], 0
    for src, trg, links in pairs:
        if not any(links):
            continue
        affiliated = affiliations([*links, [len(src)]])  # </s> with the source's end
        blocks.append(window_examples(vocabulary.source_ids(src), [*vocabulary.target_ids(trg), eos_target],
                                      affiliated, window, order, bos, eos_source))
        count += len(trg)
    grams = np.concatenate(blocks) if blocks else np.zeros((0, 2 * window + 1 + order), dtype=np.int32)
    return ExampleSet(grams, count)


def load_joint_data(source: str, target: str, alignment: str, *, window: int, order: int, target_size: int,
                    source_size: int, valid_share: float = 0.01, batch_size: int = 1, encoding: str = "utf-8",
                    vocabulary: JointVocabulary | None = None, orientation: Orientation = FORWARD) -> JointData:
    """Read the word-aligned corpus, reoriented for a model of ``orientation``, build the word lists (or take
    ``vocabulary``: its ``target`` list is the predicted side's) and cut the examples.

    Validation: the sentence pairs whose hash falls in the first ``valid_share`` of the hash range.
    Raises FileLineError where the files disagree, MosesRNNError for a corpus too small to train on."""
    with aligned_sentences(source, target, alignment, encoding, orientation=orientation) as pairs:
        read = list(pairs)
    held = held_out(np.array([split_hash(f"{' '.join(src)}\t{' '.join(trg)}") for src, trg, _ in read],
                             dtype=np.uint64), valid_share)
    train_pairs = [pair for pair, out in zip(read, held) if not out]
    valid_pairs = [pair for pair, out in zip(read, held) if out]
    if not train_pairs or not valid_pairs:
        raise MosesRNNError(f"{target}: {len(train_pairs) + len(valid_pairs)} sentence pairs are too few to hold out "
                            f"{valid_share:.1%} for validation and train on the rest: give a larger corpus or "
                            f"--valid-share")
    target_counts = collections.Counter(word for _, trg, _ in train_pairs for word in trg)
    if vocabulary is None:
        source_counts = collections.Counter(word for src, _, _ in train_pairs for word in src)
        vocabulary = joint_vocabulary(target_counts, source_counts, target_size, source_size)
    train = examples(train_pairs, vocabulary, window, order)
    if len(train) < batch_size:
        raise MosesRNNError(f"{target}: {len(train)} training n-grams, fewer than one batch of {batch_size}")
    known = set(vocabulary.target)
    coverage = sum(c for w, c in target_counts.items() if w in known) / max(sum(target_counts.values()), 1)
    description = (f"corpus {source} / {target}, alignment {alignment}, {orientation.describe()} "
                   f"({valid_share:.1%} held out by hash)")
    return JointData(train, examples(valid_pairs, vocabulary, window, order), vocabulary, description, coverage)
