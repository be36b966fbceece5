"""Pruning a phrase table by a ranking of each source phrase's targets: the RNN's, a column's, the decoder's.

C14 (Secs. 4 and 6) points out that the RNN Encoder-Decoder, trained on the table, knows which
targets of a source phrase are linguistically regular. This job keeps, for every source phrase, the
targets its ranking puts first and drops the rest:

- the **ranking** of a line: the log of one score column (the ``rnn`` column of a scored table, or
  p(e|f), Moses' third score, as a baseline), or the decoder's own view of the phrase table: the
  weighted sum of Moses' ``max(ln score, -100)`` of every column with the weights of a tuned moses.ini;
- the **selection**: the ``top`` K targets of each source; those within a ``margin`` (nats) of the
  source's best; or a ``share`` of the table's lines (the margin that keeps that share, found in a
  first pass). A source always keeps its best target.

The table is read as Moses writes it, sorted as ``LC_ALL=C sort`` sorts whole lines (a source's
lines are adjacent), in one pass and constant memory; a line out of that order is refused, naming
it. Every kept line is written byte for byte, in order. A lexical reordering table of the same
system is pruned the same way in the same pass, keeping exactly the pairs the phrase table keeps:
it must hold the phrase table's pairs line for line (Moses needs the two to agree), and the first
line that differs is refused, naming both lines; the outputs appear only when both are whole, so
a refusal half-way leaves none of them.

What must agree is checked before the first line is read: the table's sidecar must describe it
(:func:`~mosesrnn.formats.sidecar.read_table_sidecar`; it names the rnn column and is copied into
the pruned table's), and a moses.ini's phrase-table weights must be as many as the table's scores.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from ..errors import MosesRNNError
from ..formats.moses_ini import feature_phrase_tables, is_phrase_table_name, pick_phrase_table, read_weights
from ..formats.phrase_table import PhraseEntry, PhraseTableError, count_scores, format_line, moses_log, read_entries
from ..formats.sidecar import Sidecar, SidecarError, read_table_sidecar, write_sidecar
from ..io.compressed import atomic_output
from ..io.readers import reader
from ..version import __version__

__all__ = ["Ranking", "Selection", "PruneSummary", "run_prune_job", "sorted_groups", "margin_for_share", "ranking_for",
           "table_sidecar", "write_pruned_sidecar"]

#: The histogram of margins that --share reads its threshold from: bins of this many nats, up to 100.
_BIN, _BINS = 0.01, 10001
_SAME_PAIRS = ("the reordering table must hold the phrase table's pairs, line for line (the same system's two "
               "tables, both sorted as Moses sorts them)")


@dataclass(frozen=True)
class Ranking:
    """How a line is ranked among its source's targets: ``column`` (0-based) alone, or ``weights`` of every
    column (Moses' view); higher is better. ``name`` says which, for the record."""

    name: str
    column: int | None = None
    weights: tuple[float, ...] | None = None

    def score(self, path: str, entry: PhraseEntry) -> float:
        """The ranking score of one line; raises PhraseTableError naming the line when it lacks the columns."""
        if self.weights is not None:
            if len(entry.scores) != len(self.weights):
                raise PhraseTableError(path, entry.line_no, f"{len(entry.scores)} scores, but {self.name} has "
                                       f"{len(self.weights)} weights")
            return math.fsum(w * moses_log(s) for w, s in zip(self.weights, entry.scores))
        if not -len(entry.scores) <= self.column < len(entry.scores):
            raise PhraseTableError(path, entry.line_no, f"no score column {self.column} to rank by: the line has "
                                   f"{len(entry.scores)} scores")
        return moses_log(entry.scores[self.column])


@dataclass(frozen=True)
class Selection:
    """Which targets of a source stay: the ``top`` K, those within ``margin`` nats of the best, or a ``share``
    of the table's lines (exactly one is given)."""

    top: int | None = None
    margin: float | None = None
    share: float | None = None

    def __post_init__(self):
        given = [name for name in ("top", "margin", "share") if getattr(self, name) is not None]
        if len(given) != 1:
            raise MosesRNNError("give one of --top K, --margin NATS, --share FRACTION")
        if (self.top is not None and self.top < 1) or (self.margin is not None and self.margin < 0) or \
                (self.share is not None and not 0 < self.share <= 1):
            raise MosesRNNError("--top is a count of at least 1, --margin a number of nats >= 0, --share in (0, 1]")

    def keep(self, scores: Sequence[float]) -> list[bool]:
        """Which of one source's targets (by their scores, in table order) are kept; ties keep table order."""
        best = max(scores)
        if self.top is not None:
            order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:self.top]
            chosen = set(order)
            return [i in chosen for i in range(len(scores))]
        return [best - score <= self.margin for score in scores]

    def describe(self) -> str:
        """``top 10``, ``margin 2.5``, ``share 0.5``."""
        return next(f"{name} {getattr(self, name)}" for name in ("top", "margin", "share")
                    if getattr(self, name) is not None)


@dataclass(frozen=True)
class PruneSummary:
    """What a pruning kept: lines and sources of the phrase table (and of the reordering table)."""

    lines: int
    kept: int
    sources: int
    margin: float | None = None  # the margin a --share chose
    reordering_lines: int | None = None
    reordering_kept: int | None = None


def _key(entry: PhraseEntry) -> bytes:
    """What orders a line in a table sorted as Moses sorts it: its source and target with their separators."""
    return f"{entry.source} ||| {entry.target} |||".encode("utf-8")


@reader
def sorted_groups(path: str, encoding: str = "utf-8") -> Iterator[list[PhraseEntry]]:
    """The runs of lines of each source phrase of a table sorted as ``LC_ALL=C sort`` sorts it, in constant
    memory, as a :class:`~mosesrnn.io.readers.Reader`; raises PhraseTableError at the first line out of that
    order."""
    group: list[PhraseEntry] = []
    previous = b""
    with read_entries(path, encoding) as entries:
        for entry in entries:
            key = _key(entry)
            if key < previous:
                raise PhraseTableError(path, entry.line_no, f"out of order: the table must be sorted as Moses "
                                       f"writes it (LC_ALL=C sort), and {entry.source!r} ||| {entry.target!r} comes "
                                       f"after the line before it (sort it with: zcat TABLE | LC_ALL=C sort | gzip > "
                                       f"SORTED.gz)")
            previous = key
            if group and entry.source != group[0].source:
                yield group
                group = []
            group.append(entry)
    if group:
        yield group


def margin_for_share(path: str, ranking: Ranking, share: float, encoding: str = "utf-8") -> float:
    """The margin (nats below each source's best) that keeps ``share`` of the table's lines (a first pass, a
    histogram of margins in 0.01-nat bins: constant memory)."""
    counts, lines = [0] * _BINS, 0
    with sorted_groups(path, encoding) as groups:
        for group in groups:
            scores = [ranking.score(path, entry) for entry in group]
            best = max(scores)
            for score in scores:
                counts[min(int((best - score) / _BIN), _BINS - 1)] += 1
            lines += len(group)
    wanted, seen = share * lines, 0
    for index, count in enumerate(counts):
        seen += count
        if seen >= wanted:
            return (index + 1) * _BIN
    return _BINS * _BIN


def _pair(entry: PhraseEntry) -> str:
    return f"'{entry.source} ||| {entry.target}'"


class _Reordering:
    """The lines of a reordering table, read along with the phrase table's: the same pairs, line for line; each
    kept when its pair is. A line that differs raises PhraseTableError naming both (the outputs are then
    removed, unfinished, by their atomic writers). The reading and the output are open inside ``with``."""

    def __init__(self, path: str, output: str, encoding: str, table: str):
        self.path, self.output, self.encoding, self.table = path, output, encoding, table
        self._open: contextlib.ExitStack | None = None
        self._lines, self.stream, self.lines, self.kept = None, None, 0, 0

    def __enter__(self) -> "_Reordering":
        with contextlib.ExitStack() as opened:
            self._lines = opened.enter_context(read_entries(self.path, self.encoding))
            self.stream = opened.enter_context(atomic_output(self.output))
            self._open = opened.pop_all()
        return self

    def __exit__(self, *exc_info) -> bool | None:
        return self._open.__exit__(*exc_info)

    def pair(self, entry: PhraseEntry, kept: bool) -> None:
        """Write the reordering line of ``entry``'s pair if the phrase table keeps it."""
        line = next(self._lines, None)
        if line is None:
            raise PhraseTableError(self.path, self.lines + 1, f"the reordering table ends, but {self.table}:"
                                   f"{entry.line_no} holds {_pair(entry)}: {_SAME_PAIRS}")
        if _key(line) != _key(entry):
            raise PhraseTableError(self.path, line.line_no, f"{_pair(line)}, but {self.table}:{entry.line_no} holds "
                                   f"{_pair(entry)}: {_SAME_PAIRS}")
        self.lines += 1
        if kept:
            self.stream.write(format_line(line).encode("utf-8"))
            self.kept += 1

    def finish(self) -> None:
        """Raise PhraseTableError if the reordering table goes on after the phrase table's last line."""
        extra = next(self._lines, None)
        if extra is not None:
            raise PhraseTableError(self.path, extra.line_no, f"{_pair(extra)}, but the phrase table {self.table} "
                                   f"ends at line {extra.line_no - 1}: {_SAME_PAIRS}")


def run_prune_job(path: str, output: str, ranking: Ranking, selection: Selection, *,
                  reordering: str | None = None, reordering_output: str | None = None, encoding: str = "utf-8",
                  progress: Callable[[int], None] | None = None) -> PruneSummary:
    """Write to ``output`` the lines of the phrase table ``path`` that ``selection`` keeps by ``ranking`` (see
    the module docstring), and the matching lines of ``reordering`` to ``reordering_output``; each output
    appears whole or not at all."""
    if (reordering is None) != (reordering_output is None):
        raise MosesRNNError("give both the reordering table and its output, or neither")
    margin = margin_for_share(path, ranking, selection.share, encoding) if selection.share is not None else None
    chosen = Selection(margin=margin) if margin is not None else selection
    lines = kept = sources = 0
    with atomic_output(output) as stream, (_Reordering(reordering, reordering_output, encoding, path) if reordering
                                           else _NoReordering()) as moved, sorted_groups(path, encoding) as groups:
        for group in groups:
            decisions = chosen.keep([ranking.score(path, entry) for entry in group])
            for entry, keep in zip(group, decisions):
                if keep:
                    stream.write(format_line(entry).encode("utf-8"))
                moved.pair(entry, keep)
            lines, kept, sources = lines + len(group), kept + sum(decisions), sources + 1
            if progress:
                progress(lines)
        moved.finish()
    return PruneSummary(lines, kept, sources, margin, *((moved.lines, moved.kept) if reordering else (None, None)))


class _NoReordering:
    def __enter__(self) -> "_NoReordering":
        return self

    def __exit__(self, *exc_info) -> None:
        return None

    def pair(self, entry: PhraseEntry, kept: bool) -> None:
        """Nothing to keep in step."""

    def finish(self) -> None:
        """Nothing to finish."""


def ranking_for(table: str, column: int | None = None, weights: str | None = None, feature: str | None = None,
                encoding: str = "utf-8") -> Ranking:
    """The ranking a pruning asks for: score ``column``; the phrase-table weights of a tuned moses.ini (its
    feature ``feature``, or the phrase table it declares); else the rnn column the table's sidecar names.

    The table's sidecar is checked against the table whichever the ranking (the pruned table's sidecar copies
    it). Raises MosesRNNError saying what to give when none fits, or what disagrees: a sidecar of another table,
    phrase-table weights that are not as many as the table's scores.
    """
    if column is not None and weights is not None:
        raise MosesRNNError("rank by --column or by --weights, not both")
    sidecar = table_sidecar(table, encoding)
    if weights is not None:
        name, values = _phrase_table_weights(weights, table, feature, encoding)
        return Ranking(f"the {name} weights of {os.path.basename(weights)}", weights=values)
    if column is not None:
        return Ranking(f"score column {column}", column=column)
    columns = list(sidecar.appended_columns) if sidecar else []
    if "rnn" not in columns:
        try:
            read_table_sidecar(table, encoding)
            why = f"no rnn column named in its sidecar ({table}.json, which `mosesrnn score` writes)"
        except SidecarError as error:  # a damaged or foreign file: say so rather than "no rnn column"
            why = f"its sidecar cannot say which column is the rnn's ({error})"
        raise MosesRNNError(f"{table}: {why}: rank by --column N (2 is p(e|f)) or by a tuned moses.ini's --weights")
    return Ranking("the rnn column", column=columns.index("rnn") - len(columns))


def table_sidecar(table: str, encoding: str = "utf-8") -> Sidecar | None:
    """The sidecar of the table to prune, checked against it (a sidecar of another table raises
    :class:`~mosesrnn.formats.sidecar.SidecarMismatch`); None without one, or for a file that is not one."""
    try:
        return read_table_sidecar(table, encoding)
    except SidecarError:
        return None


def _phrase_table_weights(ini: str, table: str, feature: str | None, encoding: str) -> tuple[str, tuple[float, ...]]:
    """The name and weights of the phrase table's feature in the moses.ini (or weights file) ``ini``: ``feature``,
    or the one phrase table it has (of several, the one with as many weights as ``table`` has scores). Raises
    MosesRNNError naming the file, the feature and both counts when the weights are not as many as the scores."""
    groups, tables = read_weights(ini), feature_phrase_tables(ini)
    width = count_scores(table, encoding)
    if feature is not None and feature not in groups:
        raise MosesRNNError(f"{ini} has no weights of {feature} (it has {', '.join(groups)})")
    named = [name for name in groups
             if (name in tables if tables is not None else name == feature or is_phrase_table_name(name))]
    chosen = pick_phrase_table(named, feature, fits=lambda name: len(groups[name]) == width)
    if len(chosen) != 1:
        if feature is not None:
            raise MosesRNNError(f"{ini}: {feature} is not a phrase table (its phrase tables: "
                                f"{', '.join(tables) or 'none'}): name the phrase table's feature with --feature")
        if not named:
            raise MosesRNNError(f"{ini}: no phrase table's weights among {', '.join(groups) or 'none'}: name the "
                                f"phrase table's feature with --feature")
        raise MosesRNNError(f"{ini}: {len(chosen) or 'none'} of its phrase tables "
                            f"({', '.join(f'{n} {len(groups[n])}' for n in named)} weights) have the {width} "
                            f"scores of {table}: name the table's feature with --feature")
    if len(groups[chosen[0]]) != width:
        raise MosesRNNError(f"{ini}: the phrase table {chosen[0]} has {len(groups[chosen[0]])} weights, but {table} "
                            f"has {width} scores a line: give the moses.ini tuned for this table (for a scored table, "
                            f"one that `mosesrnn moses-ini` pointed at it)")
    return chosen[0], groups[chosen[0]]


def write_pruned_sidecar(table: str, output: str, ranking: Ranking, selection: Selection,
                         summary: PruneSummary) -> None:
    """``OUTPUT.json``: the input's sidecar (its scoring, if it was scored) with the lines kept and how."""
    if output == "-":
        return
    source = table_sidecar(table)
    pruned = {"input": os.path.abspath(table), "by": ranking.name, "selection": selection.describe(),
              "lines": summary.lines, "kept": summary.kept, "sources": summary.sources,
              **({"margin": summary.margin} if summary.margin is not None else {}),
              **({"reordering_lines": summary.reordering_lines, "reordering_kept": summary.reordering_kept}
                 if summary.reordering_lines is not None else {})}
    if source is None:
        source = Sidecar(signature=f"mosesrnn:{__version__}|features:|pruned", mosesrnn_version=__version__,
                         input=os.path.abspath(table), input_bytes=os.path.getsize(table), shard="1/1", first_line=1,
                         last_line=0, lines=0, total_lines=0, bytes=0, appended_columns=(), features=())
    write_sidecar(output, dataclasses.replace(source, shard="1/1", first_line=1, last_line=summary.kept,
                                              lines=summary.kept, total_lines=summary.kept,
                                              bytes=os.path.getsize(output), merged_from=None, pruned=pruned))
