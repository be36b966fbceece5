"""Using mosesrnn's feature columns in Moses: moses.ini rewriting, binarization, re-tuning.

The only code of mosesrnn that calls Moses. ``cli`` holds the click commands ``moses-ini``,
``binarize`` and ``mert-moses``; the modules below it are plain libraries.
"""
from .binarize import binarize_table
from .mert import MertOptions, tune
from .moses_ini import MosesIniError, read_weights, update_moses_ini
from .tools import MosesToolError
from .weights import DEFAULT_WEIGHTS, initial_weights

__all__ = ["DEFAULT_WEIGHTS", "MosesIniError", "MosesToolError", "MertOptions", "binarize_table",
           "initial_weights", "read_weights", "tune", "update_moses_ini"]
