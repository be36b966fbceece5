"""Tests of mosesrnn.data: loading pairs, the validation split, batches and the shuffled order."""
import gzip
import os

import numpy as np
import pytest
import torch

from mosesrnn.encdec.batching import pad
from mosesrnn.encdec.config import EOS_ID, UNK_ID
from mosesrnn.encdec.data import PairSet, load_corpus, load_table, split_share
from mosesrnn.formats.phrase_table import PhraseTableError, read_entries
from mosesrnn.text.vocab import build_vocabularies
from mosesrnn.train.shuffler import Shuffler

DATA = os.path.join(os.path.dirname(__file__), "data")
TABLE = os.path.join(DATA, "tatoeba.en-fr.3k.gz")  # 3,001 lines, 1,595 source phrases
CORPUS = (os.path.join(DATA, "tatoeba.dev400.en.gz"), os.path.join(DATA, "tatoeba.dev400.fr"))


def rows(flat, offsets):
    """The id sequences of a PairSet side, as tuples."""
    return [tuple(flat[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)]


def write_table(path, lines):
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(f"{source} ||| {target} ||| 0.5 0.5 ||| 0-0 |||\n" for source, target in lines)
    return str(path)


def test_table_pairs_are_unique_and_in_vocabulary(tmp_path):
    table = write_table(tmp_path / "pt", [("a b", "x"), ("a b", "x"), ("a b", "y z"), ("c", "x"), ("c", "x")])
    data = load_table(table, valid_size=1)
    assert len(data.train) + len(data.valid) == 3
    assert data.vocabularies.source.itos[3:] == ["a", "b", "c"]  # counts a=2, b=2, c=1; ties alphabetical


def test_built_vocabulary_equals_mosesrnn_vocab():
    data = load_table(TABLE, vocab_size=500)
    expected, _ = build_vocabularies(read_entries(TABLE), 500)
    assert data.vocabularies.source.itos == expected.source.itos
    assert data.vocabularies.target.itos == expected.target.itos
    assert data.vocabularies.target.counts == expected.target.counts


def test_split_holds_no_source_phrase_on_both_sides():
    data = load_table(TABLE, vocab_size=100000, valid_share=0.1)  # every word in the shortlist
    train = set(rows(data.train.src_ids, data.train.src_offsets))
    valid = set(rows(data.valid.src_ids, data.valid.src_offsets))
    assert not train & valid
    assert len(data.train) + len(data.valid) == 3001
    assert 0.05 < len(data.valid) / 3001 < 0.15


def test_split_is_deterministic_and_independent_of_line_order(tmp_path):
    with gzip.open(TABLE, "rt", encoding="utf-8") as lines:
        groups = {}
        for line in lines:
            groups.setdefault(line.split(" ||| ")[0], []).append(line)
    reordered = tmp_path / "reordered"
    text = "".join(line for key in reversed(list(groups)) for line in groups[key])
    reordered.write_text(text, encoding="utf-8")
    first, again = load_table(TABLE, vocab_size=100000), load_table(TABLE, vocab_size=100000)
    other = load_table(str(reordered), vocab_size=100000)
    assert np.array_equal(first.valid.src_ids, again.valid.src_ids)

    def valid_phrases(data):
        itos = data.vocabularies.source.itos
        return {" ".join(itos[i] for i in row) for row in rows(data.valid.src_ids, data.valid.src_offsets)}
    assert valid_phrases(first) == valid_phrases(other)


def test_valid_size_takes_whole_source_phrases():
    data = load_table(TABLE, vocab_size=100000, valid_size=200)
    assert 200 <= len(data.valid) < 300  # the last source phrase comes with all its targets
    assert not set(rows(data.train.src_ids, data.train.src_offsets)) & set(
        rows(data.valid.src_ids, data.valid.src_offsets))


@pytest.mark.parametrize("share, size", [(0.0, None), (1.0, None), (None, 5), (None, 0)])
def test_split_rejects_empty_sets(share, size):
    with pytest.raises(ValueError):
        split_share(np.array([1, 2, 3, 4, 5], dtype=np.uint64), share, size)


def test_target_to_source_swaps_sides_and_splits_on_the_target():
    forward = load_table(TABLE, vocab_size=100000, valid_share=0.2)
    reverse = load_table(TABLE, vocab_size=100000, valid_share=0.2, direction="target-to-source")
    assert reverse.vocabularies.source.itos == forward.vocabularies.source.itos  # table orientation kept
    train_inputs = set(rows(reverse.train.src_ids, reverse.train.src_offsets))
    assert not train_inputs & set(rows(reverse.valid.src_ids, reverse.valid.src_offsets))
    total_target_words = len(forward.train.trg_ids) + len(forward.valid.trg_ids)
    assert len(reverse.train.src_ids) + len(reverse.valid.src_ids) == total_target_words


def test_reserved_symbols_and_rare_words_become_unk(tmp_path):
    table = write_table(tmp_path / "pt", [("</s> a", "<pad> x"), ("a", "x"), ("b", "x")])
    data = load_table(table, vocab_size=1, valid_size=1)
    ids = np.concatenate([data.train.src_ids, data.valid.src_ids, data.train.trg_ids, data.valid.trg_ids])
    assert set(ids.tolist()) <= {UNK_ID, 3}
    assert data.vocabularies.source.itos[3:] == ["a"]


def test_max_len_and_malformed_table(tmp_path):
    table = write_table(tmp_path / "pt", [("a b c", "x"), ("a", "x y z w"), ("a", "x"), ("b", "y")])
    data = load_table(table, max_len=2, valid_size=1)
    assert (data.dropped, len(data.train) + len(data.valid)) == (2, 2)
    bad = tmp_path / "bad"
    bad.write_text("a ||| x ||| 0.5\nb ||| y\n", encoding="utf-8")
    with pytest.raises(PhraseTableError, match="bad:2"):
        load_table(str(bad))
    with pytest.raises(FileNotFoundError):
        load_table(str(tmp_path / "missing.gz"))


def test_corpus_pairs_and_length_mismatch(tmp_path):
    data = load_corpus(*CORPUS, valid_share=0.1)
    assert len(data.train) + len(data.valid) == 400
    assert "J'ai" in data.vocabularies.target
    short = tmp_path / "short.fr"
    short.write_text("une\ndeux\n", encoding="utf-8")
    with pytest.raises(ValueError, match="short.fr:3"):
        load_corpus(CORPUS[0], str(short))


def test_batch_matches_batching_pad():
    data = load_table(TABLE)
    index = np.array([5, 0, 17, 3])
    src, src_len, trg, trg_len = data.train.batch(index)
    expected_src = pad([data.train.src_ids[data.train.src_offsets[i]:data.train.src_offsets[i + 1]].tolist()
                        for i in index])
    expected_trg = pad([data.train.trg_ids[data.train.trg_offsets[i]:data.train.trg_offsets[i + 1]].tolist()
                        for i in index], append_eos=True)
    for got, want in zip((src, src_len, trg, trg_len), (*expected_src, *expected_trg)):
        assert torch.equal(got, want)
    assert int(trg[0, trg_len[0] - 1]) == EOS_ID


def test_subset_and_memory():
    pairs = PairSet(np.array([3, 4, 5, 6], dtype=np.int32), np.array([0, 2, 3, 4]),
                    np.array([7, 8, 9], dtype=np.int32), np.array([0, 1, 2, 3]))
    part = pairs.subset(np.array([2, 0]))
    assert rows(part.src_ids, part.src_offsets) == [(6,), (3, 4)]
    assert rows(part.trg_ids, part.trg_offsets) == [(9,), (7,)]
    assert part.target_tokens() == 4
    assert pairs.nbytes == 4 * 4 + 4 * 8 + 3 * 4 + 4 * 8


def test_bucketed_shuffler_sorts_windows_covers_each_epoch_and_resumes():
    lengths = np.random.default_rng(0).integers(1, 8, size=103)
    straight = Shuffler(103, 10, seed=3, lengths=lengths, window=3)
    epoch = []
    while straight.epoch == 0 and straight.position < 103:
        epoch.append(straight.next_batch())
    assert sorted(np.concatenate(epoch).tolist()) == list(range(103))
    assert sorted(len(b) for b in epoch) == [3] + [10] * 10
    assert all((np.diff(lengths[b]) >= 0).all() for b in epoch)  # each minibatch cut from a sorted window
    assert np.mean([np.ptp(lengths[b]) for b in epoch]) < np.ptp(lengths)
    halfway = Shuffler(103, 10, seed=3, lengths=lengths, window=3)
    for _ in range(4):
        halfway.next_batch()
    resumed = Shuffler(103, 10, seed=3, epoch=halfway.epoch, position=halfway.position, lengths=lengths, window=3)
    assert [resumed.next_batch().tolist() for _ in range(len(epoch) - 4)] == [b.tolist() for b in epoch[4:]]


def test_shuffler_covers_each_epoch_and_resumes():
    straight = Shuffler(10, 4, seed=3)
    batches = [straight.next_batch() for _ in range(6)]  # sizes 4, 4, 2 per epoch
    assert [len(b) for b in batches] == [4, 4, 2, 4, 4, 2]
    assert sorted(np.concatenate(batches[:3]).tolist()) == list(range(10))
    assert not np.array_equal(np.concatenate(batches[:3]), np.concatenate(batches[3:]))
    halfway = Shuffler(10, 4, seed=3)
    for _ in range(4):
        halfway.next_batch()
    resumed = Shuffler(10, 4, seed=3, epoch=halfway.epoch, position=halfway.position)
    continued = [resumed.next_batch(), resumed.next_batch()]
    assert [b.tolist() for b in continued] == [b.tolist() for b in batches[4:]]
