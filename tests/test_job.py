"""The seam every command passes through: Job (checks, folders, cleanup) and the output locks."""
from __future__ import annotations

import gzip
import json
import logging
import os
import signal
import subprocess
import sys
import time

import pytest
from scoring_helpers import TABLE, save_tiny_model

from mosesrnn.io.job import Interrupted, Job
from mosesrnn.io.locks import LockedError, OutputLock, lock_path
from mosesrnn.io.roles import output_file, output_folder


def test_a_missing_output_folder_is_made_and_removed_again_when_the_run_fails(tmp_path):
    output = tmp_path / "new" / "deeper" / "out.txt"
    with pytest.raises(ValueError, match="bad input"):
        with Job([(output_file(), str(output))]):
            assert output.parent.is_dir()
            raise ValueError("bad input")
    assert os.listdir(tmp_path) == []


def test_a_made_folder_with_work_in_it_is_kept(tmp_path):
    model_dir = tmp_path / "model"
    with pytest.raises(RuntimeError):
        with Job([(output_folder(), str(model_dir))]):
            (model_dir / "state.pt").write_bytes(b"worth keeping")
            raise RuntimeError("crash after some work")
    assert os.listdir(model_dir) == ["state.pt"]  # the lock is gone, the work stays


def test_an_interrupted_job_says_what_it_kept(tmp_path):
    existing = tmp_path / "old.txt"
    existing.write_text("before")
    with pytest.raises(Interrupted) as stop:
        with Job([(output_file(), str(existing)), (output_file(), str(tmp_path / "new.txt"))]):
            raise KeyboardInterrupt
    assert str(stop.value) == f"interrupted: {existing} left as it was, {tmp_path / 'new.txt'} not written"
    assert sorted(os.listdir(tmp_path)) == ["old.txt"]


def test_the_same_output_named_twice_is_refused(tmp_path):
    with pytest.raises(ValueError, match="named as two outputs"):
        with Job([(output_file(), str(tmp_path / "a.tsv")), (output_file(), str(tmp_path / "." / "a.tsv"))]):
            pass


def test_a_stale_lock_is_taken_over(tmp_path):
    output = tmp_path / "out.gz"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    record = {"pid": int(dead.stdout), "host": "here", "command": "mosesrnn score (killed)", "started": "then"}
    (tmp_path / "out.gz.lock").write_text(json.dumps(record))  # left by a run that died: nobody holds it
    with Job([(output_file(), str(output))]):
        assert json.loads((tmp_path / "out.gz.lock").read_text())["pid"] == os.getpid()
    assert not (tmp_path / "out.gz.lock").exists()


def test_a_held_lock_names_its_holder(tmp_path):
    holder = OutputLock(str(tmp_path / "out.gz"))
    holder.acquire("mosesrnn score big.gz -o out.gz")
    try:
        with pytest.raises(LockedError, match=rf"pid {os.getpid()} .*`mosesrnn score big.gz -o out.gz`"):
            OutputLock(str(tmp_path / "out.gz")).acquire("mosesrnn score other.gz -o out.gz")
    finally:
        holder.release()
    assert not os.path.exists(lock_path(str(tmp_path / "out.gz")))


def _big_table(tmp_path) -> str:
    table = tmp_path / "table.gz"
    table.write_bytes(open(TABLE, "rb").read() * 12)  # 36k lines
    return str(table)


def _wait_for(path, process, seconds=120):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        assert process.poll() is None and time.monotonic() < deadline, "the first run ended too soon"
        time.sleep(0.02)


def test_two_score_runs_on_one_output_the_second_is_refused(tmp_path):
    table, out = _big_table(tmp_path), str(tmp_path / "out.gz")
    model = save_tiny_model(str(tmp_path / "model.pt"), hidden_dim=256, output_rank=32, vocab_size=2000)
    args = [sys.executable, "-m", "mosesrnn.cli", "score", table, "-m", model, "-o", out, "--threads", "1",
            "--chunk-lines", "500", "-q"]
    first = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    _wait_for(out + ".lock", first)
    second = subprocess.run(args, capture_output=True, text=True)
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert f"{out} is being written by another run (pid {first.pid}" in second.stderr
    _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    expected = 12 * gzip.decompress(open(TABLE, "rb").read()).count(b"\n")
    assert gzip.decompress(open(out, "rb").read()).count(b"\n") == expected  # the first run's whole output
    assert not os.path.exists(out + ".lock")


def test_nbest_stopped_by_sigterm_leaves_no_temporary_file(tmp_path):
    from conftest import DATA
    nbest = tmp_path / "big.100best.gz"
    nbest.write_bytes((DATA / "nbest" / "tatoeba.dev30.untuned.100best.gz").read_bytes())
    model = save_tiny_model(str(tmp_path / "model.pt"), hidden_dim=512, output_rank=64, vocab_size=2000)
    out = tmp_path / "out.gz"
    process = subprocess.Popen([sys.executable, "-m", "mosesrnn.cli", "nbest", str(nbest), "--source",
                                str(DATA / "nbest" / "tatoeba.dev30.tok.en"), "-m", model, "-o", str(out),
                                "--threads", "1", "--chunk-lines", "50"], stderr=subprocess.PIPE, text=True)
    _wait_for(str(out) + ".lock", process)
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr  # 128 + SIGTERM, as a shell reports it
    assert f"mosesrnn: interrupted: {out} not written" in stderr and "Traceback" not in stderr
    assert sorted(os.listdir(tmp_path)) == ["big.100best.gz", "model.pt"]


def test_a_file_system_without_locks_warns_and_goes_on(tmp_path, monkeypatch, caplog):
    import fcntl

    def no_locks(fd, operation):
        raise OSError(37, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    monkeypatch.setattr(logging.getLogger("mosesrnn"), "propagate", True)  # a CLI run may have turned it off
    with Job([(output_file(), str(tmp_path / "out.gz"))]):
        pass
    assert "cannot lock" in caplog.text and "No locks available" in caplog.text
    assert os.listdir(tmp_path) == []


def test_two_outputs_on_stdout_are_refused_by_name():
    with pytest.raises(ValueError, match=r"^--word-scores and -o/--output are both '-': only one output can go to "
                                         r"stdout \(their lines would interleave\); give one of them a file$"):
        with Job([(output_file().named("--word-scores"), "-"), (output_file().named("-o/--output"), "-")]):
            pass
    with Job([(output_file().named("-o"), "-"), (output_file().named("--log"), None)]):  # one owner: fine
        pass


# -- a save is not interrupted ---------------------------------------------------------------------------------


class _SignalledHalfWay:
    """A stream that receives ``signum`` (as from Ctrl-C or kill) once half of ``size`` bytes were written to it."""

    def __init__(self, stream, signum: int, size: int):
        self.stream, self.signum, self.half, self.written = stream, signum, size // 2, 0

    def write(self, data) -> int:
        before, self.written = self.written, self.written + len(data)
        written = self.stream.write(data)
        if before < self.half <= self.written:
            signal.raise_signal(self.signum)  # its handler runs here, inside torch's zip writer
        return written

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _signal_during_torch_save(monkeypatch, signum: int) -> None:
    """Every torch.save receives ``signum`` half-way through writing its file."""
    import io

    import torch
    real_save = torch.save

    def save(contents, stream):
        size = io.BytesIO()
        real_save(contents, size)
        real_save(contents, _SignalledHalfWay(stream, signum, len(size.getvalue())))

    monkeypatch.setattr(torch, "save", save)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_save_waits_until_the_file_is_whole(tmp_path, monkeypatch, signum):
    """Raised inside torch.save, the KeyboardInterrupt became a RuntimeError of PyTorch's zip writer (`unexpected
    pos`): a traceback. Held back until the file is whole, it interrupts the run as any Ctrl-C does."""
    import torch

    from mosesrnn.io.model_store import read_state_file, save_file
    _signal_during_torch_save(monkeypatch, signum)
    handler = signal.getsignal(signal.SIGINT)  # Python's, or SIG_IGN when started in the background
    path, weights = str(tmp_path / "state.pt"), torch.arange(200_000, dtype=torch.float32)
    with pytest.raises(Interrupted, match="interrupted"):
        with Job([(output_file(), path)]):
            save_file(path, {"version": 1, "weights": weights})
            pytest.fail("the signal was not delivered after the save")
    monkeypatch.undo()
    assert torch.equal(read_state_file(path, 1)["weights"], weights)
    assert signal.getsignal(signal.SIGINT) is handler  # the handlers are restored


def test_a_second_ctrl_c_while_lm_train_saves_its_state(tmp_path, monkeypatch):
    """The issue's case: the first Ctrl-C asks the training to stop, the second lands while it saves. Each save
    here receives a Ctrl-C half-way: best.pt is whole and asks to stop; last.pt and state.pt are whole (a pair),
    then the second interrupts: one line, exit 130, and a state to continue from."""
    from click.testing import CliRunner

    from mosesrnn.cli import main
    from mosesrnn.cslm.model_file import load_cslm
    from mosesrnn.io.model_store import read_state_file
    from mosesrnn.train.loop import STATE_VERSION
    corpus = tmp_path / "corpus.fr"
    corpus.write_bytes(b"".join(open(os.path.join(os.path.dirname(TABLE), "tatoeba.dev400.fr"), "rb")
                                .readlines()[:200]))
    _signal_during_torch_save(monkeypatch, signal.SIGINT)
    out = tmp_path / "lm"
    result = CliRunner().invoke(main, ["lm", "train", str(corpus), "-o", str(out), "--order", "3", "--vocab-size",
                                       "50", "--embed-dim", "4", "--hidden", "8", "--max-updates", "4",
                                       "--valid-every", "2", "--valid-share", "0.2", "--batch-size", "8"])
    monkeypatch.undo()
    assert result.exit_code == 130, (result.output, result.exception)
    assert "Traceback" not in result.output and "RuntimeError" not in result.output
    said = [line for line in result.stderr.splitlines() if "interrupted" in line]
    assert said[-1].startswith("mosesrnn: interrupted")
    state = read_state_file(str(out / "state.pt"), STATE_VERSION)
    assert state["updates"] == 2  # the state of the validation's save, whole
    for name in ("best.pt", "last.pt"):
        load_cslm(str(out / name))
    assert not [name for name in os.listdir(out) if name.endswith(".part")]
