"""What a new user meets on the first day, case by case: stdout for ``-o -``, progress under nohup, shards
that merge across machines, warnings where a run would be silently wrong, one shape for every command, and
what the peers' users ask for (per-token scores, a name for a second model's column, ``--shard auto``)."""
from __future__ import annotations

import gzip
import logging
import math
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DATA
from scoring_helpers import TABLE, save_tiny_model

import mosesrnn
from mosesrnn.cli import main
from mosesrnn.formats.nbest import read_nbest
from mosesrnn.formats.sidecar import read_sidecar
from mosesrnn.pipeline.shards import ShardSpec
from mosesrnn.runtime.progress import Progress

NBEST = DATA / "nbest" / "tatoeba.dev30.untuned.100best.gz"
SOURCE = DATA / "nbest" / "tatoeba.dev30.tok.en"
MOSES_INI = DATA / "moses" / "tatoeba-en-fr.moses.ini"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    return save_tiny_model(str(tmp_path_factory.mktemp("model") / "model.pt"))


def invoke(*args: str):
    return CliRunner().invoke(main, [str(arg) for arg in args])


# -- '-o -' is stdout ----------------------------------------------------------------------------------


def test_moses_ini_writes_to_stdout_and_warns_about_a_relative_table(tmp_path, model):
    scored = tmp_path / "scored.gz"
    assert invoke("score", TABLE, "-m", model, "-o", scored).exit_code == 0
    result = invoke("moses-ini", MOSES_INI, "--table", scored, "-o", "-")
    assert result.exit_code == 0 and "[feature]" in result.stdout and not (Path.cwd() / "-").exists()
    assert "is relative" not in result.stderr  # an absolute --table
    shutil.copy(scored, "scored-here.gz")
    shutil.copy(str(scored) + ".json", "scored-here.gz.json")
    try:
        relative = invoke("moses-ini", MOSES_INI, "--table", "scored-here.gz", "-o", "-")
        assert relative.exit_code == 0
        assert "warning: path=scored-here.gz is relative" in relative.stderr and "$PWD/scored-here.gz" in \
            relative.stderr
    finally:
        for name in ("scored-here.gz", "scored-here.gz.json"):
            Path(name).unlink()


def test_merge_writes_to_stdout(tmp_path, model):
    for shard in ("1/2", "2/2"):
        assert invoke("score", TABLE, "-m", model, "--shard", shard, "-o",
                      tmp_path / f"part{shard[0]}.gz").exit_code == 0
    result = CliRunner().invoke(main, ["merge", str(tmp_path / "part1.gz"), str(tmp_path / "part2.gz"), "-o", "-"])
    assert result.exit_code == 0
    merged = gzip.decompress(result.stdout_bytes)
    assert merged.count(b"\n") == gzip.decompress(Path(TABLE).read_bytes()).count(b"\n")


# -- long jobs under nohup ----------------------------------------------------------------------------


def test_progress_logs_lines_when_stderr_is_not_a_terminal(caplog):
    caplog.set_level(logging.INFO, logger="mosesrnn")
    logging.getLogger("mosesrnn").propagate = True
    with Progress("scoring", terminal=False, interval=0.0, total=1000) as progress:
        progress.update_position(250)
        progress.update_position(500)
    lines = [record.getMessage() for record in caplog.records if record.getMessage().startswith("scoring:")]
    assert lines and "500 of 1,000 lines done" in lines[-1] and "left" in lines[-1]
    caplog.clear()
    with Progress("scoring", terminal=False, interval=0.0, quiet=True) as progress:
        progress.update(10)
    assert not caplog.records


# -- shards scored on different machines merge --------------------------------------------------------


def test_shards_scored_with_other_batch_sizes_merge(tmp_path, model):
    """A signature holds what changes the values, not what moves them by rounding (batch size, device)."""
    assert invoke("score", TABLE, "-m", model, "--shard", "1/2", "--batch-tokens", "512", "-o",
                  tmp_path / "part1.gz").exit_code == 0
    assert invoke("score", TABLE, "-m", model, "--shard", "2/2", "--batch-tokens", "4096", "-o",
                  tmp_path / "part2.gz").exit_code == 0
    assert invoke("merge", tmp_path / "part1.gz", tmp_path / "part2.gz", "-o", tmp_path / "all.gz").exit_code == 0
    sidecar = read_sidecar(str(tmp_path / "all.gz"))
    assert "batch_tokens" not in sidecar.signature and "device" not in sidecar.signature
    assert (sidecar.first_line, sidecar.last_line) == (1, sidecar.total_lines)  # inclusive, 1-based


@pytest.mark.parametrize("environ, shard", [
    ({"RANK": "2", "WORLD_SIZE": "4"}, "3/4"),
    ({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "8"}, "5/8"),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, "1/2"),
])
def test_shard_auto_reads_the_launcher(environ, shard):
    assert str(ShardSpec.parse("auto", environ)) == shard
    with pytest.raises(ValueError, match="--shard auto reads the shard from torchrun"):
        ShardSpec.parse("auto", {})


# -- silently wrong runs warn or stop ------------------------------------------------------------------


def test_bf16_on_a_cpu_without_bf16_warns(monkeypatch, caplog):
    from mosesrnn.runtime import precision
    monkeypatch.setattr(precision, "has_native_bf16", lambda: False)
    caplog.set_level(logging.WARNING, logger="mosesrnn")
    logging.getLogger("mosesrnn").propagate = True
    assert precision.precision("bf16", "cpu").name == "bf16"
    assert "PyTorch emulates them, many times slower than fp32" in caplog.text


def test_an_option_given_twice_is_refused(tmp_path, model):
    result = invoke("score", TABLE, "-m", model, "-m", model, "-o", tmp_path / "out.gz")
    assert result.exit_code == 2 and "-m and -m both given: give it once" in result.output
    result = invoke("moses-ini", MOSES_INI, "--cslm", "a.nplm", "--cslm", "b.nplm", "-o", "-")
    assert result.exit_code == 2 and "--cslm and --cslm both given" in result.output
    assert not (tmp_path / "out.gz").exists()


def test_a_table_scored_already_gets_one_warning(tmp_path, model, caplog):
    scored = tmp_path / "scored.gz"
    assert invoke("score", TABLE, "-m", model, "-o", scored).exit_code == 0
    model_file = mosesrnn.load(model, device="cpu").trained
    assert model_file.info == {}  # the tiny model records no training table; the sidecar tells
    again = invoke("score", scored, "-m", model, "-o", tmp_path / "twice.gz")
    assert again.exit_code == 0 and again.stderr.count("warning:") == 1
    assert "already has the columns rnn,unk" in again.stderr


# -- the same shapes everywhere ------------------------------------------------------------------------


def test_the_commands_take_their_input_the_same_way(tmp_path, model):
    sources = tmp_path / "in.txt"
    sources.write_text("i promise .\nthe house .\n")
    translated = invoke("translate", "-m", model, sources, "--beam", "2")
    sampled = invoke("sample", "-m", model, sources, "-n", "2", "--tsv")
    assert translated.exit_code == 0 and len(translated.stdout.splitlines()) == 2
    assert sampled.exit_code == 0 and {line.split("\t")[0] for line in sampled.stdout.splitlines()} == {"0", "1"}
    result = invoke("train", "--corpus", sources, sources, "-o", tmp_path / "m", "--dtype", "fp32", "--max-updates",
                    "1", "--valid-size", "1", "--embed-dim", "4", "--hidden-dim", "4", "--maxout-units", "2",
                    "--output-rank", "2", "--quiet")
    assert result.exit_code == 0, result.output


# -- what the peers' users ask for ---------------------------------------------------------------------


def test_per_token_scores_sum_to_the_rnn_column(tmp_path, model):
    loaded = mosesrnn.load(model, device="cpu")
    tokens = loaded.token_log_probs(["i promise .", "the house"], ["je promets .", "la maison"])
    assert [len(scores) for scores in tokens] == [4, 3]  # the words and EOS
    assert [math.fsum(scores) for scores in tokens] == pytest.approx(
        loaded.log_prob(["i promise .", "the house"], ["je promets .", "la maison"]), abs=1e-4)
    out, words = tmp_path / "out.gz", tmp_path / "words.txt"
    result = invoke("nbest", NBEST, "--source", SOURCE, "-m", model, "--features", "rnn", "--word-scores", words,
                    "-o", out)
    assert result.exit_code == 0, result.output
    lines = words.read_text().splitlines()
    entries = list(read_nbest(str(out)))
    assert len(lines) == len(entries)
    for line, entry in list(zip(lines, entries))[:300]:
        sentence, hypothesis, scores = line.split(" ||| ")
        assert (int(sentence), hypothesis) == (entry.sentence_id, entry.hypothesis)
        assert math.fsum(map(float, scores.split())) == pytest.approx(dict(entry.features)["RNN0"][0], abs=1e-3)


def test_a_second_model_gets_its_own_column_name(tmp_path, model):
    other = save_tiny_model(str(tmp_path / "other.pt"), seed=7)
    first, second = tmp_path / "one.gz", tmp_path / "two.gz"
    assert invoke("nbest", NBEST, "--source", SOURCE, "-m", model, "--features", "rnn", "-o", first).exit_code == 0
    result = invoke("nbest", first, "--source", SOURCE, "-m", other, "--features", "rnn", "--label", "rnn=RNN1",
                    "-o", second)
    assert result.exit_code == 0, result.output
    with read_nbest(str(second)) as entries:
        entry = next(entries)
    assert "RNN0" in entry.feature_names and "RNN1" in entry.feature_names
    refused = invoke("nbest", first, "--source", SOURCE, "-m", other, "--label", "rnn=rnn", "-o", tmp_path / "x")
    assert refused.exit_code == 1 and "'rnn' is not an n-best feature name" in refused.output


def test_a_cslm_of_another_vocabulary_is_pointed_out(tmp_path):
    """Most of the list's words unknown to the CSLM: its column would be mostly <unk>'s probability."""
    from mosesrnn.cslm.config import CSLMConfig
    from mosesrnn.cslm.model import CSLM
    from mosesrnn.cslm.model_file import save_cslm
    from mosesrnn.text.codec import Codec
    from mosesrnn.text.tokenizers import MosesWords
    from mosesrnn.text.vocab import Vocabulary
    codec = Codec(MosesWords(), Vocabulary(["<s>", "the", "house", "is", "small"]))  # English words
    save_cslm(str(tmp_path / "lm.pt"), CSLM(CSLMConfig(len(codec.vocabulary), order=3, embed_dim=4,
                                                                 hidden_dims=(8,))), codec,
                        {"coverage": 0.98, "log_z_mean": 0.0})
    result = invoke("nbest", NBEST, "--source", SOURCE, "--lm", tmp_path / "lm.pt", "-o", tmp_path / "out.gz")
    assert result.exit_code == 0, result.output
    assert "of the target tokens of the first" in result.stderr and "unknown to the cslm model (2% in its " \
        "training data)" in result.stderr


def test_a_lost_torchrun_process_is_one_line():
    from mosesrnn.train.distributed import PeerLost, Ranks, peers_alive
    with pytest.raises(PeerLost, match="rank 1: another process of this torchrun run stopped"):
        with peers_alive(Ranks(rank=1, world=2), "model/"):
            raise RuntimeError("[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer")
    with pytest.raises(RuntimeError, match="a bug"):  # other errors keep their traceback
        with peers_alive(Ranks(rank=1, world=2), "model/"):
            raise RuntimeError("a bug")
