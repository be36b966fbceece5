"""Shortlists: counted over unique pairs, deterministic ties, a versioned file format."""
import pytest

from mosesrnn.formats.phrase_table import parse_line, read_entries
from mosesrnn.text.vocab import EOS, PAD, UNK, Vocabulary, VocabularyPair, build_vocabularies, unique_pairs


def _entries(*lines):
    return [parse_line(line, "t", n) for n, line in enumerate(lines, start=1)]


def test_reserved_ids_come_first_and_match_the_model():
    from mosesrnn.encdec.config import EOS_ID, PAD_ID, UNK_ID
    vocabulary = Vocabulary(["the", "house"])
    assert [vocabulary.stoi[s] for s in (PAD, UNK, EOS)] == [PAD_ID, UNK_ID, EOS_ID]
    assert vocabulary.ids(["the", "castle", "house"]) == [3, UNK_ID, 4]
    assert vocabulary.count_unknown(["the", "castle", "<unk>", "house"]) == 2


def test_words_are_counted_once_per_unique_pair_with_deterministic_ties():
    entries = _entries("a b ||| x ||| 1", "a b ||| x ||| 0.5", "a b ||| y z ||| 1", "c ||| z ||| 1")
    assert len(list(unique_pairs(entries))) == 3
    vocabularies, report = build_vocabularies(entries, size=2)
    assert vocabularies.source.itos[3:] == ["a", "b"]          # a:2 b:2 c:1, tie a/b alphabetical
    assert vocabularies.target.itos[3:] == ["z", "x"]          # z:2 x:1 y:1 -> x beats y on the tie
    assert report.pairs == 3
    assert report.source_coverage == pytest.approx(4 / 5)
    assert report.target_coverage == pytest.approx(3 / 4)


def test_factored_words_count_factor_zero():
    vocabularies, _ = build_vocabularies(_entries("Haus|NN ||| house|NN ||| 1"), size=5)
    assert vocabularies.source.itos[3:] == ["Haus"]


def test_files_round_trip_and_are_byte_identical(tmp_path, tatoeba_table):
    vocabularies, _ = build_vocabularies(read_entries(str(tatoeba_table)), size=500)
    vocabularies.save(str(tmp_path / "a"))
    loaded = VocabularyPair.load(str(tmp_path / "a"))
    assert loaded.source.itos == vocabularies.source.itos and loaded.target.counts == vocabularies.target.counts
    again, _ = build_vocabularies(read_entries(str(tatoeba_table)), size=500)
    again.save(str(tmp_path / "b"))
    for name in ("source.vocab", "target.vocab"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / "source.vocab").read_text().startswith("#mosesrnn vocabulary version: 1\n")


def test_a_file_that_is_not_a_vocabulary_is_refused(tmp_path):
    bad = tmp_path / "source.vocab"
    bad.write_text("the 12\n")
    with pytest.raises(ValueError, match="source.vocab:1: not a mosesrnn vocabulary"):
        Vocabulary.load(str(bad))
    bad.write_text("#mosesrnn vocabulary version: 1\nthe 12\n")
    with pytest.raises(ValueError, match="source.vocab:2: expected 'word<TAB>count'"):
        Vocabulary.load(str(bad))
