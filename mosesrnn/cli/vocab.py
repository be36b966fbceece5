"""``mosesrnn vocab``: the source and target shortlists of a phrase table."""
from __future__ import annotations

import logging
import os

import click

from ..formats.phrase_table import PhraseTableError, read_entries
from ..progress import ProgressBar
from ..text.vocab import build_vocabularies
from .common import ENCODING, QUIET, TABLE, fail, setup_logging

log = logging.getLogger("mosesrnn")


@click.command()
@click.argument("table", type=TABLE)
@click.option("-o", "--output", "output_dir", required=True, type=click.Path(file_okay=False),
              help="Directory to write source.vocab and target.vocab into.")
@click.option("--size", default=15000, show_default=True, type=click.IntRange(1),
              help="Shortlist size per language (the paper keeps the 15,000 most frequent words).")
@click.option("--target-size", type=click.IntRange(1),
              help="Target shortlist size, if it differs from --size.")
@ENCODING
@QUIET
def vocab(table, output_dir, size, target_size, encoding, quiet):
    """Build the source and target shortlists from a phrase table.

    Words are counted over the unique phrase pairs (frequencies in the table are ignored, as in
    the paper), factor 0 only; the most frequent are kept, ties broken alphabetically so the
    files are reproducible. The share of running words covered is reported on stderr.

    \b
    Example:
      mosesrnn vocab examples/phrase-table.gz -o vocab/ --size 15000
    """
    setup_logging(quiet)
    try:
        with ProgressBar("reading", quiet=quiet) as bar:
            vocabularies, report = build_vocabularies(bar.track_entries(read_entries(table, encoding)),
                                                      size, target_size)
    except (PhraseTableError, FileNotFoundError) as error:
        raise fail(error) from None
    vocabularies.save(output_dir)
    log.info("%s", report)
    log.info("wrote %s (%d words) and %s (%d words)", os.path.join(output_dir, "source.vocab"),
             len(vocabularies.source), os.path.join(output_dir, "target.vocab"), len(vocabularies.target))
