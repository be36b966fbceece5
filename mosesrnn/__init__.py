"""mosesrnn: the RNN Encoder-Decoder of Cho et al. (2014) for scoring Moses phrase tables.

The Python API (see :mod:`mosesrnn.api`)::

    import mosesrnn
    model = mosesrnn.load("model/best.pt")
    model.log_prob(["the house"], ["la maison"])
    mosesrnn.score_table("phrase-table.gz", "scored.gz", mosesrnn.FeatureOptions(model="model/best.pt"))
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import MosesRNNError
from .version import __version__

__all__ = ["__version__", "load", "Model", "FeatureOptions", "score_table", "score_nbest", "prune_table",
           "MosesRNNError"]

if TYPE_CHECKING:
    from .api import FeatureOptions, Model, load, prune_table, score_nbest, score_table


def __getattr__(name: str):
    """The API, imported when first used, so that ``import mosesrnn`` (and ``mosesrnn --help``) stays light."""
    if name in ("load", "Model", "FeatureOptions", "score_table", "score_nbest", "prune_table"):
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'mosesrnn' has no attribute {name!r}")
