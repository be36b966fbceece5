"""Initial weights of the columns appended to a phrase table.

Before tuning, the weights decide which ``table-limit`` (default 20) translations of a source
phrase survive, so a new feature should start small and with the sign that helps. Moses reads a
written value ``x`` as ``max(ln x, -100)`` (``shared/docs/moses.md``):

- ``rnn`` holds ``exp(log p)``, so Moses sees ``log p <= 0``: a positive weight favours more
  probable phrase pairs;
- ``unk`` holds ``e^n``, so Moses sees the count ``n >= 0``: a negative weight penalises each
  unknown word.

Both start at magnitude 0.1, half the 0.2 that train-model.perl gives each phrase-table score:
the RNN log-probability sums over the target words and runs larger than one TM log-score.
"""
from __future__ import annotations

import math
from typing import Sequence

from mosesrnn.errors import MosesRNNError
from mosesrnn.features.registry import FEATURES, default_features
from mosesrnn.formats.sidecar import read_table_sidecar

__all__ = ["DEFAULT_WEIGHTS", "DEFAULT_FEATURES", "scored_columns", "new_column_weights"]

#: Each feature's initial weight, from the feature registry.
DEFAULT_WEIGHTS = {name: spec.default_weight for name, spec in FEATURES.items()}
DEFAULT_FEATURES = default_features({"model"})


def scored_columns(table: str) -> tuple[str, ...] | None:
    """The names of the columns ``mosesrnn score`` appended to ``table``, read from the
    ``TABLE.json`` it writes beside it; None when there is no such file."""
    sidecar = read_table_sidecar(table)
    return sidecar.appended_columns if sidecar is not None and sidecar.appended_columns else None


def new_column_weights(add: int | None = None, features: Sequence[str] | None = None,
                    weights: Sequence[float] | None = None) -> tuple[float, ...]:
    """The initial weights of the appended columns.

    ``weights`` wins when given; otherwise each name in ``features`` (default ``rnn, unk``) takes
    its :data:`DEFAULT_WEIGHTS` entry. ``add``, ``features`` and ``weights`` must agree on the
    number of columns. Raises MosesRNNError otherwise.
    """
    if weights is not None:
        chosen = tuple(float(w) for w in weights)
        if any(not math.isfinite(w) for w in chosen):
            raise MosesRNNError(f"weights must be finite numbers, got {list(weights)}")
        if features is not None and len(features) != len(chosen):
            raise MosesRNNError(f"--features names {len(features)} columns but --weights gives {len(chosen)}")
    else:
        names = tuple(features) if features is not None else DEFAULT_FEATURES
        unknown = [name for name in names if name not in DEFAULT_WEIGHTS]
        if unknown:
            raise MosesRNNError(f"no default weight for column(s) {', '.join(unknown)} "
                                f"(defaults exist for {', '.join(DEFAULT_WEIGHTS)}): give --weights")
        chosen = tuple(DEFAULT_WEIGHTS[name] for name in names)
        if add is not None and add != len(chosen):
            raise MosesRNNError(f"--add {add}, but the appended columns are {','.join(names)} ({len(chosen)}): "
                                f"name the {add} column(s) with --features or give --weights")
    if add is not None and add != len(chosen):
        raise MosesRNNError(f"--add {add}, but {len(chosen)} weights were given")
    if not chosen:
        raise MosesRNNError("no columns to add")
    return chosen
