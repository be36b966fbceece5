"""``mosesrnn merge``: join the shards of one scored table."""
from __future__ import annotations

import logging

import click

from ..job import Job
from ..pipeline.merge import merge_parts
from .common import QUIET, Command, setup_logging

log = logging.getLogger("mosesrnn")


@click.command(cls=Command)
@click.argument("parts", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The joined table; its sidecar goes to OUTPUT.json.")
@QUIET
def merge(parts, output, quiet):
    """Join the shards of a `mosesrnn score --shard I/N` run into one table.

    The sidecars (PART.json) must show the same input and signature, shards 1..N each exactly
    once, and line ranges that tile the whole table; the parts are then joined in shard order
    (gzip parts as a multi-member gzip file).

    \b
    Example:
      mosesrnn merge scored.part*.gz -o scored.gz
    """
    setup_logging(quiet)
    with Job(inputs=parts, outputs=[output]):
        summary = merge_parts(parts, output)
    log.info("merged %d parts, %d lines; signature: %s", summary.parts, summary.lines, summary.signature)
