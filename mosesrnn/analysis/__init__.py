"""What a trained model tells beyond its scores (C14 Sec. 4.3-4.4; Kalchbrenner & Blunsom 2013 Table 1).

- :mod:`.perplexity`: per-token perplexity of gold targets, and with shuffled sources as a control;
- :mod:`.embeddings`: word embeddings e(x) and phrase representations c, 2-D maps, cosine neighbours;
- :mod:`.topk`: the targets the RNN ranks highest among a phrase table's candidates (C14 Table 2);
- :mod:`.report`: the RNN column of a scored table against the translation model's (C14 Fig. 3).

Plots use matplotlib (Agg backend); projections scikit-learn and rank correlation SciPy, the `analysis` extra
(`pip install mosesrnn[analysis]`), imported only when used.
"""

import importlib

from ..errors import MosesRNNError

__all__ = ["optional"]


def optional(module: str):
    """Import ``module`` of the ``analysis`` extra (scikit-learn, SciPy), or say in one line how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        package = {"sklearn": "scikit-learn", "scipy": "SciPy"}.get(module.split(".")[0], module)
        raise MosesRNNError(f"this needs {package}, which mosesrnn installs as an extra: pip install "
                            f"'mosesrnn[analysis]'") from None
