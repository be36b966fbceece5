"""``mosesrnn vocab``: the source and target shortlists of a phrase table, or SentencePiece models."""
from __future__ import annotations

import contextlib
import logging
import os

import click

from ..formats.phrase_table import read_entries
from ..runtime.progress import Progress
from ..text.subwords import SPM_TYPES, VOCAB_DIR_FILES, train_subwords
from ..text.vocab import build_vocabularies
from .common import ENCODING, QUIET, Command, setup_logging
from .paths import INPUT, output_folder_writing

log = logging.getLogger("mosesrnn")


@click.command(cls=Command)
@click.argument("table", type=INPUT)
@click.option("-o", "--output", "output_dir", required=True,
              type=output_folder_writing(*VOCAB_DIR_FILES),
              help="Directory to write source.vocab and target.vocab into (with --spm: spm.json and "
                   "the .spm.model files).")
@click.option("--size", default=15000, show_default=True, type=click.IntRange(1),
              help="Shortlist size per language (the paper keeps the 15,000 most frequent words); with "
                   "--spm the number of pieces per model, reserved and byte pieces included.")
@click.option("--target-size", type=click.IntRange(1),
              help="Target shortlist size (or pieces), if it differs from --size.")
@click.option("--spm", "spm_type", type=click.Choice(SPM_TYPES),
              help="Train SentencePiece subword models of this type instead of word shortlists.")
@click.option("--joint", is_flag=True, help="With --spm: one model for both languages.")
@click.option("--byte-fallback/--no-byte-fallback", default=True, show_default=True,
              help="With --spm: spell characters outside the pieces as UTF-8 bytes, so no text is unknown.")
@click.option("--threads", default=1, show_default=True, type=click.IntRange(1),
              help="With --spm: trainer threads (the models' bytes depend on it).")
@ENCODING
@QUIET
def vocab(table, output_dir, size, target_size, spm_type, joint, byte_fallback, threads, encoding, quiet):
    """Build the source and target shortlists from a phrase table.

    Words are counted over the unique phrase pairs (frequencies in the table are ignored, as in
    the paper), factor 0 only; the most frequent are kept, ties broken alphabetically so the
    files are reproducible. The share of running words covered is reported on stderr.

    \b
    With --spm, SentencePiece models (unigram or bpe) are trained on the same unique pairs' text
    instead (Moses words, factor 0), one per language or one --joint model; `mosesrnn train
    --vocab DIR` then trains a subword model, and its model file carries the SentencePiece models.

    \b
    Example:
      mosesrnn vocab examples/phrase-table.gz -o vocab/ --size 15000
      mosesrnn vocab examples/phrase-table.gz -o spm/ --spm unigram --size 8000
    """
    setup_logging(quiet)
    if spm_type is None and (joint or threads != 1):
        raise click.UsageError("--joint and --threads need --spm")
    if spm_type is not None:
        return _subwords(table, output_dir, spm_type, size, target_size, joint, byte_fallback, threads,
                         encoding, quiet)
    with Progress("reading", quiet=quiet) as bar, read_entries(table, encoding) as entries:
        vocabularies, report = build_vocabularies(bar.track(entries), size, target_size)
    vocabularies.save(output_dir)
    log.info("%s", report)
    log.info("wrote %s (%d words) and %s (%d words)", os.path.join(output_dir, "source.vocab"),
             len(vocabularies.source), os.path.join(output_dir, "target.vocab"), len(vocabularies.target))


def _subwords(table, output_dir, spm_type, size, target_size, joint, byte_fallback, threads, encoding, quiet):
    """Train and write the SentencePiece models (``vocab --spm``)."""
    with Progress("reading", quiet=quiet) as bar, contextlib.ExitStack() as readers:
        models = train_subwords(lambda: bar.track(readers.enter_context(read_entries(table, encoding))), spm_type,
                                size, target_size, joint=joint, byte_fallback=byte_fallback, threads=threads)
    models.save(output_dir)
    source, target = (len(tokenizer.pieces()) for tokenizer in models.tokenizers())
    kind = f"a joint {spm_type} model" if models.joint else f"{spm_type} models"
    log.info("wrote %s: %s of %s pieces", output_dir, kind, source if models.joint else f"{source}/{target}")
