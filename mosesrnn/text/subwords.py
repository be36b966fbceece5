"""SentencePiece subword models for the two sides of a phrase table, and the vocabulary directory.

A vocabulary directory (``mosesrnn vocab -o DIR``, ``train --vocab DIR``, ``MODEL_DIR/vocab``)
holds one of two kinds:

- word shortlists: ``source.vocab`` and ``target.vocab`` (see :mod:`mosesrnn.text.vocab`);
- subword models: ``spm.json`` (a descriptor: format, version, the model file of each side and
  the settings they were trained with) and ``source.spm.model`` + ``target.spm.model``, or one
  ``joint.spm.model`` for both sides. Each is an ordinary SentencePiece model file.

The SentencePiece models are trained so that their ids are ours: ``<pad>`` 0, ``<unk>`` 1,
``</s>`` 2 (no ``<s>``), the pieces from 3 on. With byte fallback (the default) every character
outside the pieces is spelt as UTF-8 byte pieces, so no text ever maps to ``<unk>``.
"""
from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from ..errors import MosesRNNError
from ..formats.phrase_table import PhraseEntry
from ..io.atomic import atomic_file
from ..io.compressed import open_raw
from ..io.json_file import read_json
from .codec import CodecPair
from .tokenizers import MosesWords, SentencePieceTokenizer, Tokenizer, words
from .vocab import EOS, PAD, RESERVED, SOURCE_FILE, TARGET_FILE, UNK, Vocabulary, VocabularyPair, unique_pairs

__all__ = ["SPM_TYPES", "DESCRIPTOR", "VOCAB_DIR_FILES", "SubwordModels", "train_subwords", "piece_vocabulary",
           "load_vocab_dir", "save_vocab_dir"]

SPM_TYPES = ("unigram", "bpe")
DESCRIPTOR = "spm.json"
FORMAT, VERSION = "mosesrnn subwords", 1
SOURCE_MODEL, TARGET_MODEL, JOINT_MODEL = "source.spm.model", "target.spm.model", "joint.spm.model"
#: Every file a vocabulary folder may hold: word shortlists, or SentencePiece models and their descriptor.
VOCAB_DIR_FILES = (SOURCE_FILE, TARGET_FILE, DESCRIPTOR, SOURCE_MODEL, TARGET_MODEL, JOINT_MODEL)


@dataclass(frozen=True)
class SubwordModels:
    """The serialized SentencePiece models of the source and target sides (the same bytes when joint)."""

    source: bytes
    target: bytes
    settings: dict = field(default_factory=dict)  # how they were trained, recorded in spm.json

    @property
    def joint(self) -> bool:
        """Whether one model serves both sides."""
        return self.source == self.target

    def tokenizers(self) -> tuple[SentencePieceTokenizer, SentencePieceTokenizer]:
        """The (source, target) tokenizers."""
        source = SentencePieceTokenizer(self.source)
        return source, source if self.joint else SentencePieceTokenizer(self.target)

    def save(self, directory: str) -> None:
        """Write the model file(s) and ``spm.json`` into ``directory`` (atomically, each)."""
        os.makedirs(directory, exist_ok=True)
        files = {"source": JOINT_MODEL, "target": JOINT_MODEL} if self.joint else \
            {"source": SOURCE_MODEL, "target": TARGET_MODEL}
        for name, model in {files["source"]: self.source, files["target"]: self.target}.items():
            with atomic_file(os.path.join(directory, name)) as out:
                out.write(model)
        descriptor = {"format": FORMAT, "version": VERSION, **files, "settings": self.settings}
        with atomic_file(os.path.join(directory, DESCRIPTOR)) as out:
            out.write((json.dumps(descriptor, indent=1, sort_keys=True) + "\n").encode("utf-8"))

    @classmethod
    def load(cls, directory: str) -> "SubwordModels":
        """Read what :meth:`save` wrote; raises MosesRNNError for a descriptor of another format."""
        path = os.path.join(directory, DESCRIPTOR)
        descriptor = read_json(path, "a mosesrnn subword descriptor")
        if not isinstance(descriptor, dict) or descriptor.get("format") != FORMAT:
            raise MosesRNNError(f"{path}: not a mosesrnn subword descriptor")
        if descriptor.get("version") != VERSION:
            raise MosesRNNError(f"{path}: unsupported subword descriptor version {descriptor.get('version')}")
        models = {}
        for side in ("source", "target"):
            with open_raw(os.path.join(directory, os.path.basename(str(descriptor.get(side))))) as stream:
                models[side] = stream.read()
        return cls(models["source"], models["target"], descriptor.get("settings", {}))


def piece_vocabulary(tokenizer: SentencePieceTokenizer) -> Vocabulary:
    """The tokenizer's pieces as a :class:`Vocabulary` whose ids are the SentencePiece ids."""
    pieces = tokenizer.pieces()
    if tuple(pieces[:len(RESERVED)]) != RESERVED:
        raise MosesRNNError(f"a SentencePiece model whose first ids are {pieces[:len(RESERVED)]}, not "
                            f"{list(RESERVED)}: build it with `mosesrnn vocab --spm`")
    return Vocabulary(pieces[len(RESERVED):])


def _phrases(entries: Iterable[PhraseEntry], sides: tuple[str, ...]) -> Iterator[str]:
    """The Moses words of the chosen sides of each unique pair, joined by single spaces."""
    for entry in unique_pairs(entries):
        for side in sides:
            yield " ".join(words(getattr(entry, side)))


def _train_one(sentences: Iterator[str], model_type: str, size: int, byte_fallback: bool, threads: int,
               max_sentences: int) -> bytes:
    import sentencepiece

    sentencepiece.set_random_generator_seed(1)  # the sample of a table above max_sentences
    model = io.BytesIO()
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=sentences, model_writer=model, model_type=model_type, vocab_size=size,
            pad_id=0, unk_id=1, eos_id=2, bos_id=-1, pad_piece=PAD, unk_piece=UNK, eos_piece=EOS,
            byte_fallback=byte_fallback, normalization_rule_name="identity", num_threads=threads,
            input_sentence_size=max_sentences, shuffle_input_sentence=True, minloglevel=2)
    except RuntimeError as error:  # e.g. "Vocabulary size is smaller than required_chars. 10 vs 296."
        message = str(error).split("] ", 1)[-1]
        raise MosesRNNError(f"SentencePiece cannot build a {model_type} model of {size} pieces: {message}") from None
    return model.getvalue()


def train_subwords(read: Callable[[], Iterable[PhraseEntry]], model_type: str = "unigram", size: int = 16000,
                   target_size: int | None = None, joint: bool = False, byte_fallback: bool = True,
                   threads: int = 1, max_sentences: int = 3_000_000) -> SubwordModels:
    """Train SentencePiece models on the unique phrase pairs of a table.

    ``read()`` streams the table's entries; it is called once per model (twice for separate
    source and target models), and the phrases go to the trainer from memory. Each unique pair
    contributes its source and target (Moses words, factor 0), as the RNN sees them. Above
    ``max_sentences`` phrases per model a seeded random sample is taken. The models' bytes
    depend only on the input and these arguments (``threads`` included). Raises MosesRNNError.
    """
    if model_type not in SPM_TYPES:
        raise MosesRNNError(f"SentencePiece model type must be one of {', '.join(SPM_TYPES)}, not {model_type!r}")
    if joint and target_size not in (None, size):
        raise MosesRNNError("a joint model has one size: give --size only")
    settings = {"type": model_type, "size": size, "target_size": target_size or size, "joint": joint,
                "byte_fallback": byte_fallback, "threads": threads, "max_sentences": max_sentences}
    options = dict(model_type=model_type, byte_fallback=byte_fallback, threads=threads, max_sentences=max_sentences)
    if joint:
        model = _train_one(_phrases(read(), ("source", "target")), size=size, **options)
        return SubwordModels(model, model, settings)
    source = _train_one(_phrases(read(), ("source",)), size=size, **options)
    target = _train_one(_phrases(read(), ("target",)), size=target_size or size, **options)
    if source == target:  # identical sides: not a joint model by request, but files the same
        settings["joint"] = True
    return SubwordModels(source, target, settings)


def load_vocab_dir(directory: str) -> tuple[VocabularyPair, tuple[Tokenizer, Tokenizer]]:
    """The vocabularies and (source, target) tokenizers a vocabulary directory holds.

    Subword models (``spm.json``) if present, else word shortlists; raises MosesRNNError if the
    directory holds neither.
    """
    if os.path.exists(os.path.join(directory, DESCRIPTOR)):
        tokenizers = SubwordModels.load(directory).tokenizers()
        return VocabularyPair(*(piece_vocabulary(t) for t in tokenizers)), tokenizers
    if all(os.path.exists(os.path.join(directory, name)) for name in (SOURCE_FILE, TARGET_FILE)):
        return VocabularyPair.load(directory), (MosesWords(), MosesWords())
    raise MosesRNNError(f"{directory}: holds neither word shortlists ({SOURCE_FILE}, {TARGET_FILE}) nor "
                        f"SentencePiece models ({DESCRIPTOR}); build them with `mosesrnn vocab`")


def save_vocab_dir(directory: str, text: CodecPair, settings: dict | None = None) -> None:
    """Write what :func:`load_vocab_dir` reads back: subword models or word shortlists."""
    source, target = text.source.tokenizer, text.target.tokenizer
    if isinstance(source, SentencePieceTokenizer) and isinstance(target, SentencePieceTokenizer):
        SubwordModels(source.model, target.model, settings or {}).save(directory)
    elif isinstance(source, MosesWords) and isinstance(target, MosesWords):
        VocabularyPair(text.source.vocabulary, text.target.vocabulary).save(directory)
    else:
        raise ValueError(f"cannot save tokenizers {source.kind} and {target.kind} as a vocabulary directory")
