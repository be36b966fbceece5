"""A user's error is one line; anything else is a bug, shown with its traceback and a line asking for a report
(issue 58): every error a user can fix is a MosesRNNError, and a plain ValueError from numpy or torch is not."""
from __future__ import annotations

import ast
import importlib
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import mosesrnn
from mosesrnn import cli
from mosesrnn.errors import BUG_NOTE, MosesRNNError

ROOT = Path(__file__).parent.parent
vocab_command = importlib.import_module("mosesrnn.cli.vocab")  # the module: mosesrnn.cli.vocab is the command


@pytest.fixture
def signals_kept():
    """cli.run() ignores SIGINT and SIGTERM once a command has ended (and main() resets SIGPIPE): put them back,
    or every later test's children would inherit them ignored."""
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE)}
    yield
    for sig, handler in kept.items():
        signal.signal(sig, handler)


def _vocab_args(tatoeba_table, tmp_path) -> list[str]:
    return ["vocab", str(tatoeba_table), "-o", str(tmp_path / "vocab"), "--size", "50"]


def _numpy_bug(*args, **kwargs):
    np.zeros(3).reshape(2, 2)  # numpy's ValueError: cannot reshape array of size 3 into shape (2,2)


def _user_error(*args, **kwargs):
    raise MosesRNNError("table.gz:3: a problem the user can fix")


def test_a_user_error_is_one_line_and_exit_status_1(monkeypatch, tatoeba_table, tmp_path):
    monkeypatch.setattr(vocab_command, "build_vocabularies", _user_error)
    result = CliRunner().invoke(cli.main, _vocab_args(tatoeba_table, tmp_path))
    assert result.exit_code == 1, (result.output, result.exception)
    assert result.output.splitlines() == ["Error: table.gz:3: a problem the user can fix"]
    assert "Traceback" not in result.output and BUG_NOTE not in result.output


def test_a_plain_value_error_is_a_bug_and_leaves_the_command(monkeypatch, tatoeba_table, tmp_path):
    """numpy's ValueError is not turned into one line ("Error: cannot reshape ..."): it leaves the command."""
    monkeypatch.setattr(vocab_command, "build_vocabularies", _numpy_bug)
    result = CliRunner().invoke(cli.main, _vocab_args(tatoeba_table, tmp_path))
    assert type(result.exception) is ValueError and "cannot reshape" in str(result.exception)
    assert "Error: cannot reshape" not in result.output


@pytest.mark.parametrize("bug", [_numpy_bug, lambda *args, **kwargs: len(None)], ids=["ValueError", "TypeError"])
def test_the_program_shows_a_bug_with_its_traceback_and_where_to_report_it(bug, monkeypatch, capsys, signals_kept,
                                                                            tatoeba_table, tmp_path):
    monkeypatch.setattr(vocab_command, "build_vocabularies", bug)
    monkeypatch.setattr(sys, "argv", ["mosesrnn", *_vocab_args(tatoeba_table, tmp_path)])
    with pytest.raises(SystemExit) as stop:
        cli.run()
    assert stop.value.code == 1
    stderr = capsys.readouterr().err
    assert stderr.startswith("Traceback (most recent call last):"), stderr
    assert stderr.rstrip("\n").splitlines()[-2].startswith(("ValueError: cannot reshape", "TypeError: "))
    assert stderr.rstrip("\n").splitlines()[-1] == BUG_NOTE
    assert "please report it with the traceback above" in BUG_NOTE


def test_the_program_keeps_a_user_error_to_one_line(monkeypatch, capsys, signals_kept, tatoeba_table, tmp_path):
    monkeypatch.setattr(vocab_command, "build_vocabularies", _user_error)
    monkeypatch.setattr(sys, "argv", ["mosesrnn", *_vocab_args(tatoeba_table, tmp_path)])
    with pytest.raises(SystemExit) as stop:
        cli.run()
    assert stop.value.code == 1
    assert capsys.readouterr().err == "Error: table.gz:3: a problem the user can fix\n"


def test_every_user_error_class_is_a_mosesrnn_error():
    from moses_integration.mert_moses import MertSetupError
    from moses_integration.tools import MosesToolError
    from mosesrnn.bilm.data import AlignmentError
    from mosesrnn.formats.errors import FileLineError
    from mosesrnn.formats.moses_ini import MosesIniError
    from mosesrnn.formats.nbest import NbestError
    from mosesrnn.formats.phrase_table import PhraseTableError
    from mosesrnn.formats.sidecar import SidecarError, SidecarMismatch
    from mosesrnn.io.locks import LockedError
    from mosesrnn.io.model_store import ModelFileError, StateFileError
    from mosesrnn.io.resumable import ResumeError
    from mosesrnn.pipeline.merge import MergeError
    from mosesrnn.train.distributed import PeerLost
    for error in (MertSetupError, AlignmentError, FileLineError, MosesIniError, NbestError, PhraseTableError,
                  SidecarError, SidecarMismatch, LockedError, ModelFileError, StateFileError, ResumeError, MergeError,
                  PeerLost, MosesToolError):
        assert issubclass(error, MosesRNNError), error
    assert issubclass(MosesRNNError, ValueError) and mosesrnn.MosesRNNError is MosesRNNError


# The few plain ValueErrors left are a programmer's mistakes, not a user's: each named with its reason.
PLAIN_VALUE_ERRORS = {
    ("mosesrnn/features/registry.py", "describe"),  # a feature whose settings disagree with its FeatureSpec
    ("mosesrnn/io/roles.py", "model_file"),  # a model kind missing from the model registry
    ("mosesrnn/text/subwords.py", "save_vocab_dir"),  # a pair of tokenizers no vocabulary directory holds
}


def test_no_user_error_is_raised_as_a_plain_value_error():
    found = set()
    for package in ("mosesrnn", "moses_integration"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for function in ast.walk(tree):
                if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(function):
                    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) \
                            and getattr(node.exc.func, "id", "") == "ValueError":
                        found.add((str(path.relative_to(ROOT)), function.name))
    assert found == PLAIN_VALUE_ERRORS
