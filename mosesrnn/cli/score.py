"""``mosesrnn score``: append feature columns to every line of a phrase table."""
from __future__ import annotations

import logging

import click

from ..api import score_table
from ..runtime.progress import Progress
from .common import ENCODING, QUIET, Command, FiniteFloat, setup_logging
from .features import feature_options
from .paths import SCORED_TABLE, input_with

log = logging.getLogger("mosesrnn")


def _shard(ctx, param, value):
    """``--shard I/N`` checked as it is parsed (a usage error); ``auto`` resolved from the launcher's environment."""
    from ..pipeline.shards import ShardSpec
    try:
        return str(ShardSpec.parse(value))
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


class WorkerCount(click.ParamType):
    """``--workers N`` (N >= 0) or ``auto`` (None: chosen from the table's size and the cores)."""

    name = "N|auto"

    def convert(self, value, param, ctx):
        """The count, or None for auto."""
        if value is None or isinstance(value, int):
            return value
        if value == "auto":
            return None
        if not value.isdigit():
            self.fail(f"must be a number of processes (0 or more) or auto, not {value!r}", param, ctx)
        return int(value)


@click.command(cls=Command)
@click.argument("table", type=input_with(".json"))
@click.option("-o", "--output", required=True, type=SCORED_TABLE,
              help="The scored table ('-' for stdout). Written as OUTPUT.part and renamed when "
                   "complete; a JSON signature and line range go next to it as OUTPUT.json.")
@feature_options("Each column holds e^v, so that Moses' ln() sees the value v.")
@click.option("--shard", default="1/1", show_default=True, metavar="I/N|auto", callback=_shard,
              help="Score only the I-th of N contiguous parts, cut at source-phrase boundaries; join the parts "
                   "with `mosesrnn merge`. auto: I and N from torchrun's RANK and WORLD_SIZE, or from Slurm "
                   "(a job array's task id and count, or SLURM_PROCID and SLURM_NTASKS).")
@click.option("--resume/--restart", default=True, show_default=True,
              help="Continue a stopped or killed run of the same command from its last checkpoint (the "
                   "default, when there is one), or start over.")
@click.option("--checkpoint-every", default=25, show_default=True, type=click.IntRange(1),
              help="Chunks between checkpoints (each ends a gzip member and records progress).")
@click.option("--checkpoint-minutes", default=5.0, show_default=True, type=FiniteFloat(0, min_open=True),
              help="Also checkpoint after the first chunk that ends this long after the last checkpoint.")
@click.option("--chunk-lines", default=20000, show_default=True, type=click.IntRange(1),
              help="Lines read, scored and written per chunk.")
@click.option("--workers", default="auto", show_default=True, type=WorkerCount(),
              help="Processes that read, parse, encode, format and compress the chunks beside the one that runs "
                   "the models, so that a GPU is kept busy (the output is the same, byte for byte). 0: all in one "
                   "process. auto: one a core but one, at most 8, and none for a table under 8 MB. Without "
                   "--threads, the model's CPU threads are the cores the workers leave.")
@ENCODING
@QUIET
def score(table, output, features, shard, resume, checkpoint_every, checkpoint_minutes, chunk_lines,
          workers, encoding, quiet):
    """Append feature columns to every line of a phrase table.

    The values go at the end of the third (scores) field, where Moses reads dense features;
    every other field is copied byte for byte, and the output has the input's lines in the
    input's order. Remember to raise num-features in moses.ini (`mosesrnn moses-ini`).

    Ctrl-C (or SIGTERM, e.g. a preempted Slurm job) writes what is done, checkpoints and exits
    with status 130; the same command continues from there, as it does after a crash or kill -9
    (from the last checkpoint: see --checkpoint-every, --checkpoint-minutes). --restart starts over.

    \b
    Example:
      mosesrnn score examples/phrase-table.gz -m model.pt -o scored.gz
      mosesrnn score examples/phrase-table.gz --vocab vocab/ --features unk -o scored.gz
      mosesrnn score big.gz -m model.pt --device cuda --workers 15 -o scored.gz
      mosesrnn score big.gz -m model.pt --shard 3/8 -o part3.gz   # then: mosesrnn merge part*.gz -o all.gz
      srun -n 8 mosesrnn score big.gz -m model.pt --shard auto -o part-$SLURM_PROCID.gz
    """
    setup_logging(quiet)
    with Progress("scoring", quiet=quiet) as progress:
        summary = score_table(table, output, features, encoding=encoding, chunk_lines=chunk_lines, shard=shard,
                              resume=resume, checkpoint_every=checkpoint_every,
                              checkpoint_minutes=checkpoint_minutes, workers=workers,
                              progress=progress.update_position)
    log.info("scored %d lines (%d-%d) in %.1f s (%.0f lines/s; CPU a line: %s); signature: %s", summary.lines,
             summary.first_line, summary.last_line, summary.seconds, summary.lines_per_second, summary.cpu_per_line(),
             summary.signature)
