"""Tests of scoring whole tables: the CLI, shards and merge, checkpoints and resume after SIGKILL."""
import gzip
import json
import os
import signal
import subprocess
import sys
import time
import zlib

import pytest
from click.testing import CliRunner
from scoring_helpers import TABLE, assert_equal_up_to_rnn_rounding, save_tiny_model

from mosesrnn.cli import main
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.features.unk import UnknownWordFeature
from mosesrnn.formats.phrase_table import PhraseTableError, read_entries
from mosesrnn.formats.sidecar import read_table_sidecar
from mosesrnn.io.compressed import count_lines
from mosesrnn.pipeline.merge import MergeError, merge_parts
from mosesrnn.pipeline.score import run_score_job
from mosesrnn.pipeline.shards import ShardSpec


@pytest.fixture(scope="module")
def features(model_path):
    trained = load_encoder_decoder(model_path)
    return [RNNFeature(trained), UnknownWordFeature(trained.vocabularies)]


def text(path):
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return stream.read()


def members(path) -> list[tuple[bytes, bytes]]:
    """Each gzip member of ``path``: its compressed bytes and its text."""
    data, found = path.read_bytes(), []
    while data:
        member = zlib.decompressobj(31)
        body = member.decompress(data)
        found.append((data[:len(data) - len(member.unused_data)], body))
        data = member.unused_data
    return found


def first_difference(one, other) -> str:
    """Where two gzip files' members first differ (for a failure message that explains itself)."""
    ones, others = members(one), members(other)
    at = next((k for k, (a, b) in enumerate(zip(ones, others)) if a != b), min(len(ones), len(others)))

    def shown(found):  # (compressed bytes, text bytes, lines) of member ``at``
        return (len(found[at][0]), len(found[at][1]), found[at][1].count(b"\n")) if at < len(found) else None

    same = at < min(len(ones), len(others)) and ones[at][1] == others[at][1]
    return (f"{len(ones)} against {len(others)} members; member {at} differs: {shown(ones)} against "
            f"{shown(others)} (compressed bytes, text bytes, lines), the same text: {same}")


def scores(line):
    return line.split("|||")[2].split()


def test_cli_appends_columns_in_the_order_asked(model_path, tmp_path):
    runner = CliRunner()
    for order in ("rnn,unk", "unk,rnn"):
        result = runner.invoke(main, ["score", TABLE, "-m", model_path, "--features", order,
                                      "-o", str(tmp_path / f"{order}.gz"), "--threads", "1"])
        assert result.exit_code == 0, result.output
    default = runner.invoke(main, ["score", TABLE, "-m", model_path, "-o", str(tmp_path / "default.gz")])
    assert default.exit_code == 0, default.output
    lines = [text(tmp_path / f"{name}.gz").splitlines() for name in ("rnn,unk", "unk,rnn", "default")]
    assert len(lines[0]) == count_lines(TABLE)
    for rnn_unk, unk_rnn, plain in zip(*lines):
        assert scores(rnn_unk)[-2:] == scores(unk_rnn)[-2:][::-1] and plain == rnn_unk
    sidecar = json.load(open(tmp_path / "rnn,unk.gz.json"))
    assert sidecar["appended_columns"] == ["rnn", "unk"] and "rnn(model=" in sidecar["signature"]


def test_cli_refuses_a_direction_mismatch(model_path, tmp_path):
    result = CliRunner().invoke(main, ["score", TABLE, "-m", model_path, "--direction", "target-to-source",
                                       "-o", str(tmp_path / "o.gz")])
    assert result.exit_code == 1 and "trained source-to-target" in result.output
    assert not (tmp_path / "o.gz").exists()


@pytest.mark.parametrize("count", [1, 3, 7])
def test_shards_merge_into_the_unsharded_table(features, tmp_path, count):
    run_score_job(TABLE, str(tmp_path / "whole.gz"), features, chunk_lines=400)
    parts = [str(tmp_path / f"part{i}.gz") for i in range(1, count + 1)]
    for index, part in enumerate(parts, start=1):
        run_score_job(TABLE, part, features, chunk_lines=400, shard=ShardSpec(index, count))
    entries = list(read_entries(TABLE))
    for part in parts[1:]:  # every shard starts where the source phrase changes
        first = json.load(open(part + ".json"))["first_line"]
        assert entries[first - 1].source != entries[first - 2].source
    merge_parts(parts[::-1], str(tmp_path / "merged.gz"))
    assert_equal_up_to_rnn_rounding(text(tmp_path / "merged.gz"), text(tmp_path / "whole.gz"))


def test_many_shards_of_a_short_table_may_be_empty(model_path, tmp_path):
    lines = gzip.open(TABLE, "rt", encoding="utf-8").readlines()[:30]
    table = tmp_path / "short.gz"
    table.write_bytes(gzip.compress("".join(lines).encode("utf-8")))
    unk = [UnknownWordFeature(load_encoder_decoder(model_path).vocabularies)]
    parts = [str(tmp_path / f"p{i}.gz") for i in range(1, 26)]
    for index, part in enumerate(parts, start=1):
        run_score_job(str(table), part, unk, shard=ShardSpec(index, 25))
    sizes = [json.load(open(part + ".json"))["lines"] for part in parts]
    assert 0 in sizes and sum(sizes) == 30
    merge_parts(parts, str(tmp_path / "merged.gz"))
    assert [line.split("|||")[:2] for line in text(tmp_path / "merged.gz").splitlines(True)] == \
        [line.split("|||")[:2] for line in lines]
    assert read_table_sidecar(str(tmp_path / "merged.gz")).identity["scores"] == 5  # its own text, not part 1's
    assert {read_table_sidecar(part).identity["scores"] for part in parts} == {5, None}  # empty parts too


def test_merge_refuses_missing_duplicated_or_foreign_parts(features, tmp_path):
    parts = [str(tmp_path / f"part{i}.gz") for i in (1, 2, 3)]
    for index, part in enumerate(parts, start=1):
        run_score_job(TABLE, part, features[1:], chunk_lines=400, shard=ShardSpec(index, 3))
    out = str(tmp_path / "merged.gz")
    with pytest.raises(MergeError, match="shard.* 2 of 3 missing"):
        merge_parts([parts[0], parts[2]], out)
    with pytest.raises(MergeError, match="shard 1/3 given twice"):
        merge_parts([parts[0], parts[0], parts[1], parts[2]], out)
    run_score_job(TABLE, str(tmp_path / "other.gz"), features[:1], chunk_lines=400, shard=ShardSpec(2, 3))
    with pytest.raises(MergeError, match="differ in signature"):
        merge_parts([parts[0], str(tmp_path / "other.gz"), parts[2]], out)
    result = CliRunner().invoke(main, ["merge", parts[0], parts[1], "-o", out])
    assert result.exit_code == 1 and "missing" in result.output
    assert not (tmp_path / "merged.gz").exists()


def test_bad_input_leaves_no_output(features, tmp_path):
    lines = gzip.open(TABLE, "rt", encoding="utf-8").readlines()
    lines[2500] = "no separators here\n"
    table = tmp_path / "bad.gz"
    table.write_bytes(gzip.compress("".join(lines).encode("utf-8")))
    out = tmp_path / "out.gz"
    with pytest.raises(PhraseTableError, match=":2501:"):
        run_score_job(str(table), str(out), features, chunk_lines=500, checkpoint_every=1)
    assert list(tmp_path.iterdir()) == [table]


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started (its workers, their resource tracker), from Linux's /proc."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as children:
            found += [int(child) for child in children.read().split()]
    return found


def _wait_for_checkpoint(process, progress_path, lines, timeout=60.0):
    """Wait until the run has checkpointed at least `lines` lines; False if it ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if json.load(open(progress_path))["state"]["lines"] >= lines:
                return True
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            pass
        time.sleep(0.01)
    return False


@pytest.mark.parametrize("workers", ["0", "2"])
def test_resume_after_sigkill_is_byte_identical(tmp_path, workers):
    table = tmp_path / "table.gz"
    table.write_bytes(open(TABLE, "rb").read() * 6)  # 18k lines, six gzip members
    model = save_tiny_model(str(tmp_path / "model.pt"), hidden_dim=256, output_rank=32, vocab_size=2000)
    out = tmp_path / "out.gz"
    args = ["score", str(table), "-m", model, "-o", str(out), "--chunk-lines", "500",
            "--checkpoint-every", "1", "--threads", "1", "--quiet"]
    process = subprocess.Popen([sys.executable, "-m", "mosesrnn.cli", *args, "--workers", workers])
    try:
        assert _wait_for_checkpoint(process, f"{out}.progress.json", 1500), "the run ended before the kill"
        children = _children(process.pid)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    deadline = time.monotonic() + 30
    while (left := [pid for pid in children if os.path.exists(f"/proc/{pid}")]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"processes of the killed run still alive: {left}"  # its workers leave with it
    assert not out.exists() and (tmp_path / "out.gz.part").exists()
    refused = CliRunner().invoke(main, args[:-1] + ["--features", "unk"])
    assert refused.exit_code == 1 and "holds a stopped run that differs from this one in signature" in refused.output
    resumed = CliRunner().invoke(main, args[:-1] + ["--resume", "--workers", "1"])  # workers do not change a byte
    assert resumed.exit_code == 0, resumed.output
    assert "resuming at line" in resumed.output
    reference = tmp_path / "reference.gz"
    result = CliRunner().invoke(main, [*args[:5], str(reference), *args[6:]])
    assert result.exit_code == 0, result.output
    assert text(out) == text(reference)
    assert out.read_bytes() == reference.read_bytes(), first_difference(out, reference)  # the same members too
    assert not (tmp_path / "out.gz.part").exists() and not (tmp_path / "out.gz.progress.json").exists()
    assert read_table_sidecar(str(out)).identity == read_table_sidecar(str(reference)).identity  # tied to its table
