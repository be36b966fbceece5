"""The ``mosesrnn`` command line: each command parses its options and calls one library function."""
from __future__ import annotations

import logging
import os
import signal
import sys

import click

from . import __version__
from .features import UNK_SIDES, UnknownWordFeature
from .phrase_table import PhraseTableError, read_entries
from .progress import ProgressBar
from .score import score_table
from .vocab import VocabularyPair, build_vocabularies

log = logging.getLogger("mosesrnn")

TABLE = click.Path(dir_okay=False, allow_dash=True)
ENCODING = click.option(
    "--encoding", default="utf-8", show_default=True,
    help="Text encoding of the phrase table; Moses tables are UTF-8. Use e.g. latin-1 to read a "
         "legacy table on purpose (the output is always UTF-8).")
QUIET = click.option("--quiet", "-q", is_flag=True, help="No progress bar or log messages, only errors.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mosesrnn")
def main() -> None:
    """Train the RNN Encoder-Decoder of Cho et al. (2014) on a Moses phrase table and add its
    scores (and an unknown-word penalty) to the table as new feature columns.

    \b
    Typical use:
      mosesrnn vocab phrase-table.gz -o vocab/
      mosesrnn score phrase-table.gz --vocab vocab/ -o scored.gz
      mosesrnn moses-ini moses.ini --table scored.gz --add 1 -o moses.rnn.ini

    Logs go to stderr, data to stdout or the -o file. Gzip (.gz) is read and written
    transparently; '-' means stdin/stdout.
    """
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `mosesrnn score ... -o - | head` ends quietly


def _setup_logging(quiet: bool) -> None:
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO,
                        format="mosesrnn: %(message)s", stream=sys.stderr, force=True)


def _fail(error: Exception) -> click.ClickException:
    return click.ClickException(str(error))


@main.command()
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
    _setup_logging(quiet)
    try:
        with ProgressBar("reading", quiet=quiet) as bar:
            vocabularies, report = build_vocabularies(bar.track_entries(read_entries(table, encoding)),
                                                      size, target_size)
    except (PhraseTableError, FileNotFoundError) as error:
        raise _fail(error) from None
    vocabularies.save(output_dir)
    log.info("%s", report)
    log.info("wrote %s (%d words) and %s (%d words)", os.path.join(output_dir, "source.vocab"),
             len(vocabularies.source), os.path.join(output_dir, "target.vocab"), len(vocabularies.target))


@main.command()
@click.argument("table", type=TABLE)
@click.option("-o", "--output", required=True, type=TABLE,
              help="The scored table ('-' for stdout). Written to a temporary file and renamed when "
                   "complete; a JSON signature goes next to it as OUTPUT.json.")
@click.option("--vocab", "vocab_dir", type=click.Path(file_okay=False, exists=True),
              help="Directory with the shortlists from `mosesrnn vocab` (for --features unk).")
@click.option("--features", default="unk", show_default=True,
              help="Comma-separated feature columns to append, in this order. unk: e^n for the n "
                   "words outside the shortlists, so Moses' ln() sees n.")
@click.option("--unk-side", type=click.Choice(UNK_SIDES), default="both", show_default=True,
              help="Which words the unk feature counts.")
@click.option("--chunk-lines", default=20000, show_default=True, type=click.IntRange(1),
              help="Lines read, scored and written per chunk.")
@ENCODING
@QUIET
def score(table, output, vocab_dir, features, unk_side, chunk_lines, encoding, quiet):
    """Append feature columns to every line of a phrase table.

    The values go at the end of the third (scores) field, where Moses reads dense features;
    every other field is copied byte for byte, and the output has the input's lines in the
    input's order. Remember to raise num-features in moses.ini (`mosesrnn moses-ini`).

    \b
    Example:
      mosesrnn score examples/phrase-table.gz --vocab vocab/ --features unk -o scored.gz
    """
    _setup_logging(quiet)
    names = [name.strip() for name in features.split(",") if name.strip()]
    columns = []
    for name in names:
        if name != "unk":
            raise click.BadParameter(f"unknown feature {name!r} (choose from: unk)", param_hint="--features")
        if vocab_dir is None:
            raise click.BadParameter("the unk feature needs --vocab", param_hint="--vocab")
        columns.append(UnknownWordFeature(VocabularyPair.load(vocab_dir), unk_side))
    try:
        with ProgressBar("scoring", quiet=quiet) as bar:
            summary = score_table(table, output, columns, encoding=encoding,
                                  chunk_lines=chunk_lines, progress=bar.update_position)
    except (PhraseTableError, FileNotFoundError) as error:
        raise _fail(error) from None
    log.info("scored %d lines in %.1f s (%.0f lines/s); signature: %s", summary.lines,
             summary.seconds, summary.lines_per_second, summary.signature)
