"""SentencePiece subword mode: vocab --spm, the tokenizer in the model file, training and scoring."""
import gzip
import json

import pytest
import torch
from click.testing import CliRunner
from conftest import DATA
from scoring_helpers import TABLE, TINY

from mosesrnn.cli import main
from mosesrnn.encdec.config import ModelConfig
from mosesrnn.encdec.data import load_table
from mosesrnn.encdec.model import EncoderDecoder
from mosesrnn.encdec.model_file import TrainedEncoderDecoder, load_encoder_decoder, save_encoder_decoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.nbest import parse_line
from mosesrnn.formats.phrase_table import read_entries, table_value
from mosesrnn.pipeline.nbest import NbestPair
from mosesrnn.text.codec import Codec, CodecPair
from mosesrnn.text.subwords import load_vocab_dir, piece_vocabulary, save_vocab_dir, train_subwords
from mosesrnn.text.tokenizers import SentencePieceTokenizer, tokenizer_from_dict, words
from mosesrnn.text.vocab import UNK_ID, VocabularyPair, unique_pairs

PIECES = 400  # 3 reserved + 256 bytes + the characters of the 3k table + some pieces
TINY_ARGS = ["--embed-dim", "8", "--hidden-dim", "16", "--maxout-units", "8", "--output-rank", "6"]


def read():
    return read_entries(TABLE)


@pytest.fixture(scope="module")
def models():
    return train_subwords(read, "unigram", PIECES)


@pytest.fixture(scope="module")
def text(models):
    return CodecPair(*(Codec(t, piece_vocabulary(t)) for t in models.tokenizers()))


@pytest.fixture(scope="module")
def entries():
    return list(read())[:600]


@pytest.fixture(scope="module")
def trained(text):
    """A tiny subword model with random weights (std 0.3), as an in-memory TrainedEncoderDecoder."""
    torch.manual_seed(0)
    model = EncoderDecoder(ModelConfig(len(text.source.vocabulary), len(text.target.vocabulary), **TINY))
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.3)
    return TrainedEncoderDecoder(model.eval(), text, "source-to-target", {}, "in-memory")


@pytest.mark.parametrize("model_type, joint", [("unigram", False), ("bpe", False), ("unigram", True)])
def test_spm_models_are_byte_reproducible(model_type, joint):
    first = train_subwords(read, model_type, PIECES, joint=joint)
    second = train_subwords(read, model_type, PIECES, joint=joint)
    assert (first.source, first.target) == (second.source, second.target)
    assert first.joint == joint and first.settings["type"] == model_type


def test_piece_ids_are_sentencepiece_ids_and_reserved_ids_are_ours(text):
    tokenizer, codec = text.target.tokenizer, text.target
    assert tokenizer.pieces()[:3] == ["<pad>", "<unk>", "</s>"]
    for entry in list(read())[:200]:
        expected = tokenizer.processor.encode(" ".join(words(entry.target)))
        assert codec.ids(entry.target) == expected


@pytest.mark.parametrize("phrase, same_as", [
    ("la|DET maison|NN", "la maison"),       # factor 0 only: pieces never cross a factor separator
    ("la  maison\t.", "la maison ."),       # Moses' word splitting first
    ("la\u00a0maison", "la\u00a0maison"),   # U+00A0 stays inside the word
])
def test_tokens_are_pieces_of_moses_words(text, phrase, same_as):
    tokenizer = text.source.tokenizer
    assert tokenizer.tokens(phrase) == tokenizer.tokens(same_as)
    assert tokenizer.detokenize(tokenizer.tokens(phrase)) == same_as


def test_no_pair_has_an_unknown_piece_with_byte_fallback(text):
    for entry in unique_pairs(read()):
        assert UNK_ID not in text.source.ids(entry.source) + text.target.ids(entry.target)
    unseen = "☃ 漢字 ŋ"
    assert UNK_ID not in text.target.ids(unseen)
    assert text.target.text(text.target.ids(unseen)) == unseen


def test_without_byte_fallback_unseen_characters_are_unknown():
    tokenizer = train_subwords(read, "unigram", 200, byte_fallback=False).tokenizers()[1]
    codec = Codec(tokenizer, piece_vocabulary(tokenizer))
    assert UNK_ID in codec.ids("☃")


def test_tokenizer_round_trips_through_plain_values(models):
    tokenizer = models.tokenizers()[0]
    again = tokenizer_from_dict(tokenizer.to_dict())
    assert isinstance(again, SentencePieceTokenizer) and again.model == models.source


def test_model_file_holds_the_spm_models_and_scores_identically(trained, entries, tmp_path):
    path = str(tmp_path / "spm.pt")
    save_encoder_decoder(path, trained.model, trained.text, trained.direction)
    loaded = load_encoder_decoder(path)
    for before, after in ((trained.text.source, loaded.text.source), (trained.text.target, loaded.text.target)):
        assert after.tokenizer.model == before.tokenizer.model
        assert after.vocabulary.itos == before.vocabulary.itos
    expected = RNNFeature(trained).values(entries)
    assert RNNFeature(loaded).values(entries) == expected


def test_subword_scores_do_not_depend_on_batch_size(trained, entries):
    one = RNNFeature(trained, batch_tokens=1).values(entries)
    many = RNNFeature(trained, batch_tokens=512).values(entries)
    # 1e-5, or a few float32 ulps of |log p| (random weights give up to ~220 nats here; AVX-512 kernels sum a
    # batch's rows in another order than AVX2's: two ulps at 73 nats were seen)
    assert one == pytest.approx(many, abs=1e-5, rel=5e-7)


def test_vocab_dir_round_trip_and_neither_kind_is_refused(models, text, tmp_path):
    save_vocab_dir(str(tmp_path / "spm"), text)
    vocabularies, tokenizers = load_vocab_dir(str(tmp_path / "spm"))
    assert [t.model for t in tokenizers] == [models.source, models.target]
    assert vocabularies.target.itos == text.target.vocabulary.itos
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="neither word shortlists .* nor SentencePiece models"):
        load_vocab_dir(str(tmp_path / "empty"))


def test_word_and_subword_runs_hold_out_the_same_pairs_and_count_words(models, text):
    word_data = load_table(TABLE, valid_size=300, vocab_size=300)
    subword_data = load_table(TABLE, valid_size=300, tokenizers=models.tokenizers(),
                              vocabularies=VocabularyPair(text.source.vocabulary, text.target.vocabulary))
    assert len(subword_data.valid) == len(word_data.valid)
    assert subword_data.valid_words == word_data.valid_words == len(word_data.valid.trg_ids)
    assert subword_data.valid.target_tokens() > word_data.valid.target_tokens()  # pieces outnumber words


def test_cli_vocab_train_score_end_to_end(tmp_path):
    runner = CliRunner()
    spm_dir, model_dir, out = tmp_path / "spm", tmp_path / "model", tmp_path / "out.gz"
    result = runner.invoke(main, ["vocab", TABLE, "-o", str(spm_dir), "--spm", "unigram", "--size", str(PIECES)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in spm_dir.iterdir()) == ["source.spm.model", "spm.json", "target.spm.model"]
    result = runner.invoke(main, ["train", TABLE, "-o", str(model_dir), "--vocab", str(spm_dir), *TINY_ARGS,
                                  "--max-updates", "5", "--valid-size", "200", "--threads", "1", "-q"])
    assert result.exit_code == 0, result.output
    record = [json.loads(line) for line in open(model_dir / "train.jsonl")][-2]
    assert record["valid_word_ppl"] > record["valid_ppl"]  # the same NLL over fewer words than pieces
    result = runner.invoke(main, ["score", TABLE, "-m", str(model_dir / "best.pt"), "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert json.load(open(f"{out}.json"))["appended_columns"] == ["rnn"]  # no word shortlists: no unk
    entries = list(read())
    expected = RNNFeature(load_encoder_decoder(str(model_dir / "best.pt"))).values(entries)
    with gzip.open(out, "rt", encoding="utf-8") as lines:
        written = [line.split(" ||| ")[2].split()[-1] for line in lines]
    assert written == [table_value(value, 9) for value in expected]


def test_cli_unk_with_a_subword_model_needs_word_shortlists(trained, tmp_path):
    model = str(tmp_path / "spm.pt")
    save_encoder_decoder(model, trained.model, trained.text, trained.direction)
    runner = CliRunner()
    result = runner.invoke(main, ["score", TABLE, "-m", model, "--features", "rnn,unk", "-o", str(tmp_path / "a.gz")])
    assert result.exit_code == 1 and "has no word shortlists for the unk feature" in result.output
    assert runner.invoke(main, ["vocab", TABLE, "-o", str(tmp_path / "w"), "--size", "300", "-q"]).exit_code == 0
    result = runner.invoke(main, ["score", TABLE, "-m", model, "--vocab", str(tmp_path / "w"), "-o",
                                  str(tmp_path / "b.gz"), "-q"])
    assert result.exit_code == 0, result.output
    assert json.load(open(tmp_path / "b.gz.json"))["appended_columns"] == ["rnn", "unk"]


@pytest.mark.parametrize("args, message", [
    (["vocab", TABLE, "--spm", "unigram", "--size", "10"], "cannot build a unigram model of 10 pieces"),
    (["vocab", TABLE, "--spm", "wordpiece", "--size", "400"], "Invalid value for '--spm'"),
    (["vocab", TABLE, "--joint", "--size", "400"], "--joint and --threads need --spm"),
])
def test_cli_vocab_errors(args, message, tmp_path):
    result = CliRunner().invoke(main, args + ["-o", str(tmp_path / "v")])
    assert result.exit_code != 0 and message in result.output
    assert not (tmp_path / "v").exists()


def test_cli_train_refuses_a_directory_of_neither_kind(tmp_path):
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["train", TABLE, "-o", str(tmp_path / "m"), "--vocab", str(tmp_path / "empty"),
                                       "--max-updates", "1"])
    assert result.exit_code == 1 and "holds neither word shortlists" in result.output


def test_subword_scores_are_the_same_through_score_and_nbest(trained, tmp_path):
    nbest, source = DATA / "nbest" / "tatoeba.dev30.untuned.100best.gz", DATA / "nbest" / "tatoeba.dev30.tok.en"
    model, table = str(tmp_path / "spm.pt"), tmp_path / "hypotheses.gz"
    save_encoder_decoder(model, trained.model, trained.text, trained.direction)
    sentences = source.read_text(encoding="utf-8").splitlines()
    with gzip.open(nbest, "rt", encoding="utf-8") as lines:
        entries = [parse_line(line, "x", i) for i, line in enumerate(lines, 1)]
    pairs = [NbestPair(sentences[e.sentence_id], e.hypothesis) for e in entries]
    with gzip.open(table, "wt", encoding="utf-8") as out:
        out.writelines(f"{pair.source} ||| {pair.target} ||| 1\n" for pair in pairs)
    runner = CliRunner()
    for command, inputs in (("score", [str(table)]), ("nbest", [str(nbest), "--source", str(source)])):
        result = runner.invoke(main, [command, *inputs, "-m", model, "--features", "rnn", "-q",
                                      "-o", str(tmp_path / f"{command}.gz")])
        assert result.exit_code == 0, result.output
    expected = RNNFeature(load_encoder_decoder(model)).values(pairs)
    with gzip.open(tmp_path / "score.gz", "rt", encoding="utf-8") as lines:
        assert [line.split(" ||| ")[2].split()[-1] for line in lines] == [table_value(v, 9) for v in expected]
    with gzip.open(tmp_path / "nbest.gz", "rt", encoding="utf-8") as lines:
        assert [line.split(" RNN0= ")[1].split()[0] for line in lines] == [format(v, ".9g") for v in expected]


def test_a_joint_model_is_one_file_and_serves_both_sides(tmp_path):
    joint = train_subwords(read, "bpe", PIECES, joint=True)
    joint.save(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["joint.spm.model", "spm.json"]
    vocabularies, (source, target) = load_vocab_dir(str(tmp_path))
    assert source.model == target.model == joint.source
    assert vocabularies.source.itos == vocabularies.target.itos
