"""The one base of the errors a user can fix, and what the command line says of every other error.

Every error that is the user's to fix — a bad line in a file, a damaged model file, a refused output, a
lock another run holds, two options that conflict, a run that cannot be resumed, a MERT that cannot be set
up — is a :class:`MosesRNNError`. The commands print it (and an ``OSError``) as one line and exit with
status 1. Any other exception is a bug: a plain ``ValueError`` from numpy or torch, a ``TypeError``, ... keep
their traceback, followed by :data:`BUG_NOTE`.
"""
from __future__ import annotations

__all__ = ["MosesRNNError", "BUG_NOTE"]

#: The line the command line prints after the traceback of an error that is not the user's (a bug).
BUG_NOTE = "mosesrnn: this is a bug in mosesrnn, not in your input: please report it with the traceback above"


class MosesRNNError(ValueError):
    """An error the user can fix: bad input, a refused file or option, a run that cannot go on as asked.

    Its message is complete on one line (``PATH:LINE: problem``, ``OPTION: why, and what to do``). It is
    a ``ValueError``, so that code catching ``ValueError`` keeps catching it.
    """
