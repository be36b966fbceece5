"""What a new user hit: special outputs, the input as output, a full disk, interruptions, odd inputs."""
import gzip
import math
import os
import signal
import stat
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner
from scoring_helpers import TABLE, save_tiny_model

from mosesrnn.cli import main
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.formats.phrase_table import PhraseTableError, parse_line, read_entries


@pytest.fixture
def small_table(tmp_path):
    """The first 300 lines of the real Tatoeba slice, gzipped."""
    with gzip.open(TABLE, "rt", encoding="utf-8") as lines:
        text = "".join(line for _, line in zip(range(300), lines))
    path = tmp_path / "small.gz"
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    return path


def score(*args):
    return CliRunner().invoke(main, ["score", *map(str, args)])


def test_dev_null_stays_a_device_and_gets_no_sidecar(model_path, small_table):
    result = score(small_table, "-m", model_path, "-o", os.devnull)
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert not os.path.exists(os.devnull + ".json") and not os.path.exists(os.devnull + ".part")


def test_a_fifo_is_written_directly(model_path, small_table, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(open(fifo, "rb").read()))
    reader.start()
    result = score(small_table, "--vocab", _vocab(tmp_path, model_path), "--features", "unk", "-o", fifo)
    reader.join(30)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and not (tmp_path / "pipe.json").exists()
    assert received[0].decode("utf-8").count("\n") == 300


def _vocab(tmp_path, model_path):
    directory = tmp_path / "vocab"
    load_encoder_decoder(model_path).vocabularies.save(str(directory))
    return directory


def test_a_symlink_is_followed_and_kept(model_path, small_table, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / "elsewhere" / "scored.gz"
    link = tmp_path / "scored.gz"
    link.symlink_to(target)
    result = score(small_table, "-m", model_path, "-o", link)
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and gzip.decompress(target.read_bytes()).count(b"\n") == 300
    assert (tmp_path / "scored.gz.json").exists()


@pytest.mark.parametrize("through_link", [False, True])
def test_the_input_is_never_the_output(model_path, small_table, tmp_path, through_link):
    before = small_table.read_bytes()
    output = small_table
    if through_link:
        output = tmp_path / "link.gz"
        output.symlink_to(small_table)
    result = score(small_table, "-m", model_path, "-o", output)
    assert result.exit_code == 1 and "is the input" in result.output
    assert small_table.read_bytes() == before


@pytest.fixture
def tiny_disk(tmp_path):
    """A 128 KiB tmpfs (skipped where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(mount)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_is_one_clear_line_and_leaves_nothing(model_path, tiny_disk):
    table = gzip.decompress(open(TABLE, "rb").read())
    plain = tiny_disk.parent / "plain.txt"
    plain.write_bytes(table)
    result = subprocess.run([sys.executable, "-m", "mosesrnn.cli", "score", str(plain), "-m", model_path,
                             "-o", str(tiny_disk / "scored.txt"), "--chunk-lines", "500"],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "no space left on device" in result.stderr and "Traceback" not in result.stderr
    assert os.listdir(tiny_disk) == []


def test_stdout_to_dev_full(model_path, small_table):
    with open("/dev/full", "wb") as full:
        result = subprocess.run([sys.executable, "-m", "mosesrnn.cli", "score", str(small_table), "-m", model_path,
                                 "-o", "-"], stdout=full, stderr=subprocess.PIPE, text=True)
    assert result.returncode == 1
    assert "no space left on device" in result.stderr and "Traceback" not in result.stderr


def test_more_than_709_unknown_words_are_capped_with_a_warning(model_path, tmp_path):
    table = tmp_path / "long.txt"
    table.write_text("la maison ||| " + " ".join(f"mot{i}" for i in range(720)) + " ||| 0.5\n"
                     "la maison ||| the house ||| 0.5\n", encoding="utf-8")
    result = score(table, "-m", model_path, "--features", "unk", "--unk-side", "target", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "1 values above 709" in result.output
    first, second = [line.split("|||")[2].split()[-1] for line in (tmp_path / "out").read_text().splitlines()]
    assert math.log(float(first)) == pytest.approx(709) and math.isfinite(float(first))
    assert math.log(float(second)) == pytest.approx(2)  # "the", "house" are not French words


def test_scoring_a_scored_table_again_warns(model_path, small_table, tmp_path):
    once = tmp_path / "once.gz"
    assert score(small_table, "-m", model_path, "-o", once).exit_code == 0
    result = score(once, "-m", model_path, "-o", tmp_path / "twice.gz")
    assert result.exit_code == 0
    assert "already has the columns rnn,unk" in result.output


def test_a_model_warns_about_a_table_of_the_other_direction(tmp_path):
    table = tmp_path / "table.gz"
    table.write_bytes(open(TABLE, "rb").read())
    model = tmp_path / "model"
    trained = CliRunner().invoke(main, ["train", str(table), "-o", str(model), "--max-updates", "2",
                                        "--valid-every", "2", "--embed-dim", "4", "--hidden-dim", "8",
                                        "--maxout-units", "4", "--output-rank", "4", "--vocab-size", "500"])
    assert trained.exit_code == 0, trained.output
    assert load_encoder_decoder(str(model / "best.pt")).info["table_scores"] == 4
    same = score(table, "-m", model / "best.pt", "-o", tmp_path / "same.gz")
    assert same.exit_code == 0 and "warning" not in same.output
    swapped = tmp_path / "swapped.gz"
    lines = gzip.decompress(table.read_bytes()).decode("utf-8").splitlines(True)
    swapped.write_bytes(gzip.compress("".join("|||".join([f[1], f[0], *f[2:]]) for f in
                                              (line.split("|||") for line in lines)).encode("utf-8")))
    result = score(swapped, "-m", model / "best.pt", "-o", tmp_path / "swapped.rnn.gz")
    assert result.exit_code == 0
    assert "of the source tokens" in result.output and "other direction" in result.output


def test_gzip_is_recognised_by_its_bytes_not_its_name(small_table, tmp_path):
    renamed = tmp_path / "phrase-table"
    renamed.write_bytes(small_table.read_bytes())
    assert len(list(read_entries(str(renamed)))) == 300


def test_a_glued_separator_is_named():
    with pytest.raises(PhraseTableError, match="field 4 is: a phrase holds a '|||' glued to a word"):
        parse_line('la maison ||| the|||house ||| 0.5 0.2 ||| 0-0\n', "t", 7)


@pytest.mark.parametrize("workers", ["0", "2"])
def test_ctrl_c_keeps_the_work_and_says_how_to_resume(tmp_path, workers):
    table = tmp_path / "table.gz"
    table.write_bytes(open(TABLE, "rb").read() * 12)  # 36k lines
    model = save_tiny_model(str(tmp_path / "model.pt"), hidden_dim=256, output_rank=32, vocab_size=2000)
    out = tmp_path / "out.gz"
    args = ["score", str(table), "-m", model, "-o", str(out), "--chunk-lines", "500", "--checkpoint-every", "2",
            "--threads", "1", "--workers", workers]
    process = subprocess.Popen([sys.executable, "-m", "mosesrnn.cli", *args], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "out.gz.part").exists() or (tmp_path / "out.gz.part").stat().st_size == 0:
        # the first checkpoint (1,000 lines) has written a gzip member; 35,000 lines are left
        assert process.poll() is None and time.monotonic() < deadline, "the run ended before Ctrl-C"
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "run the same command to continue at line" in stderr and "Traceback" not in stderr
    assert (tmp_path / "out.gz.part").exists() and (tmp_path / "out.gz.progress.json").exists()
    resumed = CliRunner().invoke(main, args[:] + ["--resume"])
    assert resumed.exit_code == 0, resumed.output
    reference = tmp_path / "reference.gz"
    assert CliRunner().invoke(main, [*args[:5], str(reference), *args[6:]]).exit_code == 0
    assert gzip.decompress(out.read_bytes()) == gzip.decompress(reference.read_bytes())


_SIGNAL_WHILE_IMPORTING = """
import os, signal, sys

class SignalOnImport:  # the signal comes while the commands' modules import (click is the first of them)
    def find_spec(self, name, path=None, target=None):
        if name == "click":
            os.kill(os.getpid(), {signum})
        return None

sys.meta_path.insert(0, SignalOnImport())
sys.argv = ["mosesrnn", "--help"]
from mosesrnn.entry import main
main()
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_program_starts_is_one_line(signum):
    """Before the commands exist there is nothing to keep: one line, and the status of an interrupted run."""
    started = subprocess.run([sys.executable, "-c", _SIGNAL_WHILE_IMPORTING.format(signum=int(signum))],
                             capture_output=True, text=True, timeout=60)
    assert (started.returncode, started.stdout) == (128 + signum, "")
    assert started.stderr == "mosesrnn: interrupted while starting: nothing done\n"


def test_training_stopped_before_any_validation_leaves_a_usable_model(tmp_path):
    model = tmp_path / "model"
    args = ["train", TABLE, "-o", str(model), "--max-updates", "3", "--valid-every", "1000", "--embed-dim", "4",
            "--hidden-dim", "8", "--maxout-units", "4", "--output-rank", "4", "--vocab-size", "200"]
    process = subprocess.Popen([sys.executable, "-m", "mosesrnn.cli", *args[:4], "--max-updates", "100000",
                                *args[6:]], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not os.path.exists(model / "train.jsonl"):  # written as the training loop starts
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert load_encoder_decoder(str(model / "best.pt")).info["valid_nll"] is None
    result = CliRunner().invoke(main, ["score", TABLE, "-m", str(model / "best.pt"), "-o", str(tmp_path / "s.gz")])
    assert result.exit_code == 0, result.output


def test_training_logs_each_validation_when_not_on_a_terminal(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mosesrnn.cli", "train", TABLE, "-o", str(tmp_path / "m"),
                             "--max-updates", "4", "--valid-every", "2", "--embed-dim", "4", "--hidden-dim", "8",
                             "--maxout-units", "4", "--output-rank", "4", "--vocab-size", "200"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "update 2 (epoch 0" in result.stderr and "update 4 (epoch 0" in result.stderr
    assert "fontManager" not in result.stderr


def test_main_help_shows_the_whole_job():
    output = CliRunner().invoke(main, ["--help"]).output
    for command in ("mosesrnn train", "mosesrnn score", "mosesrnn moses-ini", "mosesrnn tune"):
        assert command in output
