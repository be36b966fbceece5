"""Issue 49: `score --workers` never hangs. Every fault ends in seconds with one line and the right exit status,
resumes where it should, and leaves no process and no half-written file.

The faults are those that hung the pool before, at the size where they hung it: a generated table of 240,000
lines (17 MB of text) in the default chunks of 20,000 lines, each chunk megabytes, far more than a pipe holds.
Each case runs `mosesrnn score` in a session of its own under a hang guard: a run still going after
:data:`HANG_GUARD` seconds is killed, with its process group, and fails the test (it ends in under 10 s when
nothing hangs; the guard leaves room for a loaded machine). After each, no process of its session is left.
"""
from __future__ import annotations

import gzip
import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scoring_helpers import save_tiny_model

LINES = 240_000
HANG_GUARD = 90
WORDS = [f"w{i}" for i in range(400)]


def _line(number: int, rng: random.Random) -> str:
    source = " ".join(rng.choice(WORDS) for _ in range(1 + number % 4))
    target = " ".join(rng.choice(WORDS) for _ in range(1 + number % 3))
    return f"s{number // 4} {source} ||| {target} ||| 0.1 0.2 0.3 0.4 ||| 0-0 ||| 1 1 1\n"


@pytest.fixture(scope="module")
def lines() -> list[str]:
    rng = random.Random(49)
    return [_line(number, rng) for number in range(LINES)]


@pytest.fixture(scope="module")
def table(tmp_path_factory, lines) -> Path:
    path = tmp_path_factory.mktemp("table") / "table.gz"
    path.write_bytes(gzip.compress("".join(lines).encode("utf-8"), compresslevel=1))
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    return save_tiny_model(str(tmp_path_factory.mktemp("model") / "tiny.pt"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory, table, model) -> bytes:
    """The table scored in one process, uninterrupted: what every run with workers must write."""
    out = tmp_path_factory.mktemp("reference") / "scored.gz"
    run = Score(table, model, out, workers="0").finish()
    assert run.returncode == 0, run.stderr
    return gzip.decompress(out.read_bytes())


def _gzip(path: Path, lines: list[str]) -> Path:
    path.write_bytes(gzip.compress("".join(lines).encode("utf-8"), compresslevel=1))
    return path


class Score:
    """``mosesrnn score TABLE -m MODEL -o OUT`` started in a session of its own (so that the processes it leaves,
    its workers included, can be found and killed)."""

    def __init__(self, table, model, out, *extra, workers="2", limits=None, stdout=subprocess.DEVNULL):
        self.args = ["score", str(table), "-m", str(model), "-o", str(out), "--threads", "1", "--workers", workers,
                     *map(str, extra)]
        preexec = (lambda: resource.setrlimit(*limits)) if limits else None
        self.process = subprocess.Popen([sys.executable, "-m", "mosesrnn.cli", *self.args], stdout=stdout,
                                        stderr=subprocess.PIPE, text=True, start_new_session=True,
                                        preexec_fn=preexec)
        self.session = self.process.pid
        self.stderr = ""

    def finish(self, guard: float = HANG_GUARD) -> "Score":
        """Wait for the run under the hang guard; then every process of its session must be gone."""
        try:
            _, self.stderr = self.process.communicate(timeout=guard)
        except subprocess.TimeoutExpired:
            stacks = _kill_session(self.session)
            self.process.communicate()
            pytest.fail(f"hung: still running after {guard} s ({' '.join(self.args)}); {stacks}")
        self.returncode = self.process.returncode
        left = _session_processes(self.session, wait=3.0)
        if left:
            _kill_session(self.session)
            pytest.fail(f"processes left after the run ended: {left}")
        return self

    def children(self) -> list[int]:
        """The run's worker processes, once started."""
        return [pid for pid, command in _session_processes(self.session).items()
                if pid != self.session and "mosesrnn.runtime.child" in command]

    def signal_group(self, signum: int) -> None:
        os.killpg(self.session, signum)


def _session_processes(session: int, wait: float = 0.0) -> dict[int, str]:
    """The live processes of ``session`` (pid: command line), waiting up to ``wait`` seconds for them to end."""
    deadline = time.monotonic() + wait
    while True:
        found = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                fields = stat[stat.rindex(")") + 2:].split()
                command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except (OSError, ValueError):
                continue
            if int(fields[3]) == session and fields[0] != "Z":  # the session id; a zombie has ended
                found[int(entry)] = command.strip()
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


def _kill_session(session: int) -> str:
    left = _session_processes(session)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return f"killed {len(left)} processes of its session"


def _wait_for(condition, what: str, run: Score, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert run.process.poll() is None, f"the run ended before {what}: {run.process.communicate()[1]}"
        assert time.monotonic() < deadline, f"no {what} after {limit} s"
        time.sleep(0.02)


def _one_error_line(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith(("Error:", "mosesrnn:"))]
    assert "Traceback" not in stderr and len(errors) == 1, stderr
    return errors[0]


def _files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


# -- bad input ------------------------------------------------------------------------------------------------------

def test_bad_lines_name_the_first_and_leave_nothing(tmp_path, lines, model):
    bad = list(lines)
    bad[79_989], bad[94_999] = "broken line\n", "also ||| broken\n"
    table = _gzip(tmp_path / "bad.gz", bad)
    run = Score(table, model, tmp_path / "out.gz").finish()
    assert run.returncode == 1
    assert "bad.gz:79990: expected at least 3 '|||'-separated fields" in _one_error_line(run.stderr)
    assert _files(tmp_path) == ["bad.gz"]


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_truncated_gzip_is_reported_at_the_line_where_it_ends(tmp_path, lines, model, workers):
    data = gzip.compress("".join(lines[:100_000]).encode("utf-8"), compresslevel=1)
    table = tmp_path / "cut.gz"
    table.write_bytes(data[:len(data) * 4 // 5])
    with gzip.open(table, "rb") as stream:  # the whole lines that are there, as gzip itself reads them
        whole = 0
        try:
            for line in stream:
                whole += line.endswith(b"\n")
        except EOFError:
            pass
    assert 60_000 < whole < 100_000
    run = Score(table, model, tmp_path / "out.gz", workers=workers).finish()
    assert run.returncode == 1
    line = _one_error_line(run.stderr)
    assert f"cut.gz:{whole + 1}: cannot read compressed data" in line, line
    assert _files(tmp_path) == ["cut.gz"]


def test_a_bad_line_before_a_truncation_is_the_one_reported(tmp_path, lines, model):
    bad = list(lines[:100_000])
    bad[9_999] = "broken line\n"
    data = gzip.compress("".join(bad).encode("utf-8"), compresslevel=1)
    table = tmp_path / "both.gz"
    table.write_bytes(data[:len(data) * 4 // 5])
    run = Score(table, model, tmp_path / "out.gz").finish()
    assert run.returncode == 1 and "both.gz:10000:" in _one_error_line(run.stderr)
    assert _files(tmp_path) == ["both.gz"]


# -- signals --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("signum, to_group, status", [
    (signal.SIGINT, True, 130), (signal.SIGTERM, True, 143), (signal.SIGTERM, False, 143)])
def test_a_signal_after_a_checkpoint_keeps_it_and_the_same_command_resumes(tmp_path, table, model, reference,
                                                                           signum, to_group, status):
    out = tmp_path / "out.gz"
    run = Score(table, model, out, "--checkpoint-every", "1")
    progress = tmp_path / "out.gz.progress.json"
    _wait_for(progress.exists, "a checkpoint", run)
    run.signal_group(signum) if to_group else run.process.send_signal(signum)
    run.finish()
    assert run.returncode == status, run.stderr
    assert "run the same command to continue at line" in _one_error_line(run.stderr)
    assert _files(tmp_path) == ["out.gz.part", "out.gz.progress.json"]
    resumed = Score(table, model, out, "--checkpoint-every", "1").finish()
    assert resumed.returncode == 0, resumed.stderr
    assert gzip.decompress(out.read_bytes()) == reference


def test_ctrl_c_as_soon_as_the_workers_exist_keeps_nothing(tmp_path, table, model):
    run = Score(table, model, tmp_path / "out.gz")
    _wait_for(lambda: len(run.children()) == 2, "workers", run)
    run.signal_group(signal.SIGINT)
    run.finish()
    assert run.returncode == 130
    assert "nothing kept" in _one_error_line(run.stderr)
    assert _files(tmp_path) == []


def test_signals_at_random_moments_end_the_run_and_leave_it_resumable(tmp_path, table, model, reference):
    rng = random.Random(7)
    out = tmp_path / "out.gz"
    for round_ in range(6):  # from the moment the workers exist (a signal during the imports is Python's)
        run = Score(table, model, out, "--checkpoint-every", "2")
        _wait_for(lambda run=run: len(run.children()) == 2, "workers", run)
        time.sleep(rng.uniform(0.0, 3.0))
        signum = rng.choice([signal.SIGINT, signal.SIGTERM])
        run.signal_group(signum) if rng.random() < 0.5 else run.process.send_signal(signum)
        run.finish()
        assert run.returncode in (0, 128 + signum), f"round {round_}: {run.stderr}"
        if run.returncode == 0:
            break
        assert "Traceback" not in run.stderr and "interrupted" in run.stderr, f"round {round_}: {run.stderr}"
    finished = Score(table, model, out, "--checkpoint-every", "2").finish()
    assert finished.returncode == 0, finished.stderr
    assert gzip.decompress(out.read_bytes()) == reference


# -- processes that die ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("chunk_lines", ["20000", "200"])
def test_a_killed_worker_ends_the_run_in_one_line(tmp_path, table, model, chunk_lines):
    run = Score(table, model, tmp_path / "out.gz", "--chunk-lines", chunk_lines, "--checkpoint-every", "1")
    _wait_for(lambda: len(run.children()) == 2, "workers", run)
    _wait_for((tmp_path / "out.gz.progress.json").exists, "a checkpoint", run)
    os.kill(run.children()[0], signal.SIGKILL)
    run.finish()
    assert run.returncode == 1
    line = _one_error_line(run.stderr)
    assert "died (killed by SIGKILL): out of memory?" in line and "run the same command to continue" in line, line
    assert _files(tmp_path) == ["out.gz.part", "out.gz.progress.json"]


def test_killing_the_run_takes_its_workers_along(tmp_path, table, model):
    run = Score(table, model, tmp_path / "out.gz")
    _wait_for(lambda: len(run.children()) == 2, "workers", run)
    run.process.kill()
    run.finish()  # fails when a worker or the resource tracker outlives it
    assert run.returncode == -signal.SIGKILL


def test_a_reader_that_closes_stdout_ends_the_run(tmp_path, table, model):
    run = Score(table, model, "-", stdout=subprocess.PIPE)
    assert len(run.process.stdout.read(1000)) == 1000
    run.process.stdout.close()
    run.finish()
    assert run.returncode == -signal.SIGPIPE  # as `cat | head`: ended by SIGPIPE, nothing printed


# -- the disk, and the worker count ---------------------------------------------------------------------------------

def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, table, model):
    """A file size limit makes the writes fail part-way through the output, as a full disk does."""
    run = Score(table, model, tmp_path / "out.gz", "--checkpoint-every", "1",
                limits=(resource.RLIMIT_FSIZE, (1_200_000, resource.RLIM_INFINITY))).finish()
    assert run.returncode == 1
    assert "file too large" in _one_error_line(run.stderr).lower()
    assert _files(tmp_path) == []


def test_more_workers_than_cores_are_capped_with_one_line(tmp_path, table, model, reference):
    cores = len(os.sched_getaffinity(0))
    run = Score(table, model, tmp_path / "out.gz", workers="1000").finish()
    assert run.returncode == 0, run.stderr
    assert f"--workers 1000 capped at {cores}" in run.stderr
    assert gzip.decompress((tmp_path / "out.gz").read_bytes()) == reference


# -- workers that start without the caller's script -----------------------------------------------------------------

README_EXAMPLE = '''\
import mosesrnn

model = mosesrnn.load({model!r})
model.log_prob(["the house"], ["la maison"])
mosesrnn.score_table({table!r}, {out!r}, mosesrnn.FeatureOptions(model={model!r}, threads=1), workers={workers})
print("scored")
'''


@pytest.mark.parametrize("workers", ["None", "2"])
def test_the_readmes_example_as_an_unguarded_script_scores_with_workers(tmp_path, table, model, reference, workers):
    """Issue 56: README's Python example saved as a script without `if __name__ == "__main__":` hung for ever
    with workers (each spawned worker re-ran the script and died; the parent blocked writing its arguments).
    ``None``: the default count, one worker on two cores for this 17 MB table."""
    out = tmp_path / "scored.gz"
    script = tmp_path / "example.py"
    script.write_text(README_EXAMPLE.format(model=str(model), table=str(table), out=str(out), workers=workers))
    run = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True, cwd=tmp_path)
    try:
        stdout, stderr = run.communicate(timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung: {_kill_session(run.pid)}")
    assert run.returncode == 0 and stdout == "scored\n", stderr
    assert gzip.decompress(out.read_bytes()) == reference
    assert _session_processes(run.pid, wait=3.0) == {}


@pytest.mark.parametrize("bootstrap, how", [("import os; os._exit(3)", "exit status 3"),
                                            ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
                                             "killed by SIGKILL")])
def test_a_worker_that_dies_before_reading_its_work_ends_the_run_at_once(tmp_path, table, monkeypatch, bootstrap,
                                                                         how):
    """A worker that dies as it starts (an import error, the OOM killer, a ulimit), before it has read the work
    sent to it (the shipped model's shortlists: far more than a pipe holds), is an error within seconds."""
    from mosesrnn.encdec.model_file import load_encoder_decoder
    from mosesrnn.features.rnn import RNNFeature
    from mosesrnn.pipeline.score import run_score_job
    from mosesrnn.pipeline.workers import WorkerDied
    from mosesrnn.runtime import processes

    trained = load_encoder_decoder(str(Path(__file__).parents[1] / "examples/model/tatoeba-small.pt"))
    monkeypatch.setattr(processes, "_BOOTSTRAP", bootstrap)
    started = time.monotonic()
    with pytest.raises(WorkerDied, match=f"worker [12] of 2 died \\({how}\\)"):
        run_score_job(str(table), str(tmp_path / "out.gz"), [RNNFeature(trained)], workers=2)
    assert time.monotonic() - started < 30
    assert _files(tmp_path) == []
