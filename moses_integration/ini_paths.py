"""The files a moses.ini names, and making their paths absolute.

Moses opens a relative path as given, so it resolves against the directory the decoder runs in,
not the ini's folder. mert-moses.pl decodes inside its working directory, where such paths break;
:func:`absolute_paths` writes every one as an absolute path, resolved against the current
directory (as Moses would, run from here) or a directory given.

The paths are the ``path=`` arguments of ``[feature]`` lines (and a BilingualNPLM's ``source_vocab=``
and ``target_vocab=``, which Moses opens as given too) and the file field of the legacy sections
(``[ttable-file]``, ``[lmodel-file]``, ``[distortion-file]``, ``[generation-file]``).
Paths holding a ``$`` placeholder (``${MODEL_PATH}/...``, as in Moses' regression tests) and
other ``key=`` arguments are left alone.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import Iterator, Sequence

from mosesrnn.errors import MosesRNNError
from mosesrnn.formats.moses_ini import IniLine, parse_ini, replace_tokens, split_comment

__all__ = ["FILE_KEYS", "LEGACY_PATH_FIELDS", "IniPath", "PathChange", "file_paths", "is_relative", "check_no_space",
           "absolute_paths"]

#: The arguments of a ``[feature]`` line that name a file.
FILE_KEYS = ("path", "source_vocab", "target_vocab")
#: Legacy sections naming a file on each line, and the index of the path among the line's fields.
LEGACY_PATH_FIELDS = {"ttable-file": 4, "lmodel-file": 3, "distortion-file": 3, "generation-file": 3}


@dataclass(frozen=True)
class IniPath:
    """A file named on ``line``: the ``index``-th token, which is ``token`` and names ``path``."""

    line: IniLine
    index: int
    token: str
    path: str


@dataclass(frozen=True)
class PathChange:
    """A path :func:`absolute_paths` rewrote, and whether anything exists there."""

    line_no: int
    old: str
    new: str
    exists: bool


def file_paths(lines: Sequence[IniLine]) -> Iterator[IniPath]:
    """Every file path a moses.ini names, in file order."""
    for line in lines:
        tokens = line.value.split()
        if line.section == "feature":
            for index, token in enumerate(tokens[1:], start=1):
                key, equals, path = token.partition("=")
                if equals and key in FILE_KEYS:
                    yield IniPath(line, index, token, path)
        elif line.section in LEGACY_PATH_FIELDS and len(tokens) > LEGACY_PATH_FIELDS[line.section]:
            index = LEGACY_PATH_FIELDS[line.section]
            yield IniPath(line, index, tokens[index], tokens[index])


def is_relative(path: str) -> bool:
    """A relative path without ``$`` placeholders."""
    return bool(path) and not os.path.isabs(path) and "$" not in path


def check_no_space(path: str) -> str:
    """Return ``path``; raise MosesRNNError if it holds whitespace, which no moses.ini can name.

    Moses splits a ``[feature]`` line at whitespace, so ``path=/a b/t.gz`` reaches it as
    ``path=/a`` and ``b/t.gz`` and stops ("Incorrect format for feature function arg").
    """
    if any(character.isspace() for character in path):
        raise MosesRNNError(f"{path!r} holds a space, and Moses splits moses.ini lines at spaces (it stops with "
                            "'Incorrect format for feature function arg'): move or link it to a path without one")
    return path


def _exists(path: str) -> bool:
    # A compact table path=X is the file X.minphr, a compact reordering table X.minlexr.
    return os.path.exists(path) or bool(glob.glob(glob.escape(path) + ".*"))


def absolute_paths(text: str, base: str | None = None) -> tuple[str, list[PathChange]]:
    """Rewrite every relative file path of a moses.ini's ``text`` as an absolute path.

    ``base`` is the directory the paths are relative to (default: the current directory, where
    Moses would resolve them). Pure but for checking which new paths exist; every other byte
    stays as it was.
    """
    base = os.path.abspath(base or os.curdir)
    ini = parse_ini(text)
    lines = [line.raw for line in ini]
    changes, edits = [], {}
    for found in file_paths(ini):
        if not is_relative(found.path):
            continue
        new = check_no_space(os.path.normpath(os.path.join(base, found.path)))
        edits.setdefault(found.line, {})[found.index] = found.token[:-len(found.path)] + new
        changes.append(PathChange(found.line.number, found.path, new, _exists(new)))
    for line, replacements in edits.items():
        content, comment, ending = split_comment(line.raw)
        lines[line.number - 1] = replace_tokens(content, replacements) + comment + ending
    return "".join(lines), changes
