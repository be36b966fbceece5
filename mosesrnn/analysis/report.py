"""The RNN column of a scored phrase table against the translation model's (C14 Fig. 3).

Reads a table written by ``mosesrnn score``: the rnn column holds ``e^{log p}``, so log p is the
log of the written value (Moses' view; values below ``e^-100`` are floored to -100 as Moses does).
The translation-model column is the direct phrase probability p(target | source): in Moses'
standard order ``p(f|e) lex(f|e) p(e|f) lex(e|f)`` (f the source) that is the third score,
index 2, which C14 calls p(f | e) (their f is the target). Rank correlation: Spearman's rho
(scipy), on all lines read.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from ..errors import MosesRNNError
from ..formats.phrase_table import moses_log, read_entries, score_column
from ..formats.sidecar import read_table_sidecar
from ..io.figures import save_png
from ..text.escapes import display_text
from . import optional

__all__ = ["ColumnPair", "read_columns", "rnn_column_index", "spearman", "plot_report", "TM_COLUMN"]

TM_COLUMN = 2  # Moses' third score: the direct phrase translation probability p(target | source)


@dataclass
class ColumnPair:
    rnn: np.ndarray  # log p of the rnn column, per line
    tm: np.ndarray  # log of the translation-model column
    lines: int
    rnn_column: int
    tm_column: int


def rnn_column_index(path: str) -> int | None:
    """The rnn column's index, counted from the end (negative), from the ``.json`` sidecar that
    `mosesrnn score` writes (its ``appended_columns`` are the last columns, in order); None without one.
    A sidecar of another table raises :class:`~mosesrnn.formats.sidecar.SidecarMismatch`."""
    sidecar = read_table_sidecar(path)
    if sidecar is None:
        return None
    names = list(sidecar.appended_columns)
    return names.index("rnn") - len(names) if "rnn" in names else None


def read_columns(path: str, rnn_column: int | None = None, tm_column: int = TM_COLUMN,
                 max_lines: int | None = None, encoding: str = "utf-8") -> ColumnPair:
    """log values of the rnn and translation-model columns of each line (the first ``max_lines``).

    ``rnn_column`` None: from the sidecar ``PATH.json`` that `mosesrnn score` writes; without one
    (or without an rnn column in it) the column must be given. Negative indices count from the end;
    a column beyond the first line's scores raises PhraseTableError.
    """
    if rnn_column is None:
        rnn_column = rnn_column_index(path)
        if rnn_column is None:
            raise MosesRNNError(f"{path}: which score column is the RNN's? {path}.json, which `mosesrnn score` writes "
                                f"beside the table, is missing or names no rnn column: give --rnn-column")
    rnn, tm = [], []
    with read_entries(path, encoding) as entries:
        for entry in entries:
            if not rnn:
                rnn_column = score_column(path, entry, rnn_column, "--rnn-column")
                tm_column = score_column(path, entry, tm_column, "--tm-column")
            if max_lines is not None and len(rnn) >= max_lines:
                break
            rnn.append(moses_log(entry.scores[rnn_column]))
            tm.append(moses_log(entry.scores[tm_column]))
    if not rnn:
        raise MosesRNNError(f"{path}: no lines")
    return ColumnPair(np.array(rnn), np.array(tm), len(rnn), rnn_column, tm_column)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (ties get average ranks)."""
    return float(optional("scipy.stats").spearmanr(x, y).statistic)


def plot_report(columns: ColumnPair, path: str, title: str, max_points: int = 50000, seed: int = 1) -> float:
    """Scatter of rnn log p against log p(target | source) and both histograms, as a PNG; returns rho."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rho = spearman(columns.rnn, columns.tm)
    shown = sorted(random.Random(seed).sample(range(columns.lines), min(max_points, columns.lines)))
    fig, (scatter, tm_hist, rnn_hist) = plt.subplots(1, 3, figsize=(15, 4.6), dpi=80)
    scatter.scatter(columns.rnn[shown], columns.tm[shown], s=2, alpha=0.2, linewidths=0)
    scatter.set_xlabel(f"RNN log p(target | source) (column {columns.rnn_column + 1})")
    scatter.set_ylabel(f"TM log p(target | source) (column {columns.tm_column + 1})")
    scatter.set_title(f"{len(shown)} of {columns.lines} pairs; Spearman rho = {rho:.3f}")
    tm_hist.hist(columns.tm, bins=60, color="tab:orange")
    tm_hist.set_xlabel("TM log p(target | source)")
    tm_hist.set_ylabel("pairs")
    rnn_hist.hist(columns.rnn, bins=60)
    rnn_hist.set_xlabel("RNN log p(target | source)")
    fig.suptitle(display_text(title))
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)
    return rho
