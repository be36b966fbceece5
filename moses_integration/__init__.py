"""Using mosesrnn's feature columns in Moses: moses.ini rewriting, binarization, re-tuning.

The only code of mosesrnn that calls Moses. ``cli`` holds the click commands ``moses-ini``,
``binarize``, ``mert-moses`` and ``mert-report``; the modules below it are plain libraries.
"""
from .binarize import binarize_table
from .ini_paths import write_absolute_paths
from .mert import MertOptions, tune
from .mert_report import apply_iteration, read_tuning
from .moses_ini import MosesIniError, read_weights, replace_weights, update_moses_ini
from .tools import MosesToolError
from .weights import DEFAULT_WEIGHTS, initial_weights

__all__ = ["DEFAULT_WEIGHTS", "MosesIniError", "MosesToolError", "MertOptions", "apply_iteration",
           "binarize_table", "initial_weights", "read_tuning", "read_weights", "replace_weights", "tune",
           "update_moses_ini", "write_absolute_paths"]
