"""The one way in and out of every run: a :class:`Job` holds the paths a run reads and writes.

Every command runs inside a job built from its options' roles (:mod:`mosesrnn.io.roles`; the
command line builds it in :class:`mosesrnn.cli.common.Command`), every API function inside one
built from its arguments (:func:`declares`). Before any work the job checks what a careful tool
checks, for every run alike:

- every input exists (a file where a file is expected, a folder where a folder is);
- no output is one of the inputs or a companion read with one (a table's ``.json`` sidecar),
  through any link; no output is named twice, and no input is a file the run writes inside an
  output folder (``lm train -o lm/ --valid lm/best.pt``);
- an output the run keeps (:func:`~mosesrnn.io.roles.kept_output`) does not exist yet, nor does
  any of its companions, unless the run was told to replace them (``--force``);
- stdout has one owner: at most one output is ``-`` (two would interleave their lines);
- the folder of every output exists or can be made (it is made, and removed again if the run
  fails and leaves it empty), and nothing on the way is a regular file;
- no other run is writing an output: each output is locked (:mod:`mosesrnn.io.locks`).

While the job runs, the readers and writers of this floor (:func:`check_read`,
:func:`check_write`) refuse a path the job was not declared with: a run cannot read or write a
file its signature does not name. A job entered inside another (a command calling an API
function) only checks that the outer job declared everything it declares.

Under torchrun the processes of one run share its outputs: only rank 0 (which writes them) checks
and locks them.

While the job runs, Ctrl-C and SIGTERM (a scheduler's preemption, ``kill``) raise KeyboardInterrupt, also in a
process started with SIGINT ignored (a script's background job); an interruption leaves the job as
:class:`Interrupted`, whose message says what was kept (exit status 130 after Ctrl-C, 143 after SIGTERM:
:func:`mosesrnn.io.signals.interrupted_status`). Outputs themselves are written whole or not at all by the atomic
writers; ``-`` (stdin, stdout) and special files (``/dev/null``, a FIFO) are used directly and neither locked nor
checked.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import signal
import threading
from typing import Any, Callable, Iterable

from ..errors import MosesRNNError
from . import declared
from .atomic import is_special_file
from .declared import UndeclaredFileError, check_read, check_write
from .locks import OutputLock, command_line
from .roles import Role
from .signals import interrupting, record_signal

__all__ = ["Job", "Interrupted", "UndeclaredFileError", "check_read", "check_write", "declares"]


class Interrupted(Exception):
    """A run stopped by Ctrl-C or SIGTERM; the message says what was kept and how to go on."""


def _real(path: str) -> str:
    return os.path.realpath(path)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class Job:
    """The declared paths of one run, checked, locked and cleaned up (see the module docstring).

    ``paths``: ``(role, path)`` pairs; None paths are skipped, so optional options can be passed
    as they are. A command that stops gracefully on its own (``train`` saves first) installs its
    own signal handlers inside the job, and restores the job's after.
    """

    def __init__(self, paths: Iterable[tuple[Role, str | None]] = ()):
        paths = list(paths)
        self.paths = [(role, path) for role, path in paths if path is not None and path != "-"]
        self._stdout = [role.label or role.name for role, path in paths if path == "-" and role.writes]
        self._named: set[str] = set()  # inputs the declared inputs name (declared.declare_input)
        self._made: list[str] = []
        self._locks: list[OutputLock] = []
        self._existed: dict[str, bool] = {}
        self._signals: dict = {}
        self._outer = False

    # -- what the run may touch ----------------------------------------------------------------------

    def _readable(self) -> tuple[set[str], list[str]]:
        files, folders = set(), []
        for role, path in self.paths:
            if not role.folder:
                files.update(map(_real, role.files(path) + role.companion_files(path)))
            if role.folder or role.name == "program output":
                folders += [_real(path), os.path.abspath(path)]
        return files, folders

    def may_read(self, path: str) -> bool:
        """Whether ``path`` is declared: an input, an output (a resumed run reads its own), or under a
        declared folder — where it lies or where it leads: a link the user put in the folder (`tune`'s runs
        linked from another tuning) is read through."""
        real, given = _real(path), os.path.abspath(path)
        files, folders = self._readable()
        return real in files or real in self._named or any(_under(real, folder) or _under(given, folder)
                                                           for folder in folders)

    def add_input(self, path: str) -> None:
        """Declare one more file the run reads (one a declared input names: see :func:`declared.declare_input`)."""
        self._named.add(_real(path))

    def may_write(self, path: str) -> bool:
        """Whether ``path`` is a declared output (or its companion), or lies in a declared output folder."""
        real = _real(path)
        for role, named in self.paths:
            if not role.writes:
                continue
            if role.folder or role.name == "program output":
                if _under(real, _real(named)):
                    return True
            elif real in map(_real, role.files(named) + role.companion_files(named)):
                return True
        return False

    def outputs(self) -> list[str]:
        """The files the run writes (companions included), not folders."""
        return [file for role, path in self.paths if role.writes and not role.folder
                for file in role.files(path) + role.companion_files(path)]

    # -- entering and leaving ------------------------------------------------------------------------

    def __enter__(self) -> "Job":
        self._check_stdout()
        outer = declared.innermost()
        if outer is not None:
            self._check_covered_by(outer)
            declared.enter(self)
            return self
        self._outer = True
        try:
            self._check_inputs()
            if os.environ.get("RANK", "0") == "0":  # a torchrun process other than rank 0 writes nothing
                self._check_outputs()
                self._prepare_outputs()
        except BaseException:
            self._clean_up(failed=True)
            raise
        if threading.current_thread() is threading.main_thread():
            record_signal(None)
            self._signals = {sig: signal.signal(sig, interrupting) for sig in (signal.SIGINT, signal.SIGTERM)}
        declared.enter(self)
        return self

    def __exit__(self, kind, error, traceback) -> None:
        declared.leave(self)
        if not self._outer:
            return
        for sig, handler in self._signals.items():
            signal.signal(sig, handler)
        self._clean_up(failed=kind is not None)
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            raise Interrupted(self._interrupted()) from None

    def _check_covered_by(self, outer: declared.Declared) -> None:
        for role, path in self.paths:
            files = role.files(path) if not role.folder else [path]
            covered = outer.may_write if role.writes else outer.may_read
            missing = [file for file in files if not covered(file)]
            if missing:
                raise UndeclaredFileError(f"{', '.join(missing)} ({role.name}) is not declared by the run that "
                                          f"calls it: a bug, please report it")

    # -- the checks ----------------------------------------------------------------------------------

    def _check_stdout(self) -> None:
        if len(self._stdout) > 1:
            names = ", ".join(self._stdout[:-1]) + f" and {self._stdout[-1]}"
            two = len(self._stdout) == 2
            raise MosesRNNError(f"{names} are {'both' if two else 'all'} '-': only one output can go to "
                                f"stdout (their lines would interleave); give {'one' if two else 'all but one'} of "
                                "them a file")

    def _check_inputs(self) -> None:
        for role, path in self.paths:
            if not role.reads:
                continue
            if not os.path.exists(path):
                raise FileNotFoundError(f"{path}: no such {'folder' if role.folder else 'file'}")
            if role.folder and not os.path.isdir(path):
                raise MosesRNNError(f"{path} is a file, not a folder")
            if not role.folder and os.path.isdir(path):
                raise MosesRNNError(f"{path} is a folder, not a file" + (
                    " (model files are the best.pt or last.pt inside a model folder)" if role.model_kind else ""))

    def _check_outputs(self) -> None:
        inputs = [(file, path) for role, path in self.paths if role.reads
                  for file in [path, *role.companion_files(path)]]  # (a file read, the input it goes with)
        named: dict[str, str] = {}
        for role, path in self.paths:
            if not role.writes:
                continue
            for output in (role.files(path) + role.companion_files(path)) if not role.folder else [path]:
                real = _real(output)
                if real in named and not is_special_file(output):
                    raise MosesRNNError(f"{output} is named as two outputs ({named[real]} and {output}): give each "
                                        f"its own")
                named[real] = output
                if not role.folder and role.name != "program output" and os.path.isdir(output):
                    raise MosesRNNError(f"{output} is a folder: give the output a file name")
                self._check_not_an_input(output, inputs)
                if role.keeps and os.path.exists(output) and not is_special_file(output):
                    written = "" if output == path else f" (written with {path})"
                    raise MosesRNNError(f"{output}{written} exists: give another name, or --force to replace it")
            for name in role.inside:
                self._check_not_an_input(os.path.join(path, name), inputs, inside=path)

    @staticmethod
    def _check_not_an_input(output: str, inputs: list[tuple[str, str]], inside: str | None = None) -> None:
        if not os.path.exists(output) or is_special_file(output):
            return
        real = _real(output)
        for source, owner in inputs:
            if not os.path.exists(source):
                continue
            if os.path.samefile(source, output) or (inside and _under(_real(source), real)):
                if inside:
                    raise MosesRNNError(f"{source} is {output}, which this run writes in {inside}: give that input "
                                        f"from somewhere else")
                if source != owner:  # a companion: a table's sidecar
                    also = "" if source == output else f" ({source})"
                    raise MosesRNNError(f"{output}{also} is read with the input {owner}: writing it would destroy "
                                        f"it; choose another output")
                also = "" if source == output else f" {source}"
                raise MosesRNNError(f"{output} is the input{also}: writing it would destroy it; choose another output")

    def _prepare_outputs(self) -> None:
        for role, path in self.paths:
            if not role.writes:
                continue
            if role.folder:
                self._make_folder(path)
                self._lock(OutputLock(path, folder=True))
                continue
            files = role.files(path)
            self._existed[files[0]] = os.path.exists(files[0])
            if not is_special_file(files[0]):
                self._make_parents(files[0])
                self._lock(OutputLock(files[0]))

    def _make_parents(self, path: str) -> None:
        """Make the missing folders above ``path``; refuse a path under a regular file."""
        folder, missing = os.path.dirname(os.path.abspath(path)), []
        while not os.path.exists(folder):
            missing.append(folder)
            folder = os.path.dirname(folder)
        if not os.path.isdir(folder):
            raise MosesRNNError(f"cannot write {path}: {folder} is a file, not a folder")
        for made in reversed(missing):
            os.mkdir(made)
            self._made.append(made)

    def _make_folder(self, folder: str) -> None:
        if os.path.exists(folder):
            if not os.path.isdir(folder):
                raise MosesRNNError(f"cannot write into {folder}: it is a file, not a folder")
            return
        self._make_parents(folder)
        os.mkdir(folder)
        self._made.append(os.path.abspath(folder))

    def _lock(self, lock: OutputLock) -> None:
        lock.acquire(command_line())
        self._locks.append(lock)

    # -- the end -------------------------------------------------------------------------------------

    def _clean_up(self, failed: bool) -> None:
        """Release the locks; remove the folders this job made that are still empty (a failed run, a dry run)."""
        for lock in reversed(self._locks):
            lock.release()
        self._locks.clear()
        for folder in reversed(self._made):
            with contextlib.suppress(OSError):  # not empty: it holds work worth keeping
                os.rmdir(folder)
        self._made.clear()

    def _interrupted(self) -> str:
        outputs = [path for path in self._existed if not is_special_file(path)]
        if not outputs:
            return "interrupted"
        states = [f"{path} {'left as it was' if self._existed[path] else 'not written'}" for path in outputs]
        return f"interrupted: {', '.join(states)}"


def declares(**roles: Role | Callable[[Any], list[tuple[Role, str]]]):
    """Run the decorated function inside a :class:`Job` declaring its path arguments by role.

    ``roles`` maps argument names to a :class:`~mosesrnn.io.roles.Role`, or to a function that
    turns the argument into ``(role, path)`` pairs (an options object naming model files).
    The roles are kept as the function's ``declared_roles``, which the tests walk.
    """
    def decorate(function):
        signature = inspect.signature(function)
        unknown = set(roles) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{function.__name__} has no argument {', '.join(sorted(unknown))}")

        @functools.wraps(function)
        def run(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            paths = [pair for name, role in roles.items()
                     for pair in (role.named(name).declare(bound.arguments[name]) if isinstance(role, Role)
                                  else role(bound.arguments[name]))]
            with Job(paths):
                return function(*args, **kwargs)

        run.declared_roles = roles
        return run

    return decorate
