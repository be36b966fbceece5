"""Finding Moses' programs and running them.

Moses is not a Python package: its programs live in ``mosesdecoder/bin`` (``moses``,
``processPhraseTableMin``, ``CreateOnDiskPt``, ``extractor``, ``mert``, ``kbmira``) and its
scripts in ``mosesdecoder/scripts``. We look for a program in the folder given on the command
line, then in the folder named by an environment variable, then on ``PATH``, and say where we
looked when it is missing.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from typing import IO, Sequence

from mosesrnn.errors import MosesRNNError

__all__ = ["MosesToolError", "find_program", "searched_places", "missing_program_error", "format_command",
           "describe_exit", "run_command"]

MOSES_BIN_ENV = "MOSES_BIN"
INSTALL_HINT = (
    "Build Moses (https://www.statmt.org/moses/?n=Development.GetStarted), then pass "
    "--moses-bin /path/to/mosesdecoder/bin or set MOSES_BIN.")


class MosesToolError(MosesRNNError, RuntimeError):
    """A Moses program is missing or failed; the message says what to install, set or read (a user's error,
    and a RuntimeError as before)."""


def _candidate_dirs(directory: str | None, env_var: str | None, option: str) -> list[tuple[str, str]]:
    """(label, folder) pairs to search, in order; an explicit folder wins over the variable."""
    candidates = []
    if directory:
        candidates.append((f"{option} {directory}", directory))
    if env_var and os.environ.get(env_var):
        candidates.append((f"${env_var} ({os.environ[env_var]})", os.environ[env_var]))
    return candidates


def find_program(name: str, directory: str | None = None, env_var: str | None = MOSES_BIN_ENV,
                 subdirs: Sequence[str] = ("",)) -> str | None:
    """Return the path of the executable ``name``, or None.

    Looks in ``directory``, then in ``$env_var``, each joined with every entry of ``subdirs``
    (e.g. ``("training", "")`` for a scripts folder), then on ``PATH``.
    """
    for _, folder in _candidate_dirs(directory, env_var, ""):
        for sub in subdirs:
            path = os.path.join(folder, sub, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return shutil.which(name)


def searched_places(directory: str | None, env_var: str | None, option: str = "--moses-bin") -> str:
    """Human-readable list of where :func:`find_program` looked, e.g. ``$MOSES_BIN (/x), PATH``."""
    places = [label for label, _ in _candidate_dirs(directory, env_var, option)]
    if env_var and not os.environ.get(env_var):
        places.append(f"${env_var} (not set)")
    return ", ".join(places + ["PATH"])


def missing_program_error(name: str, directory: str | None = None, env_var: str | None = MOSES_BIN_ENV,
                          hint: str = INSTALL_HINT, command: Sequence[str] | None = None,
                          option: str = "--moses-bin") -> MosesToolError:
    """The error for a missing program: its name, the places searched, what to do, and (given
    ``command``) the exact command we meant to run."""
    message = f"{name} not found (searched {searched_places(directory, env_var, option)}). {hint}"
    if command is not None:
        message += f"\nThe command to run is:\n  {format_command(command)}"
    return MosesToolError(message)


def format_command(argv: Sequence[str], stdout: str | None = None) -> str:
    """A shell-ready rendering of ``argv`` (and of a ``> stdout`` redirection)."""
    text = shlex.join(argv)
    return f"{text} > {shlex.quote(stdout)}" if stdout else text


def describe_exit(returncode: int) -> str:
    """``exit code 3``, or for a negative code (a signal) ``killed by signal SIGABRT (6)``."""
    if returncode >= 0:
        return f"exit code {returncode}"
    try:
        return f"killed by signal {signal.Signals(-returncode).name} ({-returncode})"
    except ValueError:
        return f"killed by signal {-returncode}"


def run_command(argv: Sequence[str], stdout: IO | None = None, stderr: IO | int | None = None) -> None:
    """Run ``argv`` (``stderr`` may be ``subprocess.STDOUT``); raise :class:`MosesToolError` with
    the command if it fails, is killed by a signal, or cannot start."""
    try:
        completed = subprocess.run(list(argv), stdout=stdout, stderr=stderr, check=False)
    except OSError as error:
        raise MosesToolError(f"cannot run {format_command(argv)}: {error}") from None
    if completed.returncode > 0:
        raise MosesToolError(f"command failed with exit code {completed.returncode}: {format_command(argv)}")
    if completed.returncode < 0:
        raise MosesToolError(f"command {describe_exit(completed.returncode)}: {format_command(argv)}")
