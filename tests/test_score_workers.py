"""Scoring with worker processes (`score --workers N`): the same bytes as one process, the same care."""
import gzip
import os
import signal
from pathlib import Path

import numpy as np
import pytest
from scoring_helpers import TABLE, save_tiny_model

from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.encdec.pair_ids import PairEncoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.features.unk import UnknownWordFeature
from mosesrnn.formats.phrase_table import PhraseTableError, read_entries
from mosesrnn.io.compressed import estimated_text_size
from mosesrnn.io.job import Job
from mosesrnn.io.roles import input_file
from mosesrnn.pipeline.score import run_score_job
from mosesrnn.pipeline.shards import ShardSpec
from mosesrnn.pipeline.table_chunks import RawChunk, TableChunks, parse_chunk
from mosesrnn.pipeline.workers import ChunkJob, WorkerDied, WorkerError, WorkerPool, default_workers, worker_count
from mosesrnn.text.id_arrays import id_arrays


@pytest.fixture(scope="module")
def features(tmp_path_factory):
    trained = load_encoder_decoder(save_tiny_model(str(tmp_path_factory.mktemp("model") / "tiny.pt")))
    return [RNNFeature(trained), UnknownWordFeature(trained.vocabularies)]


def text(path):
    return gzip.decompress(open(path, "rb").read())


ROOT = Path(__file__).resolve().parents[1]
#: the whole Tatoeba table filtered to the dev and test sentences, where ../shared lies beside the checkout
TATOEBA = ROOT.parent / "shared/data/tatoeba-moses-en-fr/phrase-table.dev-filtered.gz"


@pytest.mark.parametrize("shard", [ShardSpec(), ShardSpec(2, 3)])
def test_workers_write_the_bytes_one_process_writes(features, tmp_path, shard):
    outputs = {}
    for workers in (0, 2):
        outputs[workers] = str(tmp_path / f"w{workers}.gz")
        summary = run_score_job(TABLE, outputs[workers], features, chunk_lines=300, shard=shard, workers=workers)
    assert open(outputs[2], "rb").read() == open(outputs[0], "rb").read()  # the gzip bytes: a member a chunk
    assert summary.lines == len(text(outputs[0]).splitlines()) > 0


@pytest.mark.parametrize("table, chunk_lines", [
    (str(ROOT / "examples/phrase-table.gz"), 1000),
    pytest.param(str(TATOEBA), 20000, marks=pytest.mark.skipif(not TATOEBA.exists(), reason=f"{TATOEBA} is not here "
                                                               "(../shared/data lies beside our checkouts only)")),
])
def test_a_real_table_scores_to_the_same_bytes_with_any_workers(features, tmp_path, table, chunk_lines):
    """Issue 56: the example table, and the Tatoeba system's 231,000-line table in the default chunks, give the
    same file byte for byte in one process and with one or two workers reading it themselves."""
    outputs = [tmp_path / f"w{workers}.gz" for workers in (0, 1, 2)]
    for workers, output in enumerate(outputs):
        summary = run_score_job(table, str(output), features, chunk_lines=chunk_lines, workers=workers)
        assert summary.pass_lines == summary.lines and len(summary.worker_cpu_seconds) == workers
    first = outputs[0].read_bytes()
    assert all(output.read_bytes() == first for output in outputs[1:])
    assert text(outputs[0]).count(b"\n") == summary.lines


def test_the_first_bad_line_of_the_table_is_reported_and_nothing_is_left(features, tmp_path):
    lines = gzip.open(TABLE, "rt", encoding="utf-8").readlines()
    lines[2500] = "no separators here\n"  # in a chunk a worker may finish first
    lines[700] = "la maison ||| the house ||| 0.5 x\n"
    table = tmp_path / "bad.gz"
    table.write_bytes(gzip.compress("".join(lines).encode("utf-8")))
    with pytest.raises(PhraseTableError, match=r"bad\.gz:701: score 'x' is not a number"):
        run_score_job(str(table), str(tmp_path / "out.gz"), features, chunk_lines=200, checkpoint_every=1, workers=2)
    assert list(tmp_path.iterdir()) == [table]


def test_chunks_parse_to_the_entries_of_the_reader():
    with TableChunks(TABLE, "utf-8", 700) as chunks:
        parsed = [entry for chunk in chunks for entry in parse_chunk(chunk, TABLE, "utf-8", chunks.expected_scores)]
    with read_entries(TABLE) as entries:
        assert parsed == list(entries)


def shard_lines(sources: list[str], start: int, stop: int | None) -> range:
    """The lines of a shard by the rule of mosesrnn.pipeline.shards, written out: from the first boundary (line 1,
    or a line whose source differs from the previous line's) at or after ``start`` up to the first at or after
    ``stop`` (the end of the table is the last boundary)."""
    boundaries = [line for line in range(1, len(sources) + 1)
                  if line == 1 or sources[line - 1] != sources[line - 2]] + [len(sources) + 1]
    first = next(line for line in boundaries if line >= start)
    return range(first, next(line for line in boundaries if line >= (stop or len(sources) + 1)))


@pytest.mark.parametrize("count", [1, 2, 3, 5, 25])
def test_chunks_of_each_shard_are_its_lines_by_the_boundary_rule(count):
    with read_entries(TABLE) as entries:
        sources = [entry.source for entry in entries]
    for index in range(1, count + 1):
        start, stop = ShardSpec(index, count).nominal_range(len(sources))
        expected = shard_lines(sources, start, stop)
        with TableChunks(TABLE, "utf-8", 450, start, stop) as chunks:
            got = [line for chunk in chunks for line in range(chunk.first_line, chunk.last_line + 1)]
        assert got == list(expected) and (chunks.first_line, chunks.end_line) == (expected.start, expected.stop)


def test_chunks_resume_inside_a_shard():
    with TableChunks(TABLE, "utf-8", 300, 1000, 2000) as chunks:
        whole = [line for chunk in chunks for line in range(chunk.first_line, chunk.last_line + 1)]
    with TableChunks(TABLE, "utf-8", 300, 1000, 2000, resume_line=whole[10]) as chunks:
        resumed = [line for chunk in chunks for line in range(chunk.first_line, chunk.last_line + 1)]
    assert resumed == whole[10:] and chunks.first_line is None and chunks.end_line == whole[-1] + 1


def test_a_last_line_without_newline_and_crlf_endings_survive_a_chunk():
    data = b"a ||| b ||| 1 2\r\nc d ||| e ||| 3 4\r\nf ||| g ||| 5 6"
    entries = parse_chunk(RawChunk(7, 3, data), "t", "utf-8", 2)
    assert [entry.line_no for entry in entries] == [7, 8, 9]
    assert [entry.ending for entry in entries] == ["\r\n", "\r\n", ""]
    with pytest.raises(PhraseTableError, match=r"^t:8: not valid utf-8"):
        parse_chunk(RawChunk(7, 2, b"a ||| b ||| 1\nc \xff ||| d ||| 2\n"), "t", "utf-8", 1)


def test_ids_in_bulk_equal_the_codec_phrase_by_phrase(features):
    trained = features[0].trained
    with read_entries(TABLE) as entries:
        pairs = [entry for _, entry in zip(range(500), entries)]
    codec = trained.text.target
    arrays = id_arrays(codec, [pair.target for pair in pairs])
    padded, lengths = arrays.padded(np.arange(len(pairs)), append_eos=True)
    for row, pair in zip(padded.tolist(), pairs):
        ids = codec.ids(pair.target) + [2]
        assert row[:len(ids)] == ids and set(row[len(ids):]) <= {0}
    assert lengths.tolist() == [len(codec.ids(pair.target)) + 1 for pair in pairs]
    encoded = PairEncoder(trained.input_codec, trained.output_codec, trained.direction)(pairs)
    assert len(encoded.inputs) == len({pair.source for pair in pairs})
    assert features[0].compute(encoded).tolist() == features[0].values(pairs)


def test_a_dead_worker_is_an_error_not_a_wait(features):
    job = ChunkJob(TABLE, "utf-8", tuple(feature.encoder for feature in features), (9, None))
    with pytest.raises(WorkerDied, match=r"worker 1 of 1 died \(killed by SIGKILL\): out of memory\?"):
        with WorkerPool(1, job) as pool:
            os.kill(pool._workers[0].pid, signal.SIGKILL)
            pool.encode(0, RawChunk(1, 1, b"a ||| b ||| 1 2 3 4 5\n"), 5)
            pool.encoded(0)


def test_a_failing_worker_sends_its_traceback():
    job = ChunkJob(TABLE, "utf-8", (len,), (9,))
    with WorkerPool(1, job) as pool:
        pool.encode(0, RawChunk(1, 1, b"a ||| b ||| 1 2 3 4 5\n"), 5)
        pool.encoded(0)
        pool.format(0, [["not a number"]])
        with pytest.raises(WorkerError, match=r"a worker failed on chunk 1:\n.*Traceback"):
            pool.formatted(0)


def test_workers_by_default_one_a_core_but_one_and_none_for_a_small_table():
    assert default_workers(1 << 20, cores=16) == 0
    assert default_workers(1 << 30, cores=16) == 8
    assert default_workers(1 << 30, cores=2) == 1
    assert default_workers(None, cores=1) == 0


def test_the_size_that_chooses_the_workers_is_the_texts_not_the_gzips(tmp_path):
    text = "".join(f"s{i} ||| t{i} ||| 0.5 0.5\n" for i in range(200_000)).encode("utf-8")
    table = tmp_path / "table.gz"
    table.write_bytes(gzip.compress(text, compresslevel=1))
    with Job([(input_file(), str(table))]):
        estimate = estimated_text_size(str(table))
    assert table.stat().st_size < 8 << 20 < len(text) * 2 and abs(estimate - len(text)) < len(text) * 0.2


def test_workers_are_capped_at_the_cores(caplog):
    assert worker_count(3, cores=2) == 2 and "--workers 3 capped at 2" in caplog.text
    assert worker_count(2, cores=2) == 2


@pytest.mark.parametrize("texts", [
    ["la maison", "the house", "a"],
    ["das|ART Haus|NN", "b"],  # factors: factor 0 of each word
    ["a\tb", "c"],  # tabs split words too
    ["a  b", "c"],  # a run of spaces is one separator
    ["é ü", "x"],
    [],
])
def test_tokens_of_many_are_the_words_of_each_text(texts):
    from mosesrnn.text.tokenizers import MosesWords, words
    tokens, lengths = MosesWords().tokens_of_many(texts)
    assert tokens == [word for text in texts for word in words(text)]
    assert lengths == [len(words(text)) for text in texts]


@pytest.mark.parametrize("data", [
    b"",  # an empty table
    b"la maison ||| the house ||| 0.5 0.5",  # one line, no final newline
    b"la ||| the ||| 0.5 0.5\r\nmaison ||| house ||| 0.2 0.1 \r\n",  # CRLF, a space after the scores
    b"a ||| b ||| 1 2 ||| 0-0 ||| 1 1 1 ||| |||\n" * 7 + b"a ||| c ||| 1 2 ||| 0-0 ||| 1 1 1 ||| |||\n",  # empty fields
    "é ||| ü ||| 0.25 1\n".encode("utf-8") * 5,
])
def test_odd_tables_give_the_same_bytes_with_workers(features, tmp_path, data):
    table = tmp_path / "odd.gz"
    table.write_bytes(gzip.compress(data))
    outputs = [tmp_path / f"w{workers}.gz" for workers in (0, 2)]
    for workers, output in zip((0, 2), outputs):
        run_score_job(str(table), str(output), features, chunk_lines=3, workers=workers)
    assert outputs[0].read_bytes() == outputs[1].read_bytes()
    assert len(text(outputs[0]).splitlines()) == len(data.splitlines())  # line for line, endings kept


def test_stdin_and_the_first_chunks_warning_are_the_same_with_workers(tmp_path, monkeypatch, caplog):
    """Every way in (a file read by the workers, stdin read here and handed over, one process) writes the same
    bytes and warns alike: a table in the other direction, from its first chunk's head."""
    import io
    import sys

    from mosesrnn.features.unk import UnknownWordFeature as Unk

    trained = load_encoder_decoder(str(ROOT / "examples/model/tatoeba-small.pt"))
    features = [RNNFeature(trained, normalizer="exact"), Unk(trained.vocabularies)]
    lines = gzip.decompress((ROOT / "examples/phrase-table.gz").read_bytes()).decode("utf-8").splitlines(True)[:3000]
    swapped = "".join(" ||| ".join([fields[1], fields[0], *fields[2:]]) for fields in
                      (line.split(" ||| ") for line in lines)).encode("utf-8")
    table = tmp_path / "fr-en.gz"
    table.write_bytes(gzip.compress(swapped))
    runs = {}
    for name, path, workers in (("file, 2 workers", str(table), 2), ("stdin, 2 workers", "-", 2),
                                ("stdin, one process", "-", 0), ("file, one process", str(table), 0)):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(swapped)))
        caplog.clear()
        output = tmp_path / f"{name}.gz"
        run_score_job(path, str(output), features, chunk_lines=1000, workers=workers)
        runs[name] = output.read_bytes()
        assert "of the source tokens of the first 1,000 lines" in caplog.text and "other direction" in caplog.text, name
    assert len(set(runs.values())) == 1
