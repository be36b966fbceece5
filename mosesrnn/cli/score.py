"""``mosesrnn score``: append feature columns to every line of a phrase table."""
from __future__ import annotations

import logging

import click

from ..api import score_table
from ..pipeline.shards import ShardSpec
from ..progress import ProgressBar
from .common import ENCODING, QUIET, TABLE, Command, setup_logging
from .features import feature_options

log = logging.getLogger("mosesrnn")


@click.command(cls=Command)
@click.argument("table", type=TABLE)
@click.option("-o", "--output", required=True, type=TABLE,
              help="The scored table ('-' for stdout). Written as OUTPUT.part and renamed when "
                   "complete; a JSON signature and line range go next to it as OUTPUT.json.")
@feature_options("Each column holds e^v, so that Moses' ln() sees the value v.")
@click.option("--shard", "shard_text", default="1/1", show_default=True, metavar="I/N",
              help="Score only the I-th of N contiguous parts, cut at source-phrase boundaries; "
                   "join the parts with `mosesrnn merge`.")
@click.option("--resume", is_flag=True,
              help="Continue a killed run of the same command from its last checkpoint.")
@click.option("--checkpoint-every", default=25, show_default=True, type=click.IntRange(1),
              help="Chunks between checkpoints (each ends a gzip member and records progress).")
@click.option("--checkpoint-minutes", default=5.0, show_default=True, type=click.FloatRange(0, min_open=True),
              help="Also checkpoint after the first chunk that ends this long after the last checkpoint.")
@click.option("--chunk-lines", default=20000, show_default=True, type=click.IntRange(1),
              help="Lines read, scored and written per chunk.")
@ENCODING
@QUIET
def score(table, output, request, shard_text, resume, checkpoint_every, checkpoint_minutes, chunk_lines,
          encoding, quiet):
    """Append feature columns to every line of a phrase table.

    The values go at the end of the third (scores) field, where Moses reads dense features;
    every other field is copied byte for byte, and the output has the input's lines in the
    input's order. Remember to raise num-features in moses.ini (`mosesrnn moses-ini`).

    Ctrl-C (or SIGTERM, e.g. a preempted Slurm job) writes what is done, checkpoints and exits
    with status 130; the same command with --resume continues from there. A crash or kill -9
    continues from the last checkpoint (see --checkpoint-every, --checkpoint-minutes).

    \b
    Example:
      mosesrnn score examples/phrase-table.gz -m model.pt -o scored.gz
      mosesrnn score examples/phrase-table.gz --vocab vocab/ --features unk -o scored.gz
      mosesrnn score big.gz -m model.pt --shard 3/8 -o part3.gz   # then: mosesrnn merge part*.gz -o all.gz
    """
    setup_logging(quiet)
    try:
        ShardSpec.parse(shard_text)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--shard") from None
    with ProgressBar("scoring", quiet=quiet) as bar:
        if table != "-" and shard_text == "1/1":
            bar.count_lines_in_background(table)
        summary = score_table(table, output, **request.keywords(), encoding=encoding, chunk_lines=chunk_lines,
                              shard=shard_text, resume=resume, checkpoint_every=checkpoint_every,
                              checkpoint_minutes=checkpoint_minutes, progress=bar.update_position)
    log.info("scored %d lines (%d-%d) in %.1f s (%.0f lines/s); signature: %s", summary.lines,
             summary.first_line, summary.end_line - 1, summary.seconds, summary.lines_per_second,
             summary.signature)
