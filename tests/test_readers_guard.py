"""Issue 42: a test that leaves a reader open fails, whichever way it leaves it (tests/conftest.py's guard)."""
from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import write_pytest_ini

TESTS = Path(__file__).parent

LEAKING_TESTS = '''
import threading

import conftest
from mosesrnn.formats.phrase_table import read_entries


class Holder:
    """A reader in a reference cycle: only the garbage collector would close it."""

    def __init__(self, path):
        self.entries, self.me = read_entries(path), self
        next(self.entries)


def test_closed():
    with read_entries("table.gz") as entries:
        next(entries)


def test_gzip_left_in_a_cycle():
    Holder("table.gz")


def test_plain_left_to_be_dropped():
    next(read_entries("table.txt"))


def test_thread_left_running():
    conftest.THREAD_GRACE = 0.1
    threading.Thread(target=threading.Event().wait, name="mosesrnn-reader", daemon=True).start()
'''


def test_a_reader_left_open_fails_the_test_that_left_it(tmp_path):
    lines = b"a ||| b ||| 0.5\nc ||| d ||| 0.5\n"
    (tmp_path / "table.gz").write_bytes(gzip.compress(lines))
    (tmp_path / "table.txt").write_bytes(lines)
    (tmp_path / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    (tmp_path / "test_leaks.py").write_text(LEAKING_TESTS)
    write_pytest_ini(tmp_path)
    wide = {**os.environ, "COLUMNS": "500"}  # the summary's lines whole
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_leaks.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, env=wide)
    report = run.stdout + run.stderr
    assert run.returncode == 1, report
    failed = dict(re.findall(r"^(?:ERROR|FAILED) test_leaks\.py::(\w+) - (.*)$", run.stdout, re.MULTILINE))
    assert sorted(failed) == ["test_gzip_left_in_a_cycle", "test_plain_left_to_be_dropped",
                              "test_thread_left_running"], report
    assert "GzipReader over 'table.gz' not closed" in failed["test_gzip_left_in_a_cycle"], report
    assert "Exception ignored in: <function Reader.__del__" in failed["test_plain_left_to_be_dropped"], report
    assert "ResourceWarning: TableReader left open before its end" in report
    assert "thread mosesrnn-reader still running" in failed["test_thread_left_running"], report
