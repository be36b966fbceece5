"""gzip through either deflate library (mosesrnn.io.gzip_stream.backend): python-isal, the default, and the standard
library's zlib, which a bare GPU host that lacks isal falls back to. Every check runs both ways: the same text read
and written, the same damage reported, and the same resume-by-checkpoint behaviour (a stream started under one
library continues under the other)."""
from __future__ import annotations

import gzip
import importlib.util
import io
import zlib

import pytest
from click.testing import CliRunner
from conftest import DATA

from mosesrnn.cli import main
from mosesrnn.io import gzip_stream
from mosesrnn.io.compressed import (
    atomic_text_output,
    count_lines,
    decompressed,
    estimated_text_size,
    open_input,
    read_bytes,
)
from mosesrnn.io.resumable import ResumableOutput

MODEL = DATA.parent.parent / "examples/model/tatoeba-small.pt"

BACKENDS = ["isal", "zlib"]
TEXT = "".join(f"{i}\tune ligne de texte ||| a line of text ||| {i * 7 % 13}\n" for i in range(60_000)).encode()


def _library(name: str):
    if name == "zlib":
        return zlib
    if importlib.util.find_spec("isal") is None:
        pytest.skip("python-isal is not installed here")
    from isal import isal_zlib
    return isal_zlib


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch) -> str:
    """The deflate library every gzip stream of the test uses: ``isal`` or ``zlib``."""
    monkeypatch.setattr(gzip_stream, "backend", _library(request.param))
    assert gzip_stream.backend_name() == request.param
    return request.param


def test_the_default_is_isal_where_it_imports():
    assert gzip_stream.backend_name() == ("isal" if importlib.util.find_spec("isal") else "zlib")


def test_written_text_reads_back_the_same_and_gzip_reads_it(backend, tmp_path):
    path = tmp_path / "out.gz"
    with atomic_text_output(str(path)) as stream:
        stream.write(TEXT.decode())
    assert gzip.decompress(path.read_bytes()) == TEXT
    assert read_bytes(str(path)) == TEXT
    with open_input(str(path)) as stream:
        assert stream.read() == TEXT


@pytest.mark.parametrize("writer", BACKENDS)
def test_each_library_reads_what_the_other_wrote(backend, writer, tmp_path, monkeypatch):
    path = tmp_path / "out.gz"
    with monkeypatch.context() as patch:
        patch.setattr(gzip_stream, "backend", _library(writer))
        with atomic_text_output(str(path)) as stream:
            stream.write(TEXT.decode())
    with open_input(str(path)) as stream:
        assert stream.read() == TEXT


def test_several_members_read_as_one_stream(backend, tmp_path):
    path = tmp_path / "members.gz"
    path.write_bytes(b"".join(gzip.compress(TEXT[start:start + 100_000]) for start in range(0, len(TEXT), 100_000)))
    with open_input(str(path)) as stream:
        assert stream.read() == TEXT
    assert count_lines(str(path)) == 60_000


def test_the_real_table_reads_the_same(backend):
    table = DATA / "tatoeba.en-fr.3k.gz"
    with open_input(str(table)) as stream:
        assert stream.read() == gzip.decompress(table.read_bytes())
    assert count_lines(str(table)) == 3001


def test_a_cut_stream_gives_its_bytes_then_eof(backend):
    data = gzip.compress(TEXT)[:-5000]
    with decompressed(io.BytesIO(data)) as stream:
        got = b""
        with pytest.raises(EOFError):
            while block := stream.read(1 << 16):
                got += block
    assert len(got) > 0 and TEXT.startswith(got)


def test_bytes_that_are_not_gzip_are_a_bad_gzip_file(backend):
    data = bytearray(gzip.compress(TEXT))
    data[len(data) // 2:len(data) // 2 + 64] = b"\xff" * 64
    with pytest.raises(gzip.BadGzipFile), decompressed(io.BytesIO(bytes(data))) as stream:
        while stream.read(1 << 16):
            pass


def test_the_text_size_of_a_gzip_file_is_estimated_the_same(backend, tmp_path):
    path = tmp_path / "text.gz"
    path.write_bytes(gzip.compress(TEXT))
    assert estimated_text_size(str(path)) == len(TEXT)  # exact: the file is smaller than the sample


def _resumable(path, pieces: list[bytes], resume: bool, stop_after: int | None = None) -> ResumableOutput:
    """Write ``pieces`` through a ResumableOutput as gzip members, a checkpoint after each; with ``stop_after``,
    stop there as a killed run would: the checkpointed pieces, then a piece half written without its checkpoint."""
    output = ResumableOutput(str(path), {"run": 1}, resume=resume)
    done = output.state["pieces"] if output.state else 0
    for number, piece in enumerate(pieces[done:], start=done):
        member = gzip_stream.gzip_member(piece)
        if stop_after is not None and number == stop_after:
            output.write(member[:len(member) // 2])  # partly flushed, never recorded
            output._raw.close()
            return output
        output.write(member)
        output.checkpoint({"pieces": number + 1})
    output.finish()
    return output


@pytest.mark.parametrize("resumer", BACKENDS)
def test_a_stopped_output_resumes_to_the_same_text(backend, resumer, tmp_path, monkeypatch):
    pieces = [TEXT[start:start + 300_000] for start in range(0, len(TEXT), 300_000)]
    whole = tmp_path / "whole.gz"
    _resumable(whole, pieces, resume=False)
    path = tmp_path / "out.gz"
    _resumable(path, pieces, resume=False, stop_after=2)
    assert not path.exists() and (tmp_path / "out.gz.progress.json").exists()
    with monkeypatch.context() as patch:
        patch.setattr(gzip_stream, "backend", _library(resumer))
        _resumable(path, pieces, resume=True)
    assert not (tmp_path / "out.gz.progress.json").exists()
    assert gzip.decompress(path.read_bytes()) == gzip.decompress(whole.read_bytes()) == TEXT
    with open_input(str(path)) as stream:
        assert stream.read() == TEXT
    if resumer == backend:  # one library: a resumed run writes exactly the bytes of one that never stopped
        assert path.read_bytes() == whole.read_bytes()


_SCORED: dict[str, bytes] = {}


def test_score_writes_the_same_text_with_either_library(backend, tmp_path):
    out = tmp_path / "scored.gz"
    result = CliRunner().invoke(main, ["score", str(DATA / "tatoeba.en-fr.3k.gz"), "-m", str(MODEL), "--features",
                                       "rnn,unk", "-o", str(out), "--checkpoint-every", "1", "--chunk-lines", "1000",
                                       "-q", "--workers", "0", "--threads", "1"])
    assert result.exit_code == 0, result.output
    _SCORED[backend] = gzip.decompress(out.read_bytes())
    assert _SCORED[backend].count(b"\n") == 3001
    assert len(set(_SCORED.values())) == 1  # the other library's run, where it ran first, wrote the same text
