"""The tokenisation seam: how a side's text becomes the tokens a model reads and predicts.

A :class:`Tokenizer` cuts text into tokens: Moses' words (factor 0), or SentencePiece subwords of
those words; :data:`TOKENIZERS` names them. It is paired with the vocabulary of its tokens in a
:class:`~mosesrnn.text.codec.Codec`, which is what callers go through.
"""
from __future__ import annotations

import re
from typing import Protocol, Sequence

from ..errors import MosesRNNError

__all__ = ["words", "Tokenizer", "MosesWords", "SentencePieceTokenizer", "TOKENIZERS", "tokenizer_from_dict"]

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

    def tokens_of_many(self, texts: Sequence[str]) -> tuple[list[str], list[int]]:
        """The tokens of all ``texts``, one after the other, and each text's token count: what :meth:`tokens`
        gives text by text, in one split when no text holds a tab, a factor or a run of spaces."""
        joined = " ".join(texts)
        if "\t" in joined or "|" in joined or "  " in joined or joined[:1] == " " or joined[-1:] == " " or not joined:
            per_text = [words(text) for text in texts]
            return [token for tokens in per_text for token in tokens], list(map(len, per_text))
        return joined.split(" "), [text.count(" ") + 1 for text in texts]

    def detokenize(self, tokens: Sequence[str]) -> str:
        """Words joined by single spaces."""
        return " ".join(tokens)

    def to_dict(self) -> dict:
        """``{"kind": "moses-words"}``: nothing else to store."""
        return {"kind": self.kind}


class SentencePieceTokenizer:
    """SentencePiece subwords of Moses' words: factor 0 of each word, the words joined by single
    spaces, then cut into pieces, so a piece never crosses a word (or a factor separator).

    ``model`` is the serialized SentencePiece model (the bytes of a ``.model`` file); it travels
    in :meth:`to_dict`, so a model file that holds this tokenizer needs no other file.
    """

    kind = "sentencepiece"

    def __init__(self, model: bytes):
        import sentencepiece  # here, so that word-level work never imports it

        self.model = bytes(model)
        self.processor = sentencepiece.SentencePieceProcessor(model_proto=self.model)

    def tokens(self, text: str) -> list[str]:
        """The pieces of the Moses words of ``text``, e.g. ``['▁la', '▁mai', 'son']``."""
        return self.processor.encode(" ".join(words(text)), out_type=str)

    def detokenize(self, tokens: Sequence[str]) -> str:
        """The words the pieces spell, joined by single spaces."""
        return self.processor.decode_pieces(list(tokens))

    def pieces(self) -> list[str]:
        """Every piece, in id order (the reserved symbols first)."""
        return [self.processor.id_to_piece(i) for i in range(self.processor.get_piece_size())]

    def to_dict(self) -> dict:
        """``{"kind": "sentencepiece", "model": bytes}`` (``torch.load(weights_only=True)`` reads bytes)."""
        return {"kind": self.kind, "model": self.model}


#: Tokenizer kinds by name, as model files record them.
TOKENIZERS = {MosesWords.kind: MosesWords, SentencePieceTokenizer.kind: SentencePieceTokenizer}


def tokenizer_from_dict(values: dict) -> Tokenizer:
    """Rebuild a tokenizer from its ``to_dict()``; raises MosesRNNError for an unknown kind."""
    kind = values.get("kind")
    if kind not in TOKENIZERS:
        raise MosesRNNError(f"unknown tokenizer {kind!r} (known: {', '.join(TOKENIZERS)})")
    return TOKENIZERS[kind](**{k: v for k, v in values.items() if k != "kind"})
