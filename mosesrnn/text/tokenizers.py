"""The tokenisation seam: how a side's text becomes the tokens a model reads and predicts.

A :class:`Tokenizer` cuts text into tokens: today Moses' words (factor 0); a subword tokenizer
plugs in beside it in :data:`TOKENIZERS`. It is paired with the vocabulary of its tokens in a
:class:`~mosesrnn.text.codec.Codec`, which is what callers go through.
"""
from __future__ import annotations

import re
from typing import Protocol, Sequence

__all__ = ["words", "Tokenizer", "MosesWords", "TOKENIZERS", "tokenizer_from_dict"]

_WHITESPACE = re.compile(r"[ \t]+")  # Moses splits words on space and tab only (not U+00A0)


def words(phrase: str) -> list[str]:
    """Split a phrase into words the way Moses does, keeping only factor 0 of factored words.

    >>> words("das|ART Haus|NN")
    ['das', 'Haus']
    """
    tokens = _WHITESPACE.split(phrase) if "\t" in phrase else phrase.split(" ")
    if "|" in phrase:
        return [token.split("|", 1)[0] for token in tokens if token]
    return [token for token in tokens if token]


class Tokenizer(Protocol):
    """Cuts a side's text into the tokens a model reads or predicts."""

    kind: str

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text``, in order."""

    def detokenize(self, tokens: Sequence[str]) -> str:
        """Text from tokens (the inverse of ``tokens`` up to spacing)."""

    def to_dict(self) -> dict:
        """Plain values that :func:`tokenizer_from_dict` turns back into this tokenizer."""


class MosesWords:
    """Moses' words: split on spaces and tabs, factor 0 of factored words (``das|ART`` -> ``das``)."""

    kind = "moses-words"

    def tokens(self, text: str) -> list[str]:
        """See :func:`words`."""
        return words(text)

    def detokenize(self, tokens: Sequence[str]) -> str:
        """Words joined by single spaces."""
        return " ".join(tokens)

    def to_dict(self) -> dict:
        """``{"kind": "moses-words"}``: nothing else to store."""
        return {"kind": self.kind}


#: Tokenizer kinds by name, as model files record them.
TOKENIZERS = {MosesWords.kind: MosesWords}


def tokenizer_from_dict(values: dict) -> Tokenizer:
    """Rebuild a tokenizer from its ``to_dict()``; raises ValueError for an unknown kind."""
    kind = values.get("kind")
    if kind not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {kind!r} (known: {', '.join(TOKENIZERS)})")
    return TOKENIZERS[kind](**{k: v for k, v in values.items() if k != "kind"})
