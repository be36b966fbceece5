"""Before and at the start of scoring a table: every check of ``mosesrnn score`` in one place.

Scoring a table twice, a table of the other direction or of another language pair all "work"
and give useless columns. :func:`check_run` refuses what cannot work before anything is read;
:func:`table_warnings` warns when the table's sidecar says it was scored already;
:func:`first_chunk_warnings` looks at the first chunk of the real pass (no extra read of the
table) and warns when its score count differs from the model's training table, or when many
more of its tokens are unknown to the model than were in the model's training data.
"""
from __future__ import annotations

from typing import Sequence

from ..errors import MosesRNNError
from ..features.registry import Feature
from ..formats.sidecar import SidecarError, SidecarMismatch, read_table_sidecar, sidecar_path
from ..text.vocab import UNK_ID
from .shards import ShardSpec

__all__ = ["check_run", "table_warnings", "first_chunk_warnings"]


def check_run(input_path: str, output_path: str, features: Sequence[Feature], shard: ShardSpec) -> None:
    """Raise MosesRNNError for a run that cannot work: no feature, or stdin/stdout with --shard."""
    if not features:
        raise MosesRNNError("no feature to compute")
    if "-" in (input_path, output_path) and shard.count > 1:
        raise MosesRNNError("--shard needs files, not stdin/stdout")


def table_warnings(input_path: str) -> list[str]:
    """A warning when ``input_path``'s sidecar says ``mosesrnn score`` appended columns to it already."""
    if input_path == "-":
        return []
    try:
        sidecar = read_table_sidecar(input_path)
    except (SidecarError, SidecarMismatch):
        return []  # a sidecar that is not ours, or of another table, says nothing about this table
    if sidecar is None:
        return []
    return [f"{input_path} already has the columns {','.join(sidecar.appended_columns)} appended by `mosesrnn "
            f"score` (see {sidecar_path(input_path)}); scoring it again appends more"]


def first_chunk_warnings(input_path: str, chunk: Sequence, features: Sequence[Feature], table: bool = True,
                         scored_already: bool = False) -> list[str]:
    """Warnings from the first chunk of a table (``table``) or an n-best list about the models of the features:
    a table whose score count differs from the rnn model's training table (unless ``scored_already`` said
    so), and text far more unknown to a model than its training data was."""
    if not chunk:
        return []
    warnings = []
    rnn = next((feature.trained for feature in features if feature.spec.name == "rnn"), None)
    expected = rnn.info.get("table_scores") if rnn is not None else None
    if table and not scored_already and expected is not None and len(chunk[0].scores) != expected:
        warnings.append(f"{input_path} has {len(chunk[0].scores)} scores per line, but the model was trained on "
                        f"a table with {expected}: was it scored already?")
    for feature in features:
        for side, codec, trained_coverage in _vocabularies(feature):
            ids = [i for pair in chunk for i in codec.ids(getattr(pair, side))]
            unknown, trained_unknown = sum(i == UNK_ID for i in ids) / max(len(ids), 1), 1 - trained_coverage
            if unknown > max(3 * trained_unknown, trained_unknown + 0.10):
                warnings.append(
                    f"{100 * unknown:.0f}% of the {side} tokens of the first {len(chunk):,} lines of {input_path} "
                    f"are unknown to the {feature.spec.name} model ({100 * trained_unknown:.0f}% in its training "
                    f"data): is the text in the other direction, of another language or tokenised otherwise?")
    return warnings


def _vocabularies(feature: Feature) -> list[tuple[str, object, float]]:
    """(side, codec, share of training words covered) of each side a feature's model reads words of."""
    trained = getattr(feature, "trained", None)
    coverage = trained.info.get("coverage") if trained is not None else None
    if coverage is None:
        return []
    if isinstance(coverage, (int, float)):  # a CSLM: the target side
        return [("target", trained.codec, float(coverage))]
    return [("source", trained.text.source, coverage[0]), ("target", trained.text.target, coverage[1])]
