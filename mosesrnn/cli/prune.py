"""``mosesrnn prune``: keep each source phrase's best targets, ranked by the RNN, a column, or the decoder."""
from __future__ import annotations

import logging

import click

from ..api import prune_table
from ..runtime.progress import Progress
from .common import ENCODING, QUIET, Command, FiniteFloat, setup_logging
from .paths import INPUT, OUTPUT, input_with, output_with

__all__ = ["prune"]

log = logging.getLogger("mosesrnn")


@click.command(cls=Command)
@click.argument("table", type=input_with(".json"))
@click.option("-o", "--output", required=True, type=output_with(".json"),
              help="The pruned table (.gz is compressed; written whole or not at all); OUTPUT.json records how.")
@click.option("--top", type=click.IntRange(1), help="Keep the K best targets of each source phrase.")
@click.option("--margin", type=FiniteFloat(0), metavar="NATS",
              help="Keep the targets within this many nats (log score) of their source's best.")
@click.option("--share", type=FiniteFloat(0, 1, min_open=True), metavar="FRACTION",
              help="Keep this share of the table's lines: the margin that keeps it, found in a first pass.")
@click.option("--column", type=int, metavar="N",
              help="Rank by score column N (0-based; 2 is p(e|f) in Moses' order p(f|e) lex(f|e) p(e|f) lex(e|f)) "
                   "[default: the rnn column the table's sidecar names].")
@click.option("--weights", type=INPUT, metavar="INI",
              help="Rank as the decoder does: the weighted sum of every column's max(ln score, -100) with the "
                   "phrase table's weights in this (tuned) moses.ini.")
@click.option("--feature", "feature_name", metavar="NAME",
              help="With --weights: the phrase table's feature (e.g. TranslationModel0), when the ini has several; "
                   "its weights must be as many as the table's scores.")
@click.option("--reordering", type=INPUT, metavar="TABLE",
              help="The system's lexical reordering table (the phrase table's pairs, line for line): pruned the "
                   "same way, to --reordering-output.")
@click.option("--reordering-output", type=OUTPUT, metavar="OUT", help="The pruned reordering table.")
@ENCODING
@QUIET
def prune(table, output, top, margin, share, column, weights, feature_name, reordering, reordering_output, encoding,
          quiet):
    """Keep, for every source phrase of TABLE, the targets a ranking puts first: C14's RNN Encoder-Decoder as
    a judge of which targets are regular (the rnn column of a table `mosesrnn score` scored), or a column
    (p(e|f), the baseline), or the decoder's own weighted sum with a tuned moses.ini.

    TABLE is read as Moses writes it (sorted as LC_ALL=C sort sorts lines), once, in constant memory; a line
    out of that order is refused. Kept lines are copied byte for byte, in order; a source always keeps its
    best target. Give --reordering and --reordering-output to prune the reordering table the same way.
    Files that must agree are checked together: TABLE.json must describe TABLE, the moses.ini's phrase
    table must have a weight per score, the reordering table the same pairs line for line.

    \b
    Example:
      mosesrnn prune scored.gz --top 10 -o pruned.gz                      # by the rnn column
      mosesrnn prune scored.gz --share 0.5 --weights tune/system-run1/moses.ini -o half.gz \\
          --reordering reordering.gz --reordering-output half.reordering.gz
      mosesrnn prune phrase-table.gz --column 2 --top 10 -o by-pef.gz     # the baseline: p(e|f)
    """
    setup_logging(quiet)
    with Progress("pruning", quiet=quiet) as progress:
        summary = prune_table(table, output, top=top, margin=margin, share=share, column=column, weights=weights,
                              feature_name=feature_name, reordering=reordering, reordering_output=reordering_output,
                              encoding=encoding, progress=progress.update_position)
    chosen = f" (margin {summary.margin:.2f} nats)" if summary.margin is not None else ""
    log.info("kept %d of %d lines (%.1f%%) of %d source phrases%s", summary.kept, summary.lines,
             100 * summary.kept / max(summary.lines, 1), summary.sources, chosen)
    if summary.reordering_lines is not None:
        log.info("reordering table: kept %d of %d lines", summary.reordering_kept, summary.reordering_lines)
