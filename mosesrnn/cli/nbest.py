"""``mosesrnn nbest``: add feature values to every hypothesis of a Moses n-best list."""
from __future__ import annotations

import logging

import click

from ..api import score_nbest
from ..runtime.progress import Progress
from .common import ENCODING, QUIET, Command, setup_logging
from .features import feature_options
from .paths import INPUT, OUTPUT

log = logging.getLogger("mosesrnn")


@click.command(cls=Command)
@click.argument("nbest", type=INPUT)
@click.option("--source", "source_path", required=True, type=INPUT,
              help="The source sentences the n-best list translates, one per line: sentence id i is line i+1 "
                   "(tokenised as the model's training data).")
@click.option("-o", "--output", default="-", show_default=True, type=OUTPUT,
              help="The n-best list with the new groups ('-' for stdout; .gz is compressed); written whole "
                   "or not at all.")
@feature_options("In an n-best list each value is written raw (RNN0= log p, UNK0= n): Moses takes no "
                 "logarithm of n-best values.", sentences=True)
@click.option("--word-scores", type=OUTPUT,
              help="Also write the rnn model's log p of each token of each hypothesis (its words or subword pieces, "
                   "then the end of sentence) to this file, one line per hypothesis: 'ID ||| hypothesis ||| s1 ... "
                   "sN sEOS' (as Marian's --word-scores; their sum is RNN0=).")
@click.option("--chunk-lines", default=20000, show_default=True, type=click.IntRange(1),
              help="Hypotheses read, scored and written per chunk.")
@ENCODING
@QUIET
def nbest(nbest, source_path, output, features, word_scores, chunk_lines, encoding, quiet):
    """Add the RNN log-probability (and the unknown-word count) to every hypothesis of an n-best list.

    The groups RNN0= and UNK0= go at the end of each line's feature field; everything else is
    kept byte for byte, one line per line, in order. Use a sentence-level model (`mosesrnn train
    --corpus SRC TRG`); then tune with `mosesrnn mert` and rerank with `mosesrnn rerank`.

    \b
    Example:
      mosesrnn nbest dev.100best.gz --source dev.tok.en -m sent-model/best.pt -o dev.100best.rnn.gz
      mosesrnn mert dev.100best.rnn.gz --refs dev.tok.fr -o weights.txt
    """
    setup_logging(quiet)
    with Progress("scoring", quiet=quiet, unit="hypotheses") as progress:
        summary = score_nbest(nbest, source_path, output, features, word_scores=word_scores,
                              chunk_lines=chunk_lines, encoding=encoding, progress=progress.update_position)
    log.info("added %s to %d hypotheses of %d sentences in %.1f s (%.0f hypotheses/s); features: %s",
             " ".join(f"{label}=" for label in summary.labels), summary.lines, summary.sentences, summary.seconds,
             summary.lines_per_second, ",".join(summary.features))
