"""The path options of the commands, each with its role for the run's job (:mod:`mosesrnn.io.roles`).

Every option or argument that names a file or folder is one of these types; a
:class:`~mosesrnn.cli.common.Command` builds its :class:`~mosesrnn.io.job.Job` from them before
the command's body runs, so a command cannot name a file without declaring what it does with it
(``tests/test_hostile.py`` walks every command's parameters to keep it so).
"""
from __future__ import annotations

import click

from ..io.roles import (
    Role,
    input_file,
    input_folder,
    kept_output,
    model_file,
    named_only,
    output_file,
    output_folder,
    output_prefix,
    program_output,
)
from ..models import ENCODER_DECODER

__all__ = ["PathParam", "INPUT", "INPUT_FOLDER", "MODEL", "ANY_MODEL", "OUTPUT", "PROGRAM_OUTPUT", "PLACE",
           "SCORED_TABLE", "RUN_FOLDER_FILES", "MODEL_FOLDER_FILES", "input_with", "output_with", "kept_output_with",
           "output_folder_writing", "output_prefix_of", "model_of"]

#: What every family's trainer writes inside its output folder (no input may be one of these).
RUN_FOLDER_FILES = ("best.pt", "last.pt", "state.pt", "train.jsonl", "loss.png")
#: What `train` writes there: the encoder-decoder keeps its vocabularies beside its run.
MODEL_FOLDER_FILES = (*RUN_FOLDER_FILES, "vocab")


class PathParam(click.Path):
    """A path and the role the run's job gives it."""

    def __init__(self, role: Role, allow_dash: bool = False):
        either = role.name in ("program output", "named only")
        super().__init__(dir_okay=role.folder or either, file_okay=not role.folder or either, allow_dash=allow_dash)
        self.role = role


#: A file read (``-``: stdin).
INPUT = PathParam(input_file(), allow_dash=True)
#: A folder whose files are read.
INPUT_FOLDER = PathParam(input_folder())
#: A model file of any kind (the command reads its kind).
ANY_MODEL = PathParam(model_file(None))
#: A file written whole or not at all (``-``: stdout).
OUTPUT = PathParam(output_file(), allow_dash=True)
#: A file or folder a Moses program writes.
PROGRAM_OUTPUT = PathParam(program_output())
#: A path named, neither read nor written: where Moses' programs are, where relative paths start, a file a
#: moses.ini will name.
PLACE = PathParam(named_only())
#: A scored table: its sidecar (.json) and, while it is written, its resumable .part and progress record.
SCORED_TABLE = PathParam(output_file(".json", ".part", ".progress.json"), allow_dash=True)


def model_of(kind: str) -> PathParam:
    """A model file of ``kind`` (:data:`~mosesrnn.models.MODELS`)."""
    return PathParam(model_file(kind))


#: An RNN Encoder-Decoder model file (the main job's).
MODEL = model_of(ENCODER_DECODER)


def input_with(*companions: str) -> PathParam:
    """A file read (``-``: stdin), and the files beside it (PATH + each suffix) it may read."""
    return PathParam(input_file(*companions), allow_dash=True)


def output_with(*companions: str) -> PathParam:
    """A file written whole or not at all (``-``: stdout), and the files written beside it."""
    return PathParam(output_file(*companions), allow_dash=True)


def kept_output_with(*companions: str) -> PathParam:
    """A file written, and the files beside it, where none of them exists yet unless ``--force`` is given."""
    return PathParam(kept_output(*companions))


def output_folder_writing(*names: str) -> PathParam:
    """A folder written into; ``names``: what is written there (no input may be one of them)."""
    return PathParam(output_folder(*names))


def output_prefix_of(*suffixes: str) -> PathParam:
    """A prefix of the files written (PREFIX + each suffix)."""
    return PathParam(output_prefix(*suffixes))
