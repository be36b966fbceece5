"""A look at the first lines of a table before scoring it: does it fit the model?

Scoring a table twice, a table of the other direction or of another language pair all "work"
and give useless columns. These checks read a sample of the table and warn when its score count
differs from the model's training table, when a sidecar says it was scored already, or when many
more of its tokens are unknown to the model than were in the model's training data.
"""
from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING

from ..formats.phrase_table import PhraseTableError, read_entries
from ..text.vocab import UNK_ID

if TYPE_CHECKING:
    from ..models.model_file import TrainedModel

__all__ = ["table_warnings"]

SAMPLE_LINES = 5000


def table_warnings(path: str, encoding: str = "utf-8", trained: TrainedModel | None = None) -> list[str]:
    """Warnings about scoring the table at ``path`` (with ``trained``, when given); [] if all looks right."""
    warnings = _sidecar_warnings(path)
    try:
        sample = list(itertools.islice(read_entries(path, encoding), SAMPLE_LINES))
    except PhraseTableError:
        return warnings  # the scoring run reports the bad line itself
    if not sample or trained is None:
        return warnings
    expected = trained.info.get("table_scores")
    if expected is not None and len(sample[0].scores) != expected:
        warnings.append(f"{path} has {len(sample[0].scores)} scores per line, but the model was trained on a "
                        f"table with {expected}: was it scored already?")
    coverage = trained.info.get("coverage")
    if coverage is not None:
        for side, codec, trained_coverage in (("source", trained.text.source, coverage[0]),
                                              ("target", trained.text.target, coverage[1])):
            ids = [i for entry in sample for i in codec.ids(getattr(entry, side))]
            unknown, trained_unknown = (sum(i == UNK_ID for i in ids) / max(len(ids), 1)), 1 - trained_coverage
            if unknown > max(3 * trained_unknown, trained_unknown + 0.10):
                warnings.append(
                    f"{100 * unknown:.0f}% of the {side} tokens of the first {len(sample):,} lines of {path} are "
                    f"unknown to the model ({100 * trained_unknown:.0f}% in its training data): is the table in "
                    f"the other direction, or of another language pair?")
    return warnings


def _sidecar_warnings(path: str) -> list[str]:
    try:
        with open(path + ".json", encoding="utf-8") as stream:
            columns = json.load(stream).get("appended_columns")
    except (OSError, ValueError, AttributeError):
        return []
    if not columns:
        return []
    return [f"{path} already has the columns {','.join(columns)} appended by `mosesrnn score` "
            f"(see {path}.json); scoring it again appends more"]
