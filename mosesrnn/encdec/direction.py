"""Which side of a phrase pair a model reads, and which it predicts.

A model trained ``source-to-target`` gives p(target | source); one trained ``target-to-source``
reads the table's target phrase and gives p(source | target), the other direction Moses keeps.
"""
from __future__ import annotations

from typing import TypeVar

from ..errors import MosesRNNError

__all__ = ["SOURCE_TO_TARGET", "TARGET_TO_SOURCE", "DIRECTIONS", "check_direction", "orient", "opposite",
           "probability"]

SOURCE_TO_TARGET = "source-to-target"
TARGET_TO_SOURCE = "target-to-source"
DIRECTIONS = (SOURCE_TO_TARGET, TARGET_TO_SOURCE)

T = TypeVar("T")


def check_direction(direction: str) -> str:
    """Return ``direction`` if it is one of :data:`DIRECTIONS`; raise MosesRNNError otherwise."""
    if direction not in DIRECTIONS:
        raise MosesRNNError(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
    return direction


def orient(direction: str, source: T, target: T) -> tuple[T, T]:
    """``(what the model reads, what it predicts)`` of a (source, target) pair in table orientation.

    >>> orient("target-to-source", "la maison", "the house")
    ('the house', 'la maison')
    """
    return (source, target) if check_direction(direction) == SOURCE_TO_TARGET else (target, source)


def opposite(direction: str) -> str:
    """The other direction.

    >>> opposite("source-to-target")
    'target-to-source'
    """
    return TARGET_TO_SOURCE if check_direction(direction) == SOURCE_TO_TARGET else SOURCE_TO_TARGET


def probability(direction: str) -> str:
    """The probability a model of this direction computes, e.g. ``p(target | source)``."""
    read, predicted = orient(direction, "source", "target")
    return f"p({predicted} | {read})"
