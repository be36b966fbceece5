"""The sidecar of a scored table: ``TABLE.json``, how ``mosesrnn score`` made ``TABLE`` and which lines it holds.

``mosesrnn score`` writes it beside every table (or shard) it writes, ``mosesrnn merge`` beside the
joined table, ``mosesrnn prune`` beside the pruned one; ``merge`` reads it to check the shards,
``moses-ini`` to name the new columns, ``report`` and ``prune`` to find the RNN's column, ``score``
to warn before scoring a table twice. One reader (:func:`read_sidecar`) and one writer
(:func:`write_sidecar`) for all of them::

    {"signature": "mosesrnn:0.3.0|features:rnn(...),unk(...)|encoding:utf-8",
     "mosesrnn_version": "0.3.0", "input": "/abs/phrase-table.gz", "input_bytes": 56776350,
     "shard": "1/1", "first_line": 1, "last_line": 6229, "lines": 6229, "total_lines": 6229,
     "bytes": 274546, "appended_columns": ["rnn", "unk"], "features": ["rnn(...)", "unk(...)"],
     "identity": {"scores": 6, "head_bytes": 65536, "head_sha256": "9f2c..."}}

A sidecar is tied to its table: ``identity`` is what identifies the table cheaply, computed by
:func:`write_sidecar` from the table itself once it is whole: the number of scores on its first line
and the SHA-256 of the first :data:`HEAD_BYTES` bytes of its text (decompressed, so the same however
the table was compressed, and for a table whose scoring stopped and resumed). :func:`read_table_sidecar`
is the reader for a command that trusts the sidecar about its table (which column is the RNN's): it
refuses, in one line naming both files, a sidecar that describes another table (:class:`SidecarMismatch`).
A sidecar written before ``identity`` existed is checked by its ``bytes``, the table's size, which every
sidecar records.

Line numbers are 1-based and inclusive, as every message of mosesrnn gives them (an empty shard
has ``last_line = first_line - 1``). ``merged_from`` lists the parts of a merged table; ``pruned``
says how ``mosesrnn prune`` made a table from a larger one (its ranking, selection and counts), and
then the table may carry no appended columns (a pruned table that was never scored). Files
written before version 0.3 held the exclusive ``end_line`` instead of ``last_line``; they read the
same.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
from dataclasses import asdict, dataclass, fields

from ..errors import MosesRNNError
from ..io.compressed import atomic_output, open_input
from ..io.json_file import read_json
from .phrase_table import read_entries

__all__ = ["SUFFIX", "HEAD_BYTES", "Sidecar", "SidecarError", "SidecarMismatch", "sidecar_path", "read_sidecar",
           "read_table_sidecar", "check_sidecar", "table_identity", "write_sidecar"]

SUFFIX = ".json"
#: How much of a table's text (decompressed) the digest of its ``identity`` covers: this much, or all of it.
HEAD_BYTES = 1 << 16
_OPTIONAL = ("merged_from", "pruned", "identity")
#: The types of the fields that commands compute with (a damaged record fails here, not in the arithmetic).
_TYPES = {"signature": str, "shard": str, "first_line": int, "last_line": int, "lines": int, "total_lines": int,
          "bytes": int, "input_bytes": (int, type(None)), "features": list}


class SidecarError(MosesRNNError):
    """A sidecar that is not the record ``mosesrnn score`` writes; the message names it."""


class SidecarMismatch(MosesRNNError):
    """A sidecar that describes another table than the one beside it; the message names both and what differs."""


@dataclass(frozen=True)
class Sidecar:
    """What a scored table's sidecar records (see the module docstring)."""

    signature: str
    mosesrnn_version: str
    input: str
    input_bytes: int | None
    shard: str
    first_line: int
    last_line: int
    lines: int
    total_lines: int
    bytes: int
    appended_columns: tuple[str, ...]
    features: tuple[str, ...]
    merged_from: tuple[str, ...] | None = None
    pruned: dict | None = None
    identity: dict | None = None  # computed by write_sidecar from the table; None in a sidecar written before


def sidecar_path(table: str) -> str:
    """Where the sidecar of ``table`` lives: ``TABLE.json``."""
    return table + SUFFIX


def read_sidecar(table: str) -> Sidecar | None:
    """The sidecar of ``table``, or None when it has none; raises :class:`SidecarError` for a file that
    is not one."""
    path = sidecar_path(table)
    try:
        record = read_json(path, "the JSON record `mosesrnn score` writes")
    except FileNotFoundError:
        return None
    except ValueError as error:
        raise SidecarError(str(error)) from None
    if not isinstance(record, dict):
        raise SidecarError(f"{path}: not the JSON record `mosesrnn score` writes (not an object)")
    if "last_line" not in record and isinstance(record.get("end_line"), int):
        record["last_line"] = record.pop("end_line") - 1
    names = [f.name for f in fields(Sidecar)]
    missing = [name for name in names if name not in record and name not in _OPTIONAL]
    if missing:
        raise SidecarError(f"{path}: not the JSON record `mosesrnn score` writes (no {', '.join(missing)})")
    mistyped = [name for name, kinds in _TYPES.items()
                if not isinstance(record[name], kinds) or isinstance(record[name], bool)]
    if mistyped:
        raise SidecarError(f"{path}: not the JSON record `mosesrnn score` writes ({', '.join(mistyped)} of the "
                           f"wrong type)")
    columns = record["appended_columns"]
    if not isinstance(columns, list) or not (columns or record.get("pruned")) or \
            not all(isinstance(c, str) for c in columns):
        raise SidecarError(f"{path}: no list of appended_columns")
    identity = record.get("identity")
    if identity is not None and not (isinstance(identity, dict) and isinstance(identity.get("head_sha256"), str)
                                     and isinstance(identity.get("scores"), (int, type(None)))):
        raise SidecarError(f"{path}: its identity is not the record `mosesrnn score` writes")
    values = {name: record.get(name) for name in names}
    for name in ("appended_columns", "features", "merged_from"):
        if values[name] is not None:
            values[name] = tuple(values[name])
    return Sidecar(**values)


def read_table_sidecar(table: str, encoding: str = "utf-8") -> Sidecar | None:
    """The sidecar of ``table`` checked against it (:func:`check_sidecar`), or None when it has none; raises
    :class:`SidecarError` for a file that is not one, :class:`SidecarMismatch` for one of another table."""
    sidecar = read_sidecar(table)
    if sidecar is not None:
        check_sidecar(table, sidecar, encoding)
    return sidecar


def check_sidecar(table: str, sidecar: Sidecar, encoding: str = "utf-8") -> None:
    """Raise :class:`SidecarMismatch` naming both files unless ``sidecar`` describes ``table``: the same scores
    a line and first bytes of text (its ``identity``), or, for a sidecar written before it had one, the same
    size. A table whose first lines are damaged raises its reader's ``FILE:LINE`` error instead (the table is
    what is wrong, not its sidecar)."""
    path = sidecar_path(table)
    advice = f"the sidecar of another table, or the table changed since: score it again, or remove {path}"
    if sidecar.identity is None:  # written before the identity: its size
        size = os.path.getsize(table)
        if size != sidecar.bytes:
            _read_lines(table, _head(table), encoding)
            raise SidecarMismatch(f"{path} describes a table of {sidecar.bytes} bytes, but {table} has {size} "
                                  f"({advice})")
        return
    head = _head(table)
    found, recorded = _identity(head), sidecar.identity
    if (found["scores"], found["head_sha256"]) == (recorded["scores"], recorded["head_sha256"]):
        return
    _read_lines(table, head, encoding)
    if found["scores"] != recorded["scores"]:
        raise SidecarMismatch(f"{path} describes a table of {_scores(recorded['scores'])}, but {table} has "
                              f"{_scores(found['scores'])} ({advice})")
    raise SidecarMismatch(f"{path} does not describe {table}: the table's first {found['head_bytes']} bytes of "
                          f"text differ from those it records ({advice})")


def _read_lines(table: str, head: bytes, encoding: str) -> None:
    """Read the lines of ``head`` as every command reads a table: a damaged one raises its ``FILE:LINE`` error."""
    with read_entries(table, encoding) as entries:
        for _ in itertools.islice(entries, head.count(b"\n") + 1):
            pass


def _scores(count: int | None) -> str:
    return "no line of scores" if count is None else f"{count} scores a line"


def table_identity(table: str) -> dict:
    """What identifies ``table`` cheaply: ``scores`` on its first line (None when it has no line with
    scores) and the SHA-256 of its first :data:`HEAD_BYTES` bytes of text, decompressed (``head_bytes``:
    how many there were)."""
    return _identity(_head(table))


def _head(table: str) -> bytes:
    """The first :data:`HEAD_BYTES` bytes of ``table``'s text (all of it, if shorter)."""
    head = b""
    with open_input(table) as stream:
        try:
            while len(head) < HEAD_BYTES and (block := stream.read(HEAD_BYTES - len(head))):
                head += block
        except (EOFError, OSError) as problem:
            if isinstance(problem, OSError) and problem.filename:
                raise
            raise MosesRNNError(f"{table}: cannot read compressed data: {problem}") from None
    return head


def _identity(head: bytes) -> dict:
    first, newline, _ = head.partition(b"\n")
    parts = first.split(b"|||")  # the scores are the third field; bytes, whatever the text's encoding
    whole = newline or len(head) < HEAD_BYTES
    scores = len(parts[2].split()) if whole and len(parts) >= 3 else None
    return {"scores": scores, "head_bytes": len(head), "head_sha256": hashlib.sha256(head).hexdigest()}


def write_sidecar(table: str, sidecar: Sidecar) -> None:
    """Write the sidecar of ``table`` (whole or not at all), with the ``identity`` of ``table`` as it is now."""
    sidecar = dataclasses.replace(sidecar, identity=table_identity(table))
    record = {name: list(value) if isinstance(value, tuple) else value for name, value in asdict(sidecar).items()
              if not (name in _OPTIONAL and value is None)}
    with atomic_output(sidecar_path(table)) as stream:
        stream.write((json.dumps(record, indent=2) + "\n").encode("utf-8"))
