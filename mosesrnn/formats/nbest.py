"""Streaming, lossless reading and writing of Moses n-best lists.

A line is ``id ||| hypothesis ||| feature scores ||| total [||| segmentation ||| alignment ...]``
(``moses -n-best-list FILE N``). The feature field is a sequence of groups, each a label ending
in ``=`` or ``:`` followed by its values:

- new format: ``LM0= -20.4 WordPenalty0= -5 TranslationModel0= -2.1 -3.4 -1.2 -2.0``
- old format: ``d= 0 -3.3 lm= -47.3 tm= -36.7 -58.4 w= -14`` (or ``d: ...``); a label may repeat
  (e.g. two language models each written as ``lm:``), its values then continue the same group.

Sparse features (``name_x= 1``) are groups that appear in some lines only. We split on ``|||``
and keep every field's exact spacing, so :func:`format_line` is the exact inverse of
:func:`parse_line`; a new group goes at the end of the feature field the way Moses writes one
(``Name= v1 v2 ``: label, values, each followed by a space).
"""
from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

from ..io.compressed import open_input
from ..io.readers import reader
from .errors import FileLineError, decoded_lines

__all__ = [
    "NbestError", "NbestEntry", "parse_line", "parse_features", "format_line", "read_nbest",
    "group_by_sentence",
]

FIELD_SEPARATOR = "|||"
_LABEL_ENDINGS = ("=", ":")


class NbestError(FileLineError):
    """A malformed n-best list; the message names the file and the line (``PATH:LINE: problem``)."""


@dataclass(frozen=True)
class NbestEntry:
    """One hypothesis of an n-best list, with its raw fields kept byte for byte.

    ``fields`` are the text between ``|||`` separators, spacing included; ``ending`` is the line
    terminator (``"\\n"``, ``"\\r\\n"`` or ``""``). ``features`` are the groups of field 3 in file
    order, a repeated label merged into its first occurrence: ``(("LM0", (-20.4,)), ...)``.
    """

    path: str
    line_no: int
    sentence_id: int
    fields: tuple[str, ...]
    features: tuple[tuple[str, tuple[float, ...]], ...]
    total: float
    ending: str

    @property
    def hypothesis(self) -> str:
        """The translation without surrounding spaces, e.g. ``"das ist ein haus"``."""
        return self.fields[1].strip(" \t")

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The group labels without their ``=``/``:``, in file order."""
        return tuple(name for name, _ in self.features)


def _number(token: str, path: str, line_no: int, what: str) -> float:
    try:
        value = float(token)
    except ValueError:
        raise NbestError(path, line_no, f"{what} {token!r} is not a number") from None
    if math.isnan(value):
        raise NbestError(path, line_no, f"{what} {token!r} is not a number")
    return value


def parse_features(field: str, path: str = "<string>", line_no: int = 1) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """Parse a feature field into ordered ``(label, values)`` groups; a repeated label is merged.

    >>> parse_features(" LM0= -20.4 TM0= -2.1 -3.4 ")
    (('LM0', (-20.4,)), ('TM0', (-2.1, -3.4)))
    """
    groups: dict[str, list[float]] = {}
    current: list[float] | None = None
    for token in field.split():
        if token.endswith(_LABEL_ENDINGS) and len(token) > 1:
            current = groups.setdefault(token[:-1], [])
        elif current is None:
            raise NbestError(path, line_no, f"feature score {token!r} comes before any 'Name=' label")
        else:
            current.append(_number(token, path, line_no, "feature score"))
    return tuple((name, tuple(values)) for name, values in groups.items())


def parse_line(line: str, path: str = "<string>", line_no: int = 1) -> NbestEntry:
    """Parse one n-best line; raise :class:`NbestError` for fewer than four fields, a sentence id
    that is not a non-negative integer, or a feature score or total that is not a number."""
    body = line.rstrip("\r\n")
    fields = tuple(body.split(FIELD_SEPARATOR))
    if len(fields) < 4:
        raise NbestError(path, line_no, f"expected at least 4 '|||'-separated fields, found {len(fields)}")
    id_text = fields[0].strip(" \t")
    if not id_text.isdigit():
        raise NbestError(path, line_no, f"sentence id {id_text!r} is not a non-negative integer")
    features = parse_features(fields[2], path, line_no)
    total = _number(fields[3].strip(" \t"), path, line_no, "total score")
    return NbestEntry(path, line_no, int(id_text), fields, features, total, line[len(body):])


def _format_group(name: str, values: Sequence[float | str]) -> str:
    """``Name= v1 v2`` with floats written to 9 significant digits (``-12.5``, ``2``)."""
    return " ".join([f"{name}=", *(value if isinstance(value, str) else format(value, ".9g") for value in values)])


def format_line(entry: NbestEntry, appended: Sequence[tuple[str, Sequence[float | str]]] = ()) -> str:
    """Write ``entry`` back, with the ``(name, values)`` groups of ``appended`` at the end of its
    feature field (``name`` without ``=``). With nothing appended the result equals the parsed line.

    Raises :class:`NbestError` if an appended name is already in the line (or appended twice), or if an appended
    value is NaN or infinite (MERT and Moses read numbers; such a value is a feature's bug, never written).
    """
    if not appended:
        return FIELD_SEPARATOR.join(entry.fields) + entry.ending
    seen = set(entry.feature_names)
    for name, values in appended:
        if name in seen:
            raise NbestError(entry.path, entry.line_no, f"feature {name!r} is already in the line")
        seen.add(name)
        if any(not isinstance(value, str) and not math.isfinite(value) for value in values):
            raise NbestError(entry.path, entry.line_no, f"feature {name} computed {' '.join(map(str, values))} for "
                                                        f"this hypothesis, not a finite number: nothing written")
    field = entry.fields[2]
    core = field.rstrip(" \t")
    new_groups = " ".join(_format_group(name, values) for name, values in appended)
    new_field = core + " " + new_groups + (field[len(core):] or " ")
    return FIELD_SEPARATOR.join((*entry.fields[:2], new_field, *entry.fields[3:])) + entry.ending


@reader
def read_nbest(path: str, encoding: str = "utf-8") -> Iterator[NbestEntry]:
    """Stream the entries of an n-best list in file order, in constant memory, as a
    :class:`~mosesrnn.io.readers.Reader`: ``with read_nbest(path) as entries:``.

    ``-`` reads stdin; gzip is decompressed on a background thread. Raises :class:`NbestError`
    (``PATH:LINE: problem``) for a malformed line (see :func:`parse_line`), a sentence id smaller
    than the previous line's (Moses writes the hypotheses of a sentence together, ids ascending),
    undecodable text or a corrupt gzip stream.
    """
    if path != "-" and not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    previous_id = -1
    with open_input(path) as stream:
        for line_no, line in decoded_lines(stream, path, encoding, NbestError):
            entry = parse_line(line, path, line_no)
            if entry.sentence_id < previous_id:
                raise NbestError(path, line_no, f"sentence id {entry.sentence_id} after {previous_id}: "
                                                f"ids must be grouped and ascending, as Moses writes them")
            previous_id = entry.sentence_id
            yield entry


def group_by_sentence(entries: Iterable[NbestEntry]) -> Iterator[tuple[int, list[NbestEntry]]]:
    """Group consecutive entries by sentence id: ``(sentence_id, [entries...])`` in input order."""
    for sentence_id, group in itertools.groupby(entries, key=lambda entry: entry.sentence_id):
        yield sentence_id, list(group)
