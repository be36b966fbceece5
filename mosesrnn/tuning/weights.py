"""Feature weights in moses.ini ``[weight]`` syntax: ``Name= v1 v2 ...``, one line per feature group."""
from __future__ import annotations

import re
from typing import Mapping, Sequence

import numpy as np

from ..formats.text_file import read_lines

__all__ = ["read_weights", "format_weights", "weights_vector", "named_weights"]

_WEIGHT_LINE = re.compile(r"^(\S+)=\s+(.+)$")  # mert-moses.pl reads /^(\S+)= (.+)$/


def read_weights(path: str) -> dict[str, tuple[float, ...]]:
    """Read ``Name= v1 v2`` lines: from a moses.ini its ``[weight]`` section, else every line.

    Blank lines and ``#`` comments are skipped; raises ValueError (``PATH:LINE: problem``) for
    another line or a value that is not a number.
    """
    lines = read_lines(path)
    has_sections = any(line.strip().startswith("[") for line in lines)
    weights: dict[str, tuple[float, ...]] = {}
    section = None
    for line_no, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if text.startswith("["):
            section = text
            continue
        if not text or (has_sections and section != "[weight]"):
            continue
        match = _WEIGHT_LINE.match(text)
        if not match:
            raise ValueError(f"{path}:{line_no}: expected 'Name= v1 v2 ...', found {text!r}")
        try:
            weights[match[1]] = tuple(float(value) for value in match[2].split())
        except ValueError:
            raise ValueError(f"{path}:{line_no}: a weight of {match[1]} is not a number") from None
    if not weights:
        raise ValueError(f"{path}: no 'Name= v1 v2 ...' weight lines" + (" in [weight]" if has_sections else ""))
    return weights


def format_weights(groups: Sequence[tuple[str, int]], weights: np.ndarray) -> str:
    """``weights`` (D,) as moses.ini ``[weight]`` lines, one per ``(name, size)`` group."""
    lines, column = [], 0
    for name, size in groups:
        values = " ".join(format(float(value), ".9g") for value in weights[column:column + size])
        lines.append(f"{name}= {values}\n")
        column += size
    return "".join(lines)


def named_weights(groups: Sequence[tuple[str, int]], weights: np.ndarray) -> dict[str, tuple[float, ...]]:
    """``weights`` (D,) split into ``{name: values}`` by ``groups``."""
    bounds = np.cumsum([0] + [size for _, size in groups])
    return {name: tuple(float(v) for v in weights[bounds[i]:bounds[i + 1]]) for i, (name, _) in enumerate(groups)}


def weights_vector(groups: Sequence[tuple[str, int]],
                   named: Mapping[str, Sequence[float]]) -> tuple[np.ndarray, list[str]]:
    """The vector (D,) of ``named`` weights for ``groups``, and the names of the groups it lacks (weight 0).

    Raises ValueError when a group has a different number of weights than features.
    """
    vector, missing = [], []
    for name, size in groups:
        if name not in named:
            missing.append(name)
            vector.extend([0.0] * size)
        elif len(named[name]) != size:
            raise ValueError(f"{name} has {size} feature values but {len(named[name])} weights")
        else:
            vector.extend(named[name])
    return np.array(vector, dtype=np.float64), missing
