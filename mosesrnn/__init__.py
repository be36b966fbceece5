"""mosesrnn: the RNN Encoder-Decoder of Cho et al. (2014) for scoring Moses phrase tables.

The Python API (see :mod:`mosesrnn.api`)::

    import mosesrnn
    model = mosesrnn.load("model/best.pt")
    model.log_prob(["the house"], ["la maison"])
    mosesrnn.score_table("phrase-table.gz", "scored.gz", model="model/best.pt")
"""
from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.2.0"
__all__ = ["__version__", "load", "Model", "score_table", "score_nbest"]

if TYPE_CHECKING:
    from .api import Model, load, score_nbest, score_table


def __getattr__(name: str):
    """The API, imported when first used, so that ``import mosesrnn`` (and ``mosesrnn --help``) stays light."""
    if name in ("load", "Model", "score_table", "score_nbest"):
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'mosesrnn' has no attribute {name!r}")
