"""``mosesrnn score``: append feature columns to every line of a phrase table."""
from __future__ import annotations

import logging

import click

from ..devices import resolve_device
from ..direction import DIRECTIONS
from ..features.registry import FEATURES, FeatureOptions, build_features, default_features, parse_feature_names
from ..features.unk import UNK_SIDES
from ..files import describe_os_error
from ..formats.phrase_table import PhraseTableError
from ..pipeline.score import ScoreInterrupted, score_table
from ..pipeline.shards import ShardSpec
from ..pipeline.table_checks import table_warnings
from ..progress import ProgressBar
from .common import ENCODING, QUIET, TABLE, fail, setup_logging, stop_on_sigterm

log = logging.getLogger("mosesrnn")


@click.command()
@click.argument("table", type=TABLE)
@click.option("-o", "--output", required=True, type=TABLE,
              help="The scored table ('-' for stdout). Written as OUTPUT.part and renamed when "
                   "complete; a JSON signature and line range go next to it as OUTPUT.json.")
@click.option("-m", "--model", "model_path", type=click.Path(dir_okay=False, exists=True),
              help="A model file from `mosesrnn train` (for the rnn feature; its shortlists serve unk).")
@click.option("--vocab", "vocab_dir", type=click.Path(file_okay=False, exists=True),
              help="Directory with the shortlists from `mosesrnn vocab` (for unk without -m).")
@click.option("--features", help="Comma-separated feature columns to append, in this order [default: "
              f"{','.join(default_features(True))} with -m, else {','.join(default_features(False))}]. "
              + "; ".join(f"{name}: {spec.summary}" for name, spec in FEATURES.items())
              + ". Each column holds e^v, so that Moses' ln() sees the value v.")
@click.option("--unk-side", type=click.Choice(UNK_SIDES), default="both", show_default=True,
              help="Which words the unk feature counts.")
@click.option("--direction", type=click.Choice(DIRECTIONS),
              help="Score p(target | source) (source-to-target) or p(source | target); must match the "
                   "model [default: the model's].")
@click.option("--length-normalize", is_flag=True,
              help="Divide log p by the predicted tokens (words + EOS); off, as in the paper.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@click.option("--dtype", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
              help="bf16 autocast for the matmuls (fast on GPUs and CPUs with AMX; slow elsewhere).")
@click.option("--batch-tokens", default=4096, show_default=True, type=click.IntRange(1),
              help="Target tokens (rows x longest length) per decoder batch.")
@click.option("--threads", type=click.IntRange(1), help="CPU threads for torch (default: torch's choice).")
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
def score(table, output, model_path, vocab_dir, features, unk_side, direction, length_normalize, device,
          dtype, batch_tokens, threads, shard_text, resume, checkpoint_every, checkpoint_minutes, chunk_lines,
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
    if threads:
        import torch  # here, so that `mosesrnn --help` and the other commands start quickly
        torch.set_num_threads(threads)
    try:
        shard = ShardSpec.parse(shard_text)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--shard") from None
    try:
        names = parse_feature_names(features) if features else default_features(model_path is not None)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--features") from None
    try:
        options = FeatureOptions(model=model_path, vocab=vocab_dir, unk_side=unk_side, direction=direction,
                                 device=resolve_device(device), dtype=dtype, batch_tokens=batch_tokens,
                                 length_normalize=length_normalize)
        columns = build_features(names, options)
        if table != "-":
            for warning in table_warnings(table, encoding, options.trained_model("rnn") if model_path else None):
                log.warning("warning: %s", warning)
        with ProgressBar("scoring", quiet=quiet) as bar, stop_on_sigterm():
            if table != "-" and shard.count == 1:
                bar.count_lines_in_background(table)
            summary = score_table(table, output, columns, encoding=encoding, chunk_lines=chunk_lines,
                                  shard=shard, resume=resume, checkpoint_every=checkpoint_every,
                                  checkpoint_seconds=60 * checkpoint_minutes, progress=bar.update_position)
    except ScoreInterrupted as stop:
        click.echo(f"mosesrnn: {stop}", err=True)
        raise SystemExit(130) from None
    except (PhraseTableError, ValueError) as error:
        raise fail(error) from None
    except OSError as error:
        raise fail(describe_os_error(error, output)) from None
    log.info("scored %d lines (%d-%d) in %.1f s (%.0f lines/s); signature: %s", summary.lines,
             summary.first_line, summary.end_line - 1, summary.seconds, summary.lines_per_second,
             summary.signature)
