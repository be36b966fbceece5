"""Phrase-table augmentation: the RNN proposes target phrases the table lacks (C14, Sec. 4.3's outlook).

The table is streamed in groups of adjacent lines with the same source phrase (tables from
train-model.perl are sorted by source; a source that comes back after another is refused). For
each group, the source is translated by beam search and its ``per_source`` best hypotheses that are
not among the group's targets become new lines, written right after the group, so a sorted table
stays sorted by source. Every line, old and new, gets the rnn column (``e^{log p}``, 9 digits, the
value `mosesrnn score --features rnn` writes).

The other score columns of a new line: for each column, the lowest value it has among the
source's existing targets (the token copied byte for byte). The translation model then never
favours a proposal over a real entry of the same source, and the rnn column decides. Alignment and
counts are left empty (Moses reads an empty alignment as none; it skips counts).
"""
from __future__ import annotations

import io
from dataclasses import dataclass

from ..encdec.generate import Searcher
from ..encdec.scoring import PairScorer
from ..errors import MosesRNNError
from ..features.registry import FEATURES
from ..formats.phrase_table import PhraseEntry, format_line, source_groups, table_value
from ..io.compressed import atomic_output

__all__ = ["AugmentSummary", "augment_table", "new_line"]


@dataclass
class AugmentSummary:
    lines: int = 0  # table lines read and written
    sources: int = 0  # distinct source phrases
    searched_sources: int = 0
    new_pairs: int = 0
    proposals_in_table: int = 0  # beam hypotheses the table already had


@dataclass(frozen=True)
class NewPair:
    """A proposed pair: ``entry`` is its line's parsed form (scores without the rnn column)."""

    entry: PhraseEntry
    rank: int  # 1 = the beam's best


def new_line(group: list[PhraseEntry], target: str) -> PhraseEntry:
    """The line of a new pair (source of ``group``, ``target``): each score column's lowest token
    among the group's lines, the later fields emptied; as many fields and the same line ending."""
    first = group[0]
    columns = zip(*(zip(entry.scores, entry.fields[2].split()) for entry in group))
    lowest = [min(column)[1] for column in columns]  # (value, token) pairs: min by value
    rest = tuple(" " if i < len(first.fields) - 4 else (" " if field.strip() else field)
                 for i, field in enumerate(first.fields[3:]))
    fields = (f"{first.source} ", f" {target} ", f" {' '.join(lowest)} ", *rest)
    return PhraseEntry(0, fields, tuple(float(token) for token in lowest), first.ending or "\n")


def _proposals(groups: list[list[PhraseEntry]], searcher: Searcher, beam_size: int, per_source: int,
               summary: AugmentSummary) -> list[list[NewPair]]:
    """Each group's new pairs: its best beam hypotheses that it lacks."""
    found = searcher.translate([group[0].source for group in groups], beam_size=beam_size, nbest=per_source)
    proposals = []
    for group, hyps in zip(groups, found):
        targets = {entry.target for entry in group}
        fresh = [NewPair(new_line(group, hyp.text), rank) for rank, hyp in enumerate(hyps, 1)
                 if hyp.text and hyp.text not in targets]
        summary.proposals_in_table += sum(hyp.text in targets for hyp in hyps)
        proposals.append(fresh)
    return proposals


def _write_chunk(groups, proposals, rnn: PairScorer, out, listing, summary: AugmentSummary) -> None:
    """Score every old and new line of the chunk, write them, list the new pairs."""
    digits = FEATURES["rnn"].table_digits
    lines = [(entry, None) for group, fresh in zip(groups, proposals)
             for entry in (*group, *(pair.entry for pair in fresh))]
    ranks = {id(pair.entry): pair.rank for fresh in proposals for pair in fresh}
    values = rnn.log_probs([entry for entry, _ in lines])
    for (entry, _), value in zip(lines, values):
        out.write(format_line(entry, [table_value(value, digits)]).encode("utf-8"))
        if id(entry) in ranks:
            listing.write(f"{entry.source}\t{entry.target}\t{value:.6f}\t{ranks[id(entry)]}\n")
    summary.new_pairs += len(ranks)
    summary.lines += sum(len(group) for group in groups)


def augment_table(path: str, output: str, searcher: Searcher, *, beam_size: int = 10, per_source: int = 3,
                  max_sources: int | None = None, new_pairs_path: str | None = None, encoding: str = "utf-8",
                  chunk_sources: int = 256) -> AugmentSummary:
    """Write ``path`` with the rnn column and the new pairs to ``output``; list them in ``new_pairs_path``."""
    if searcher.trained.direction != "source-to-target":
        raise MosesRNNError("augment needs a source-to-target model (it proposes target phrases); "
                            f"this one is {searcher.trained.direction}")
    summary = AugmentSummary()
    rnn = PairScorer(searcher.trained, device=searcher.device, dtype=searcher.precision.name)
    with atomic_output(output) as out, atomic_output(new_pairs_path or output + ".new.tsv") as raw_listing, \
            source_groups(path, encoding) as groups:
        listing = io.TextIOWrapper(raw_listing, encoding="utf-8", newline="\n")
        listing.write("source\ttarget\trnn_log_p\tbeam_rank\n")
        chunk: list[list[PhraseEntry]] = []
        for group in groups:
            chunk.append(group)
            summary.sources += 1
            if len(chunk) == chunk_sources:
                _process(chunk, searcher, rnn, out, listing, summary, beam_size, per_source, max_sources)
                chunk = []
        _process(chunk, searcher, rnn, out, listing, summary, beam_size, per_source, max_sources)
        listing.flush()
        listing.detach()
    return summary


def _process(chunk, searcher, rnn, out, listing, summary, beam_size, per_source, max_sources) -> None:
    if not chunk:
        return
    room = len(chunk) if max_sources is None else max(0, min(len(chunk), max_sources - summary.searched_sources))
    proposals = _proposals(chunk[:room], searcher, beam_size, per_source, summary) if room else []
    summary.searched_sources += room
    proposals += [[] for _ in chunk[room:]]
    _write_chunk(chunk, proposals, rnn, out, listing, summary)
