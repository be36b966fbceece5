"""``mosesrnn merge``: join the shards of one scored table."""
from __future__ import annotations

import logging

import click

from ..pipeline.merge import merge_parts
from .common import QUIET, Command, setup_logging
from .paths import input_with, output_with

log = logging.getLogger("mosesrnn")


@click.command(cls=Command)
@click.argument("parts", nargs=-1, required=True, type=input_with(".json"))
@click.option("-o", "--output", required=True, type=output_with(".json"),
              help="The joined table ('-' for stdout, without a sidecar); its sidecar goes to OUTPUT.json.")
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
    summary = merge_parts(parts, output)
    log.info("merged %d parts, %d lines; signature: %s", summary.parts, summary.lines, summary.signature)
