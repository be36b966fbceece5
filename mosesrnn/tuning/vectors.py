"""Feature weights as one vector (D,) over the feature groups of an n-best list, and back to named groups.

The groups are ``(name, size)`` pairs in the list's order (``LM0`` 1, ``TranslationModel0`` 4, ...); on
disk the weights are ``Name= v1 v2`` lines (:mod:`mosesrnn.formats.moses_ini`).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..errors import MosesRNNError

__all__ = ["weights_vector", "named_weights"]



def named_weights(groups: Sequence[tuple[str, int]], weights: np.ndarray) -> dict[str, tuple[float, ...]]:
    """``weights`` (D,) split into ``{name: values}`` by ``groups``."""
    bounds = np.cumsum([0] + [size for _, size in groups])
    return {name: tuple(float(v) for v in weights[bounds[i]:bounds[i + 1]]) for i, (name, _) in enumerate(groups)}


def weights_vector(groups: Sequence[tuple[str, int]],
                   named: Mapping[str, Sequence[float]]) -> tuple[np.ndarray, list[str]]:
    """The vector (D,) of ``named`` weights for ``groups``, and the names of the groups it lacks (weight 0).

    Raises MosesRNNError when a group has a different number of weights than features.
    """
    vector, missing = [], []
    for name, size in groups:
        if name not in named:
            missing.append(name)
            vector.extend([0.0] * size)
        elif len(named[name]) != size:
            raise MosesRNNError(f"{name} has {size} feature values but {len(named[name])} weights")
        else:
            vector.extend(named[name])
    return np.array(vector, dtype=np.float64), missing
