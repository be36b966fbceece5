"""Rebuild a binarized phrase table after feature columns were appended.

A binarized table stores its number of scores, so after appending columns it must be rebuilt
from the scored text table (``shared/docs/moses.md``):

- PhraseDictionaryCompact reads ``X.minphr``, built by
  ``processPhraseTableMin -in T.gz -out X -nscores N -threads K`` (the default ``-nscores`` is 4,
  so it must always be given);
- PhraseDictionaryOnDisk reads a folder built by ``CreateOnDiskPt 1 1 N 100 2 T.gz folder``
  (one source and one target factor, N scores, table limit 100, sorted by score 2, p(e|f)).

N is counted from the first line of the text table.
"""
from __future__ import annotations

from dataclasses import dataclass

from mosesrnn.formats.phrase_table import count_scores

from .tools import find_program, missing_program_error, run_command

__all__ = ["FORMATS", "BINARY_FORMATS", "BinarizeResult", "default_output", "moses_table_path",
           "binarize_command", "binarize_table"]

FORMATS = {"compact": "processPhraseTableMin", "ondisk": "CreateOnDiskPt"}
BINARY_FORMATS = {"PhraseDictionaryCompact": "compact", "PhraseDictionaryOnDisk": "ondisk"}
_SUFFIXES = {"compact": ".minphr", "ondisk": ".ondisk"}


@dataclass(frozen=True)
class BinarizeResult:
    """The command that builds (or, in a dry run, would build) ``output`` with ``num_scores`` scores."""

    command: tuple[str, ...]
    output: str
    num_scores: int
    ran: bool


def default_output(table: str, fmt: str) -> str:
    """Where the binarized table goes by default: ``T.gz`` gives ``T.minphr`` or ``T.ondisk``."""
    stem = table[:-len(".gz")] if table.endswith(".gz") else table
    return stem + _SUFFIXES[fmt]


def moses_table_path(table: str, feature_type: str, binary: str | None = None) -> str:
    """The ``path=`` Moses needs for a ``feature_type`` table built from the text ``table``.

    A PhraseDictionaryMemory reads the text table itself; a compact or OnDisk one reads
    ``binary``, by default :func:`default_output`.
    """
    fmt = BINARY_FORMATS.get(feature_type)
    if fmt is None:
        return table
    return binary if binary is not None else default_output(table, fmt)


def binarize_command(program: str, fmt: str, table: str, output: str, num_scores: int,
                     threads: int = 1) -> list[str]:
    """The argument list that builds ``output`` from ``table`` with the Moses ``program``."""
    if fmt == "compact":
        prefix = output[:-len(".minphr")] if output.endswith(".minphr") else output  # it adds .minphr
        return [program, "-in", table, "-out", prefix, "-nscores", str(num_scores), "-threads", str(threads)]
    return [program, "1", "1", str(num_scores), "100", "2", table, output]


def binarize_table(table: str, fmt: str = "compact", output: str | None = None, threads: int = 1,
                   moses_bin: str | None = None, dry_run: bool = False) -> BinarizeResult:
    """Build the ``fmt`` (``compact`` or ``ondisk``) binarized form of the scored text ``table``.

    The program is looked up in ``moses_bin``, ``$MOSES_BIN``, then ``PATH``; when it is missing,
    :class:`~moses_integration.tools.MosesToolError` names it and gives the exact command. With
    ``dry_run`` nothing runs, and a missing program shows under its bare name.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    num_scores = count_scores(table)
    output = output or default_output(table, fmt)
    if fmt == "compact" and not output.endswith(".minphr"):
        output += ".minphr"  # what processPhraseTableMin writes, and what moses.ini must name
    name = FORMATS[fmt]
    program = find_program(name, moses_bin)
    command = tuple(binarize_command(program or name, fmt, table, output, num_scores, threads))
    if not dry_run:
        if program is None:
            raise missing_program_error(name, moses_bin, command=command)
        run_command(command)
    return BinarizeResult(command, output, num_scores, ran=not dry_run)
