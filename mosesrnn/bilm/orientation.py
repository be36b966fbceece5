"""Which side a joint model predicts and in which order it reads it (Devlin et al. 2014, Sec. 4).

The forward model predicts each target word from the target words before it and the source words
around its affiliated source word. Devlin et al. add the same model in the other directions as
rescoring features: *target-to-source* swaps the two sides (each source word predicted from the
source words before it and the target words around its affiliated target word: the alignment
reversed, the same affiliation rule), and *right-to-left* reads the predicted side backwards (the
history is the following words). Every direction is the forward model's data path on a reoriented
sentence pair (:meth:`Orientation.apply`); its vocabulary's ``target`` list is then the predicted
side's words, ``source`` the window side's.

No torch or numpy here: the feature registry and the command line read the names.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..encdec.direction import DIRECTIONS, SOURCE_TO_TARGET, TARGET_TO_SOURCE, check_direction

__all__ = ["Orientation", "FORWARD", "JOINT_FEATURES", "reverse_links"]


@dataclass(frozen=True)
class Orientation:
    """A joint model's direction (:data:`~mosesrnn.encdec.direction.DIRECTIONS`) and reading order."""

    direction: str = SOURCE_TO_TARGET
    right_to_left: bool = False

    def __post_init__(self):
        check_direction(self.direction)

    @property
    def feature(self) -> str:
        """Its n-best feature's name: ``bilm``, ``bilm-t2s``, ``bilm-r2l`` or ``bilm-t2s-r2l``."""
        return "bilm" + ("-t2s" if self.direction == TARGET_TO_SOURCE else "") + ("-r2l" if self.right_to_left else "")

    @property
    def option(self) -> str:
        """The :class:`~mosesrnn.features.options.FeatureOptions` field (and, with dashes, the command-line
        option) that gives a model file of this orientation: ``bilm``, ``bilm_t2s``..."""
        return self.feature.replace("-", "_")

    def describe(self) -> str:
        """E.g. ``target-to-source, right-to-left``."""
        return f"{self.direction}, {'right-to-left' if self.right_to_left else 'left-to-right'}"

    def refusal(self, found: "Orientation", path: str) -> str | None:
        """One line refusing the model file ``path`` of orientation ``found`` for this orientation's feature, or
        None when it fits."""
        if found == self:
            return None
        return (f"{path} is a {found.describe()} joint model, but the {self.feature} feature "
                f"(--{self.feature}) takes a {self.describe()} one: give it as --{found.feature}")

    def to_dict(self) -> dict:
        """For the model file."""
        return {"direction": self.direction, "right_to_left": self.right_to_left}

    @classmethod
    def from_dict(cls, values: dict | None) -> "Orientation":
        """From :meth:`to_dict`; None (a file written before the other directions) is the forward model."""
        return cls(**values) if values else cls()

    def apply(self, source: Sequence[str], target: Sequence[str], links: Sequence[Sequence[int]]
              ) -> tuple[list[str], list[str], list[list[int]]]:
        """A sentence pair as this model sees it: ``(window side, predicted side, window positions linked to each
        predicted word)`` from ``(source, target, source positions linked to each target word)``.

        Target-to-source swaps the sides and reverses the links; right-to-left then reverses the predicted
        side and its links (the window side keeps its order: its positions still index it)."""
        window, predicted, linked = list(source), list(target), [list(each) for each in links]
        if self.direction == TARGET_TO_SOURCE:
            window, predicted, linked = predicted, window, reverse_links(linked, len(source))
        if self.right_to_left:
            predicted, linked = predicted[::-1], linked[::-1]
        return window, predicted, linked


def reverse_links(links: Sequence[Sequence[int]], source_len: int) -> list[list[int]]:
    """The target positions linked to each of ``source_len`` source positions, from the source positions linked
    to each target position (ascending)."""
    reversed_links: list[list[int]] = [[] for _ in range(source_len)]
    for j, sources in enumerate(links):
        for i in sources:
            reversed_links[i].append(j)
    return reversed_links


FORWARD = Orientation()
#: Every orientation by its feature's name, the forward model first.
JOINT_FEATURES = {o.feature: o for o in (Orientation(direction, r2l) for direction in DIRECTIONS
                                         for r2l in (False, True))}
