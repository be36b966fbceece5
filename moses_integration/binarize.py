"""Rebuild a binarized phrase table after feature columns were appended.

A binarized table stores its number of scores, so after appending columns it must be rebuilt
from the scored text table (``shared/docs/moses.md``):

- PhraseDictionaryCompact reads ``X.minphr``, built by
  ``processPhraseTableMin -in T.gz -out X -nscores N -threads K -rankscore R`` (the default
  ``-nscores`` is 4, so it must always be given; ``-rankscore`` is the 0-based index of p(e|f),
  by which it ranks translations: without it, it warns for any table of nonstandard width);
- PhraseDictionaryOnDisk reads a folder built by ``CreateOnDiskPt 1 1 N 100 R T.gz folder``
  (one source and one target factor, N scores, table limit 100, sorted by score R).

N is counted from the first line of the text table. In a standard Moses table the scores are
p(f|e) lex(f|e) p(e|f) lex(e|f) [phrase penalty], so R is 2 by default.

processPhraseTableMin aborts ("wrong format") on a line without a fourth field, the word
alignment; the first line is checked before running, and ``add_empty_alignment`` binarizes a
temporary copy with an empty alignment field instead. Its default target-phrase encoding,
PREnc, codes target phrases through their alignment and aborts on an empty one ("Use -encoding
None", seen with mosesdecoder @ 34452895), so a table whose alignment is empty (added, or so on
its first line) is binarized with ``-encoding None``. A failed or interrupted run leaves no
partial output behind.
"""
from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass

from mosesrnn.errors import MosesRNNError
from mosesrnn.formats.phrase_table import PhraseEntry, PhraseTableError, format_line, read_entries
from mosesrnn.io.compressed import atomic_output

from .tools import MosesToolError, find_program, missing_program_error, run_command

__all__ = ["FORMATS", "BINARY_FORMATS", "BinarizeResult", "default_output", "binarized_path", "moses_table_path",
           "default_rankscore", "binarize_command", "with_empty_alignment", "write_with_alignment",
           "binarize_table"]

FORMATS = {"compact": "processPhraseTableMin", "ondisk": "CreateOnDiskPt"}
BINARY_FORMATS = {"PhraseDictionaryCompact": "compact", "PhraseDictionaryOnDisk": "ondisk"}
_SUFFIXES = {"compact": ".minphr", "ondisk": ".ondisk"}
#: Index of p(e|f) among the scores of a standard Moses table: p(f|e) lex(f|e) p(e|f) lex(e|f).
P_E_GIVEN_F = 2
#: processPhraseTableMin needs source ||| target ||| scores ||| alignment.
COMPACT_FIELDS = 4
#: processPhraseTableMin's encoding for tables without alignments (its default, PREnc, needs them).
NO_ALIGNMENT_ENCODING = "None"


@dataclass(frozen=True)
class BinarizeResult:
    """The command that builds (or, in a dry run, would build) ``output`` with ``num_scores`` scores.

    ``copy`` is the temporary table with an empty alignment field that the command reads (written
    before and removed after the run), or None when it reads the table itself. ``encoding`` is
    processPhraseTableMin's ``-encoding`` when one is passed (``None`` for empty alignments).
    """

    command: tuple[str, ...]
    output: str
    num_scores: int
    ran: bool
    rankscore: int = P_E_GIVEN_F
    copy: str | None = None
    encoding: str | None = None


def default_output(table: str, fmt: str) -> str:
    """Where the binarized table goes by default: ``T.gz`` gives ``T.minphr`` or ``T.ondisk``."""
    stem = table[:-len(".gz")] if table.endswith(".gz") else table
    return stem + _SUFFIXES[fmt]


def binarized_path(table: str, fmt: str, output: str | None = None) -> str:
    """What ``binarize`` writes: ``output`` (default :func:`default_output`), for ``compact`` with
    the ``.minphr`` that processPhraseTableMin adds and that moses.ini must name."""
    output = output or default_output(table, fmt)
    return output if fmt != "compact" or output.endswith(".minphr") else output + ".minphr"


def moses_table_path(table: str, feature_type: str, binary: str | None = None) -> str:
    """The ``path=`` Moses needs for a ``feature_type`` table built from the text ``table``.

    A PhraseDictionaryMemory reads the text table itself; a compact or OnDisk one reads
    ``binary``, by default :func:`default_output`.
    """
    fmt = BINARY_FORMATS.get(feature_type)
    if fmt is None:
        return table
    return binary if binary is not None else default_output(table, fmt)


def default_rankscore(num_scores: int) -> int:
    """The score to rank by: p(e|f) (index 2) in a table with the four standard scores or more,
    else the first."""
    return P_E_GIVEN_F if num_scores >= 4 else 0


def binarize_command(program: str, fmt: str, table: str, output: str, num_scores: int,
                     threads: int = 1, rankscore: int = P_E_GIVEN_F, encoding: str | None = None) -> list[str]:
    """The argument list that builds ``output`` from ``table`` with the Moses ``program``
    (``encoding``: processPhraseTableMin's ``-encoding``, left at its default when None)."""
    if fmt == "compact":
        prefix = output[:-len(".minphr")] if output.endswith(".minphr") else output  # it adds .minphr
        return [program, "-in", table, "-out", prefix, "-nscores", str(num_scores), "-threads", str(threads),
                "-rankscore", str(rankscore)] + (["-encoding", encoding] if encoding else [])
    return [program, "1", "1", str(num_scores), "100", str(rankscore), table, output]


def with_empty_alignment(entry: PhraseEntry) -> PhraseEntry:
    """``entry`` with an empty alignment field after its scores, if it has no fourth field:
    ``a ||| b ||| 0.3`` becomes ``a ||| b ||| 0.3 |||``, as train-model.perl ends its lines."""
    if len(entry.fields) >= COMPACT_FIELDS:
        return entry
    fields = (*entry.fields[:2], entry.fields[2].rstrip(" \t") + " ", "")
    return PhraseEntry(entry.line_no, fields, entry.scores, entry.ending)


def write_with_alignment(table: str, copy: str) -> None:
    """Stream ``table`` into ``copy`` (gzipped if ``.gz``), adding an empty alignment field to
    every line without one; all other bytes are kept."""
    with atomic_output(copy) as out, read_entries(table) as entries:
        for entry in entries:
            out.write(format_line(with_empty_alignment(entry)).encode("utf-8"))


def _first_entry(table: str) -> PhraseEntry:
    with read_entries(table) as entries:
        first = next(entries, None)
    if first is None:
        raise PhraseTableError(table, 1, "the phrase table is empty")
    return first


def _check_fields(first: PhraseEntry, table: str) -> None:
    if len(first.fields) < COMPACT_FIELDS:
        raise PhraseTableError(
            table, first.line_no, f"{len(first.fields)} fields (source ||| target ||| scores), but "
            "processPhraseTableMin needs a 4th, the word alignment, and aborts without it: pass "
            "--add-empty-alignment to binarize a copy with an empty alignment field")


def _check_rankscore(rankscore: int, num_scores: int, table: str) -> None:
    if not 0 <= rankscore < num_scores:
        raise MosesRNNError(f"--rankscore {rankscore} is not a score of {table}: it has {num_scores} "
                            f"(indices 0-{num_scores - 1})")


def _signature(path: str) -> tuple | None:
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_mtime_ns, status.st_size


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _run(command: tuple[str, ...], output: str, copy: str | None, table: str) -> None:
    """Run ``command``; on any failure remove what it wrote to ``output``; always remove ``copy``."""
    before = _signature(output)
    try:
        if copy is not None:
            write_with_alignment(table, copy)
        run_command(command)
    except BaseException as error:
        removed = _signature(output) != before
        if removed:
            _remove(output)
        if isinstance(error, MosesToolError) and removed:
            raise MosesToolError(f"{error}\n(removed the partial output {output})") from None
        raise
    finally:
        if copy is not None:
            _remove(copy)


def binarize_table(table: str, fmt: str = "compact", output: str | None = None, threads: int = 1,
                   moses_bin: str | None = None, dry_run: bool = False, rankscore: int | None = None,
                   add_empty_alignment: bool = False) -> BinarizeResult:
    """Build the ``fmt`` (``compact`` or ``ondisk``) binarized form of the scored text ``table``.

    The program is looked up in ``moses_bin``, ``$MOSES_BIN``, then ``PATH``; when it is missing,
    :class:`~moses_integration.tools.MosesToolError` names it and gives the exact command. With
    ``dry_run`` nothing runs, and a missing program shows under its bare name. ``rankscore`` is
    the 0-based index of p(e|f) (default :func:`default_rankscore`). For the compact format, a
    first line without an alignment field raises :class:`PhraseTableError` unless
    ``add_empty_alignment``, which binarizes a temporary copy (``OUT.with-alignment.gz`` beside
    the output) with an empty alignment field; an empty alignment (added, or on the first line)
    is binarized with ``-encoding None``. A failed run removes its partial output.
    """
    if fmt not in FORMATS:
        raise MosesRNNError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if threads < 1:
        raise MosesRNNError(f"threads must be at least 1, got {threads}")
    first = _first_entry(table)
    num_scores = len(first.scores)
    rankscore = default_rankscore(num_scores) if rankscore is None else rankscore
    _check_rankscore(rankscore, num_scores, table)
    output = binarized_path(table, fmt, output)
    copy = None
    if len(first.fields) < COMPACT_FIELDS and add_empty_alignment:
        copy = (output[:-len(".minphr")] if fmt == "compact" else output) + ".with-alignment.gz"
    elif fmt == "compact":
        _check_fields(first, table)
    # processPhraseTableMin's own test: an alignment field of at most one character is empty
    empty_alignment = copy is not None or (len(first.fields) >= COMPACT_FIELDS and len(first.fields[3].strip()) <= 1)
    encoding = NO_ALIGNMENT_ENCODING if fmt == "compact" and empty_alignment else None
    name = FORMATS[fmt]
    program = find_program(name, moses_bin)
    command = tuple(binarize_command(program or name, fmt, copy or table, output, num_scores, threads,
                                     rankscore, encoding))
    if not dry_run:
        if program is None:
            raise missing_program_error(name, moses_bin, command=command)
        _run(command, output, copy, table)
    return BinarizeResult(command, output, num_scores, not dry_run, rankscore, copy, encoding)
