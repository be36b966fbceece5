"""What a run does with each path it names: the roles a :class:`~mosesrnn.io.job.Job` is declared with.

A command's options and an API function's arguments carry these roles (the command line through
:mod:`mosesrnn.cli.paths`, the API through :func:`~mosesrnn.io.job.declares`), so the job learns
every file a run reads and writes from the run's own signature, and the readers and writers of
this floor refuse a path that no role declared.

========================  =====================================================================
role                      what the job does with it
========================  =====================================================================
``input_file()``          must exist and be a file; no output may be it
``input_folder()``        must exist and be a folder; every file under it may be read
``model_file(kind)``      an input file holding a model of ``kind``, or of any kind for None (read by the
                          one model reader)
``output_file()``         written whole or not at all; made folders, locked, never an input
``kept_output()``         an output file that, and whose companions, must not exist yet unless the run is told
                          to replace them (``--force``: :meth:`Role.replacing`)
``output_folder(names)``  made and locked; ``names`` are what the run writes inside, so no input
                          may be one of them; every file under it may be read and written
``output_prefix(sfx)``    the files PREFIX + each suffix are outputs
``program_output()``      written by another program (Moses): a file, or a folder it rewrites
``named_only()``          named but neither read nor written by the run: a folder of Moses'
                          programs, the folder a moses.ini's relative paths are resolved against
========================  =====================================================================

``companions``: files named PATH + suffix that go with a path (a scored table's ``.json``
sidecar, its resumable ``.part``); an input's companions may be read when they exist and are
inputs in every sense (no output may be one), an output's are outputs too, checked as it is.

``label``: what the run calls the path (``--word-scores``, ``TABLE``), for messages; a command's
options and an API function's arguments give it (:meth:`Role.named`), and roles compare equal
whatever their label.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable

from ..models import MODEL_KINDS

__all__ = ["Role", "input_file", "input_folder", "model_file", "output_file", "kept_output", "output_folder",
           "output_prefix", "program_output", "named_only"]


@dataclass(frozen=True)
class Role:
    """What a run does with a path (see the module docstring); made by the functions below."""

    name: str
    reads: bool = False
    writes: bool = False
    folder: bool = False
    companions: tuple[str, ...] = ()
    inside: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    model_kind: str | None = None
    keeps: bool = False
    label: str = field(default="", compare=False)

    def named(self, label: str) -> "Role":
        """This role, for the path the run calls ``label`` (an option, an argument)."""
        return replace(self, label=label)

    def replacing(self) -> "Role":
        """This role, told to replace the existing files it would otherwise keep (``--force``)."""
        return replace(self, keeps=False)

    def files(self, path: str) -> list[str]:
        """The files of ``path`` in this role: the path itself (or, for a prefix, PREFIX + each suffix)."""
        return [path + suffix for suffix in self.suffixes] if self.suffixes else [path]

    def companion_files(self, path: str) -> list[str]:
        """PATH + each companion suffix."""
        return [path + suffix for suffix in self.companions]

    def declare(self, value: str | Iterable[str] | None) -> list[tuple["Role", str]]:
        """``(role, path)`` for a value as a command or function receives it: a path, several, or None."""
        if value is None:
            return []
        if isinstance(value, str):
            return [(self, value)]
        return [(self, path) for path in value if path is not None]


def input_file(*companions: str) -> Role:
    """A file the run reads (``-``: stdin), and the companions it may read beside it."""
    return Role("input", reads=True, companions=companions)


def input_folder() -> Role:
    """A folder whose files the run reads."""
    return Role("input folder", reads=True, folder=True)


def model_file(kind: str | None) -> Role:
    """A model file of ``kind`` (:data:`~mosesrnn.models.MODEL_KINDS`; None: of any kind) the run reads."""
    if kind is not None and kind not in MODEL_KINDS:
        raise ValueError(f"unknown model kind {kind!r}")
    return Role("model", reads=True, model_kind=kind)


def output_file(*companions: str) -> Role:
    """A file the run writes (``-``: stdout), and the companions written with it."""
    return Role("output", writes=True, companions=companions)


def kept_output(*companions: str) -> Role:
    """A file the run writes, and its companions, where none of them exists yet (an existing one is refused unless
    the run is told to replace it: :meth:`Role.replacing`)."""
    return Role("output", writes=True, companions=companions, keeps=True)


def output_folder(*inside: str) -> Role:
    """A folder the run writes into; ``inside``: the names it writes there."""
    return Role("output folder", writes=True, folder=True, inside=inside)


def output_prefix(*suffixes: str) -> Role:
    """A prefix: the run writes PREFIX + each suffix."""
    return Role("output prefix", writes=True, suffixes=suffixes)


def program_output() -> Role:
    """A file or folder another program (Moses) writes for the run."""
    return Role("program output", writes=True)


def named_only() -> Role:
    """A path the run names but neither reads nor writes itself (programs to run, a folder to resolve against)."""
    return Role("named only")
