"""Moses' own MERT input, for the test of our MERT on Moses' regression data (``test_tuning.py``): the
feature and score statistics files of ``extractor`` (text format). Only that test reads them, so the
reader lives beside it.

``FEATSTAT`` holds, per sentence, a block ``FEATURES_TXT_BEGIN_0 <sentence> <n> <D> <names...>``,
n lines of D feature values and ``FEATURES_TXT_END_0``; ``SCORESTAT`` the same with
``SCORES_TXT_BEGIN_0 <sentence> <n> 9 BLEU`` and Moses' BLEU statistics
``correct_1 total_1 ... correct_4 total_4 ref_len``, which we reorder into sacrebleu's
``hyp_len ref_len correct_1..4 total_1..4`` (hyp_len = total_1). ``INIT`` (``mert --ifile``) has
three lines: the initial weights, and the lower and upper bounds of random start points.
"""
from __future__ import annotations

import itertools
from typing import Iterator

import numpy as np

from mosesrnn.formats.text_file import read_lines, text_lines
from mosesrnn.tuning.problem import TuningProblem

__all__ = ["read_moses_stats", "read_moses_init"]


def _blocks(path: str, kind: str) -> Iterator[tuple[list[str], np.ndarray]]:
    """``(header tokens, values (n, width))`` of each ``{kind}_TXT_BEGIN_0`` block of ``path``."""
    with text_lines(path) as lines:
        for line_no, line in lines:
            header = line.split()
            if not header:
                continue
            if header[0] != f"{kind}_TXT_BEGIN_0" or len(header) < 4:
                raise ValueError(f"{path}:{line_no}: expected '{kind}_TXT_BEGIN_0 <sentence> <n> <width> ...'")
            rows = [text.split() for _, text in itertools.islice(lines, int(header[2]))]
            end_no, end = next(lines, (line_no + len(rows) + 1, ""))
            if end.strip() != f"{kind}_TXT_END_0" or any(len(row) != int(header[3]) for row in rows):
                raise ValueError(f"{path}:{end_no}: block of sentence {header[1]} does not have {header[2]} "
                                 f"rows of {header[3]} values followed by {kind}_TXT_END_0")
            yield header, np.array(rows, dtype=np.float64).reshape(len(rows), int(header[3]))


def _groups(names: list[str]) -> tuple[tuple[str, int], ...]:
    """Moses' column names ``d_0 d_1 lm_0`` as groups ``(("d", 2), ("lm", 1))``."""
    prefixes = [name.rsplit("_", 1)[0] for name in names]
    return tuple((prefix, len(list(run))) for prefix, run in itertools.groupby(prefixes))


def read_moses_stats(features_path: str, scores_path: str) -> TuningProblem:
    """A tuning problem from Moses' FEATSTAT and SCORESTAT files (BLEU statistics only)."""
    features, stats, sizes, names = [], [], [], None
    for (feature_header, values), (score_header, scores) in zip(_blocks(features_path, "FEATURES"),
                                                                  _blocks(scores_path, "SCORES"), strict=True):
        if feature_header[1:3] != score_header[1:3] or score_header[3] != "9":
            raise ValueError(f"{features_path}, {scores_path}: blocks {feature_header[1:3]} and {score_header[1:4]} "
                             f"do not match (sentence, hypotheses, 9 BLEU statistics)")
        names = names or feature_header[4:]
        features.append(values)
        correct, total, ref_len = scores[:, 0:8:2], scores[:, 1:8:2], scores[:, 8:9]
        stats.append(np.concatenate([total[:, :1], ref_len, correct, total], axis=1).astype(np.int64))
        sizes.append(len(values))
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    hypotheses = offsets[-1]
    return TuningProblem(_groups(names), np.concatenate(features), np.concatenate(stats), offsets,
                         np.full(hypotheses, np.nan), np.zeros(hypotheses, dtype=np.int64))


def read_moses_init(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The initial weights, lower and upper bounds (each shape (D,)) of a Moses ``INIT`` file."""
    rows = [line.split() for line in read_lines(path) if line.strip()]
    if len(rows) != 3 or len({len(row) for row in rows}) != 1:
        raise ValueError(f"{path}: expected 3 lines of equally many numbers (initial, min, max)")
    initial, low, high = np.array(rows, dtype=np.float64)
    return initial, low, high
