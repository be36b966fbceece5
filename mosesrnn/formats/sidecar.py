"""The sidecar of a scored table: ``TABLE.json``, how ``mosesrnn score`` made ``TABLE`` and which lines it holds.

``mosesrnn score`` writes it beside every table (or shard) it writes, ``mosesrnn merge`` beside the
joined table; ``merge`` reads it to check the shards, ``moses-ini`` to name the new columns,
``report`` to find the RNN's column, ``score`` to warn before scoring a table twice. One reader
(:func:`read_sidecar`) and one writer (:func:`write_sidecar`) for all of them::

    {"signature": "mosesrnn:0.3.0|features:rnn(...),unk(...)|encoding:utf-8",
     "mosesrnn_version": "0.3.0", "input": "/abs/phrase-table.gz", "input_bytes": 56776350,
     "shard": "1/1", "first_line": 1, "last_line": 6229, "lines": 6229, "total_lines": 6229,
     "bytes": 274546, "appended_columns": ["rnn", "unk"], "features": ["rnn(...)", "unk(...)"]}

Line numbers are 1-based and inclusive, as every message of mosesrnn gives them (an empty shard
has ``last_line = first_line - 1``). ``merged_from`` lists the parts of a merged table; ``pruned``
says how ``mosesrnn prune`` made a table from a larger one (its ranking, selection and counts), and
then the table may carry no appended columns (a pruned table that was never scored). Files
written before version 0.3 held the exclusive ``end_line`` instead of ``last_line``; they read the
same.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

from ..io.compressed import atomic_output, read_bytes

__all__ = ["SUFFIX", "Sidecar", "SidecarError", "sidecar_path", "read_sidecar", "write_sidecar"]

SUFFIX = ".json"


class SidecarError(ValueError):
    """A sidecar that is not the record ``mosesrnn score`` writes; the message names it."""


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


def sidecar_path(table: str) -> str:
    """Where the sidecar of ``table`` lives: ``TABLE.json``."""
    return table + SUFFIX


def read_sidecar(table: str) -> Sidecar | None:
    """The sidecar of ``table``, or None when it has none; raises :class:`SidecarError` for a file that
    is not one."""
    path = sidecar_path(table)
    try:
        record = json.loads(read_bytes(path).decode("utf-8"))
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError) as error:
        raise SidecarError(f"{path}: not the JSON record `mosesrnn score` writes ({error})") from None
    if not isinstance(record, dict):
        raise SidecarError(f"{path}: not the JSON record `mosesrnn score` writes (not an object)")
    if "last_line" not in record and isinstance(record.get("end_line"), int):
        record["last_line"] = record.pop("end_line") - 1
    names = [f.name for f in fields(Sidecar)]
    missing = [name for name in names if name not in record and name not in ("merged_from", "pruned")]
    if missing:
        raise SidecarError(f"{path}: not the JSON record `mosesrnn score` writes (no {', '.join(missing)})")
    columns = record["appended_columns"]
    if not isinstance(columns, list) or not (columns or record.get("pruned")) or \
            not all(isinstance(c, str) for c in columns):
        raise SidecarError(f"{path}: no list of appended_columns")
    values = {name: record.get(name) for name in names}
    for name in ("appended_columns", "features", "merged_from"):
        if values[name] is not None:
            values[name] = tuple(values[name])
    return Sidecar(**values)


def write_sidecar(table: str, sidecar: Sidecar) -> None:
    """Write the sidecar of ``table`` (whole or not at all)."""
    record = {name: list(value) if isinstance(value, tuple) else value for name, value in asdict(sidecar).items()
              if not (name in ("merged_from", "pruned") and value is None)}
    with atomic_output(sidecar_path(table)) as stream:
        stream.write((json.dumps(record, indent=2) + "\n").encode("utf-8"))
