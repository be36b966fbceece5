"""The one way in and out of every command: a :class:`Job` declares a run's inputs and outputs.

Every command runs its work inside ``with Job(inputs=..., outputs=..., folders=...)``. Before
any work the job checks what a careful tool checks, for every command alike:

- every input exists;
- no output is one of the inputs (through any link), and no output is named twice;
- the folder of every output exists or can be made (it is made, and removed again if the run
  fails and leaves it empty), and nothing on the way is a regular file;
- no other run is writing an output: each output is locked (:mod:`mosesrnn.locks`).

Under torchrun the processes of one run share its outputs: only rank 0 (which writes them) checks
and locks them.

While the job runs, Ctrl-C and SIGTERM (a scheduler's preemption, ``kill``) raise
KeyboardInterrupt, also in a process started with SIGINT ignored (a script's background job);
an interruption leaves the job as :class:`Interrupted`, whose message says what was kept (exit
status 130). Outputs themselves are written whole or not at all by the atomic writers
(:func:`mosesrnn.formats.compressed.atomic_output`, :func:`~mosesrnn.formats.compressed.atomic_text_output`,
:func:`mosesrnn.files.atomic_file`); ``-`` (stdout) and special files (``/dev/null``, a FIFO)
are written directly and are neither locked nor checked.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Iterable

from .files import is_special_file
from .locks import OutputLock, command_line

__all__ = ["Job", "Interrupted"]


class Interrupted(Exception):
    """A run stopped by Ctrl-C or SIGTERM; the message says what was kept and how to go on."""


class Job:
    """The inputs and outputs of one run, checked, locked and cleaned up (see the module docstring).

    ``inputs``: files or folders read; ``outputs``: files written; ``folders``: folders the run
    writes into (a model directory, a working directory). None entries are skipped, so optional
    options can be passed as they are. A command that stops gracefully on its own (``train``
    saves first) installs its own signal handlers inside the job, and restores the job's after.
    """

    def __init__(self, inputs: Iterable[str | None] = (), outputs: Iterable[str | None] = (),
                 folders: Iterable[str | None] = ()):
        self.inputs = [path for path in inputs if path not in (None, "-")]
        self.outputs = [path for path in outputs if path not in (None, "-")]
        self.folders = [path for path in folders if path is not None]
        self._made: list[str] = []
        self._locks: list[OutputLock] = []
        self._existed: dict[str, bool] = {}
        self._signals: dict = {}

    def __enter__(self) -> "Job":
        try:
            self._check_inputs()
            if os.environ.get("RANK", "0") != "0":  # a torchrun process other than rank 0: it writes nothing
                return self
            self._check_outputs()
            for path in self.outputs:
                self._existed[path] = os.path.exists(path)
                if not is_special_file(path):
                    self._make_parents(path)
                    self._lock(OutputLock(path))
            for folder in self.folders:
                self._make_folder(folder)
                self._lock(OutputLock(folder, folder=True))
        except BaseException:
            self._clean_up(failed=True)
            raise
        if threading.current_thread() is threading.main_thread():
            self._signals = {sig: signal.signal(sig, signal.default_int_handler)
                             for sig in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, kind, error, traceback) -> None:
        for sig, handler in self._signals.items():
            signal.signal(sig, handler)
        self._clean_up(failed=kind is not None)
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            raise Interrupted(self._interrupted()) from None

    # -- the checks --------------------------------------------------------------------------------

    def _check_inputs(self) -> None:
        for path in self.inputs:
            if not os.path.exists(path):
                raise FileNotFoundError(f"{path}: no such file or folder")

    def _check_outputs(self) -> None:
        named: dict[str, str] = {}
        for path in self.outputs + self.folders:
            real = os.path.realpath(path)
            if real in named and not is_special_file(path):
                raise ValueError(f"{path} is named as two outputs ({named[real]} and {path}): give each its own")
            named[real] = path
            if path in self.outputs and os.path.isdir(path):
                raise ValueError(f"{path} is a folder: give the output a file name")
            if not os.path.exists(path) or is_special_file(path):
                continue
            for source in self.inputs:
                if os.path.samefile(source, path):
                    also = "" if source == path else f" {source}"
                    raise ValueError(f"{path} is the input{also}: writing it would destroy it; choose another output")

    def _make_parents(self, path: str) -> None:
        """Make the missing folders above ``path``; refuse a path under a regular file."""
        folder, missing = os.path.dirname(os.path.abspath(path)), []
        while not os.path.exists(folder):
            missing.append(folder)
            folder = os.path.dirname(folder)
        if not os.path.isdir(folder):
            raise ValueError(f"cannot write {path}: {folder} is a file, not a folder")
        for made in reversed(missing):
            os.mkdir(made)
            self._made.append(made)

    def _make_folder(self, folder: str) -> None:
        if os.path.exists(folder):
            if not os.path.isdir(folder):
                raise ValueError(f"cannot write into {folder}: it is a file, not a folder")
            return
        self._make_parents(folder)
        os.mkdir(folder)
        self._made.append(os.path.abspath(folder))

    def _lock(self, lock: OutputLock) -> None:
        lock.acquire(command_line())
        self._locks.append(lock)

    # -- the end -----------------------------------------------------------------------------------

    def _clean_up(self, failed: bool) -> None:
        """Release the locks; after a failure, remove the folders this job made, if they are empty."""
        for lock in reversed(self._locks):
            lock.release()
        self._locks.clear()
        if failed:
            for folder in reversed(self._made):
                with contextlib.suppress(OSError):  # not empty: it holds work worth keeping
                    os.rmdir(folder)
        self._made.clear()

    def _interrupted(self) -> str:
        untouched = [path for path in self.outputs if not is_special_file(path)]
        if not untouched:
            return "interrupted"
        states = [f"{path} {'left as it was' if self._existed.get(path) else 'not written'}" for path in untouched]
        return f"interrupted: {', '.join(states)}"
