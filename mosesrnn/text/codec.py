"""A language's text <-> model ids: a tokenizer and the vocabulary of its tokens.

A trained model owns one codec per language (stored in its model file with ``to_dict``), and
scoring, training and search all go through it, so they tokenise exactly as the model was trained.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .tokenizers import Tokenizer, tokenizer_from_dict
from .vocab import EOS_ID, PAD_ID, RESERVED, Vocabulary

__all__ = ["Codec", "CodecPair"]


@dataclass(frozen=True)
class Codec:
    """One language's text <-> model ids: a tokenizer and the vocabulary of its tokens."""

    tokenizer: Tokenizer
    vocabulary: Vocabulary

    def ids(self, text: str) -> list[int]:
        """The ids of the tokens of ``text``, unknown tokens as ``<unk>``; no EOS."""
        return self.vocabulary.ids(self.tokenizer.tokens(text))

    def text(self, ids: Iterable[int]) -> str:
        """Text of model ids, up to the first EOS; padding dropped, ``<unk>`` kept as is."""
        tokens = []
        for index in ids:
            if index == EOS_ID:
                break
            if index != PAD_ID:
                tokens.append(self.vocabulary.itos[index])
        return self.tokenizer.detokenize(tokens)

    def to_dict(self) -> dict:
        """Plain values for the model file: the tokenizer and the vocabulary's tokens."""
        return {"tokenizer": self.tokenizer.to_dict(), "vocabulary": self.vocabulary.itos[len(RESERVED):]}

    @classmethod
    def from_dict(cls, values: dict) -> "Codec":
        """Rebuild a codec from :meth:`to_dict` output."""
        return cls(tokenizer_from_dict(values["tokenizer"]), Vocabulary(values["vocabulary"]))


@dataclass(frozen=True)
class CodecPair:
    """The codecs of a phrase table's two sides (``source`` and ``target``, whatever the direction)."""

    source: Codec
    target: Codec
