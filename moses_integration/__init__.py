"""Using mosesrnn's feature columns in Moses: moses.ini rewriting, binarization, re-tuning.

The only code of mosesrnn that calls Moses, and a library: it knows nothing of the command line
(the commands ``moses-ini``, ``binarize``, ``mert-moses``, ``mert-report`` and ``tune`` live in
:mod:`mosesrnn.cli.moses` and call it). The moses.ini format itself is :mod:`mosesrnn.formats.moses_ini`.
"""
from .binarize import binarize_table
from .ini_paths import absolute_paths
from .mert_moses import MertSettings, find_tools
from .mert_report import apply_iteration, read_tuning
from .moses_ini import update_moses_ini
from .new_columns import DEFAULT_WEIGHTS, new_column_weights
from .route import RoutePlan, run_route
from .tools import MosesToolError

__all__ = ["DEFAULT_WEIGHTS", "MosesToolError", "MertSettings", "RoutePlan", "absolute_paths", "apply_iteration",
           "binarize_table", "find_tools", "new_column_weights", "read_tuning", "run_route", "update_moses_ini"]
