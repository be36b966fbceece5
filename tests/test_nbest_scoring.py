"""`mosesrnn nbest`: RNN and unk values added to real Moses n-best lists, everything else kept."""
import gzip

import pytest
from click.testing import CliRunner
from conftest import DATA
from scoring_helpers import save_tiny_model

from mosesrnn.cli import main
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.features.unk import UnknownWordFeature
from mosesrnn.formats.nbest import NbestError, parse_line
from mosesrnn.pipeline.nbest import NbestPair, run_nbest_job

NBEST = DATA / "nbest"
TATOEBA = NBEST / "tatoeba.dev30.untuned.100best.gz"
SOURCE = NBEST / "tatoeba.dev30.tok.en"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return load_encoder_decoder(save_tiny_model(str(tmp_path_factory.mktemp("model") / "tiny.pt")))


def read_lines(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as stream:
        return stream.read().split("\n")[:-1]


def test_values_are_appended_raw_and_nothing_else_changes(trained, tmp_path):
    features = [RNNFeature(trained), UnknownWordFeature(trained.vocabularies, "target")]
    out = tmp_path / "scored.gz"
    summary = run_nbest_job(str(TATOEBA), str(SOURCE), str(out), features, chunk_lines=700)
    before, after = read_lines(TATOEBA), read_lines(out)
    assert summary.lines == len(before) == len(after) and summary.sentences == 30
    sources = SOURCE.read_text(encoding="utf-8").splitlines()
    entries = [parse_line(line + "\n", "x", i) for i, line in enumerate(before, 1)]
    pairs = [NbestPair(sources[e.sentence_id], e.hypothesis) for e in entries]
    expected_rnn, expected_unk = features[0].values(pairs), features[1].values(pairs)
    for old, new, rnn, unk in zip(before, after, expected_rnn, expected_unk):
        old_fields, new_fields = old.split("|||"), new.split("|||")
        assert old_fields[:2] == new_fields[:2] and old_fields[3:] == new_fields[3:]
        assert new_fields[2].startswith(old_fields[2].rstrip())
        added = new_fields[2][len(old_fields[2].rstrip()):].split()
        assert added[0] == "RNN0=" and float(added[1]) == pytest.approx(rnn, abs=1e-4) and rnn < 0
        assert added[2:] == ["UNK0=", f"{unk:g}"]


def test_the_hypotheses_of_a_sentence_share_one_encoding(trained, tmp_path, monkeypatch):
    encoded = []
    original = trained.model.source_context
    monkeypatch.setattr(trained.model, "source_context", lambda src, n: encoded.append(len(src)) or original(src, n))
    run_nbest_job(str(TATOEBA), str(SOURCE), str(tmp_path / "o.gz"), [RNNFeature(trained)])
    distinct_sources = len(set(SOURCE.read_text(encoding="utf-8").splitlines()))
    assert sum(encoded) == distinct_sources  # one chunk holds all 30 sentences


def test_old_format_lists_keep_their_labels(trained, tmp_path):
    # The regression list's French sources are not shipped; its references stand in (the format is tested).
    out = tmp_path / "old.txt"
    run_nbest_job(str(NBEST / "mert.nbest.1.gz"), str(NBEST / "mert.reference.en"), str(out),
                [UnknownWordFeature(trained.vocabularies, "target")])
    for old, new in zip(read_lines(NBEST / "mert.nbest.1.gz"), read_lines(out)):
        entry = parse_line(new + "\n")
        assert entry.feature_names == ("d", "lm", "tm", "w", "UNK0")
        assert new.replace(" UNK0= " + str(int(entry.features[-1][1][0])), "", 1).split("|||")[2].rstrip() == \
            old.split("|||")[2].rstrip()


def test_cli_reads_stdin_and_writes_stdout(trained, tmp_path):
    model = save_tiny_model(str(tmp_path / "m.pt"))
    plain = gzip.decompress(TATOEBA.read_bytes())
    result = CliRunner().invoke(main, ["nbest", "-", "--source", str(SOURCE), "-m", model, "-o", "-",
                                       "--features", "rnn"], input=plain)
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes.count(b"\n") == plain.count(b"\n") and b"RNN0= -" in result.stdout_bytes


@pytest.mark.parametrize("case, message", [
    ("short-source", "sentence id 5, but "),
    ("scored-twice", "feature 'RNN0' is already in the line"),
])
def test_bad_input_names_file_and_line_and_leaves_no_output(trained, tmp_path, case, message):
    model = save_tiny_model(str(tmp_path / "m.pt"))
    source, nbest = SOURCE, TATOEBA
    if case == "short-source":
        source = tmp_path / "short.en"
        source.write_text("".join(SOURCE.read_text(encoding="utf-8").splitlines(True)[:5]), encoding="utf-8")
    else:
        nbest = tmp_path / "once.gz"
        assert CliRunner().invoke(main, ["nbest", str(TATOEBA), "--source", str(source), "-m", model,
                                         "-o", str(nbest), "--features", "rnn"]).exit_code == 0
    out = tmp_path / "out.gz"
    result = CliRunner().invoke(main, ["nbest", str(nbest), "--source", str(source), "-m", model, "-o", str(out)])
    assert result.exit_code == 1 and message in result.output
    assert case != "short-source" or "short.en has only 5 lines" in result.output
    assert f"{nbest}:" in result.output and not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.gz")]


def test_scores_of_a_sentence_do_not_depend_on_chunking(trained, tmp_path):
    features = [RNNFeature(trained, batch_tokens=64)]
    one, many = tmp_path / "one.gz", tmp_path / "many.gz"
    run_nbest_job(str(TATOEBA), str(SOURCE), str(one), features, chunk_lines=100000)
    run_nbest_job(str(TATOEBA), str(SOURCE), str(many), features, chunk_lines=37)
    for a, b in zip(read_lines(one), read_lines(many)):
        assert float(a.split("RNN0=")[1].split()[0]) == pytest.approx(float(b.split("RNN0=")[1].split()[0]),
                                                                        abs=1e-5)
    with pytest.raises(NbestError):
        parse_line("0 ||| only three ||| fields\n")


def test_translate_writes_n_best_lists_that_nbest_reads(trained, tmp_path):
    model = save_tiny_model(str(tmp_path / "m.pt"))
    source = tmp_path / "five.en"
    source.write_text("".join(SOURCE.read_text(encoding="utf-8").splitlines(True)[:5]), encoding="utf-8")
    kbest = tmp_path / "5best.txt"
    result = CliRunner().invoke(main, ["translate", "-m", model, str(source), "--beam", "5",
                                       "--nbest", "5", "-o", str(kbest), "--allow-unk"])
    assert result.exit_code == 0, result.output
    out = tmp_path / "5best.unk.txt"
    summary = run_nbest_job(str(kbest), str(source), str(out), [UnknownWordFeature(trained.vocabularies, "target")])
    assert summary.sentences == 5 and summary.lines == read_lines(kbest).__len__()
    assert all(parse_line(line + "\n").feature_names == ("RNN0", "UNK0") for line in read_lines(out))


def test_reverse_model_adds_rnn_rev0(trained, tmp_path):
    forward = save_tiny_model(str(tmp_path / "f.pt"))
    reverse = save_tiny_model(str(tmp_path / "r.pt"), "target-to-source", seed=2)
    out = tmp_path / "out.gz"
    result = CliRunner().invoke(main, ["nbest", str(TATOEBA), "--source", str(SOURCE), "-m", forward,
                                       "--reverse-model", reverse, "--features", "rnn,rnn-rev", "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    first = parse_line(read_lines(out)[0] + "\n", "x", 1)
    sources = SOURCE.read_text(encoding="utf-8").splitlines()
    pair = [NbestPair(sources[first.sentence_id], first.hypothesis)]
    expected = RNNFeature(load_encoder_decoder(reverse), direction="target-to-source").values(pair)[0]
    labels = read_lines(out)[0].split("|||")[2].split()
    assert labels[-4] == "RNN0=" and labels[-2] == "RNN_REV0="
    assert float(labels[-1]) == pytest.approx(expected, abs=1e-4)
