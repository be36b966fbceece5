"""The text seam: Moses words, codecs (text <-> ids) and their model-file form."""
import pytest

from mosesrnn.text.codec import Codec
from mosesrnn.text.tokenizers import TOKENIZERS, MosesWords, tokenizer_from_dict
from mosesrnn.text.vocab import EOS_ID, PAD_ID, UNK_ID, Vocabulary

CODEC = Codec(MosesWords(), Vocabulary(["la", "maison", "est", "."]))


@pytest.mark.parametrize("text, ids", [
    ("la maison", [3, 4]),
    ("la  maison\t.", [3, 4, 6]),       # Moses splits on runs of spaces and tabs
    ("la|DET château", [3, UNK_ID]),    # factor 0 is looked up; unknown words map to <unk>
    ("la\u00a0maison", [UNK_ID]),       # U+00A0 is not a separator for Moses
])
def test_ids_of_text(text, ids):
    assert CODEC.ids(text) == ids


def test_text_of_ids_stops_at_eos_and_drops_padding():
    assert CODEC.text([3, 4, 5, EOS_ID, 6, PAD_ID]) == "la maison est"
    assert CODEC.text([3, UNK_ID, PAD_ID]) == "la <unk>"


def test_codec_round_trips_through_plain_values():
    values = CODEC.to_dict()
    assert values == {"tokenizer": {"kind": "moses-words"}, "vocabulary": ["la", "maison", "est", "."]}
    again = Codec.from_dict(values)
    assert again.vocabulary.itos == CODEC.vocabulary.itos and isinstance(again.tokenizer, MosesWords)


def test_unknown_tokenizer_kind_is_refused():
    assert "bpe" not in TOKENIZERS
    with pytest.raises(ValueError, match="unknown tokenizer 'bpe'"):
        tokenizer_from_dict({"kind": "bpe"})
