"""The ``mosesrnn`` command line: each command parses its options and calls one library function."""
from __future__ import annotations

import logging
import os
import signal
import sys

import click
import torch

from . import __version__
from .devices import resolve_device
from .direction import DIRECTIONS, SOURCE_TO_TARGET
from .features.registry import FEATURES, FeatureOptions, build_features, default_features, parse_feature_names
from .features.unk import UNK_SIDES
from .formats.phrase_table import PhraseTableError, read_entries
from .pipeline.merge import MergeError, merge_parts
from .pipeline.score import score_table
from .pipeline.shards import ShardSpec
from .progress import ProgressBar
from .text.vocab import build_vocabularies
from .train.trainer import TrainConfig, parse_duration
from .train.trainer import train as run_training

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


def _duration(ctx, param, value):
    """Click callback: '10m' -> 600.0 seconds."""
    try:
        return None if value is None else parse_duration(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


@main.command()
@click.argument("table", type=TABLE, required=False)
@click.option("--corpus", nargs=2, type=click.Path(dir_okay=False, exists=True), metavar="SRC TRG",
              help="Train on a sentence-aligned corpus instead of a table: two tokenized text files "
                   "(.gz allowed), line i of SRC translating line i of TRG; every line pair is kept.")
@click.option("-o", "--output", "output_dir", required=True, type=click.Path(file_okay=False),
              help="Model directory: best.pt, last.pt, state.pt, vocab/, train.jsonl and loss.png go here.")
@click.option("--preset", type=click.Choice(["small", "paper"]), default="small", show_default=True,
              help="Model sizes: paper = 1000 hidden units, 100-dim embeddings, 500 maxout units, "
                   "15,000-word shortlists; small = 256/64/128, 8,000 words (trains in minutes on a CPU).")
@click.option("--direction", type=click.Choice(DIRECTIONS), default=SOURCE_TO_TARGET, show_default=True,
              help="source-to-target models p(target | source); target-to-source gives p(source | target).")
@click.option("--vocab", "vocab_dir", type=click.Path(file_okay=False, exists=True),
              help="Shortlists from `mosesrnn vocab`; without it they are built from the training data "
                   "(the preset's size) and saved to MODEL_DIR/vocab/.")
@click.option("--vocab-size", type=click.IntRange(1), help="Shortlist size per language when building them.")
@click.option("--max-phrase-len", type=click.IntRange(1),
              help="Skip pairs with more words than this on either side (default: keep all).")
@click.option("--valid-share", default=0.01, show_default=True, type=click.FloatRange(0, 1, min_open=True,
              max_open=True), help="Share of input phrases (by hash) held out for validation.")
@click.option("--valid-size", type=click.IntRange(1),
              help="Hold out about N pairs instead (whole input phrases, smallest hashes first).")
@click.option("--valid-every", default=1000, show_default=True, type=click.IntRange(1),
              help="Updates between validations (each also saves last.pt and the state).")
@click.option("--patience", default=10, show_default=True, type=click.IntRange(1),
              help="Stop after this many validations without a lower validation NLL.")
@click.option("--batch-size", default=64, show_default=True, type=click.IntRange(1),
              help="Phrase pairs per Adadelta update (the paper: 64).")
@click.option("--clip-norm", type=click.FloatRange(0, min_open=True),
              help="Clip the gradient to this L2 norm (default: no clipping, as in the paper).")
@click.option("--max-updates", type=click.IntRange(1), help="Stop at this many updates in all.")
@click.option("--max-time", callback=_duration, metavar="DURATION",
              help="Stop after this much training time in this invocation, e.g. 90s, 10m, 2h "
                   "(reading the data excluded).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="auto = cuda if available, else cpu.")
@click.option("--threads", type=click.IntRange(1), help="CPU threads for torch (default: torch's choice).")
@click.option("--bf16/--no-bf16", default=False, show_default=True,
              help="bfloat16 autocast with fp32 master weights.")
@click.option("--seed", default=1, show_default=True, type=int,
              help="Seed of the initialisation and of the data order.")
@click.option("--resume", "resume", flag_value="require",
              help="Continue the run saved in MODEL_DIR; fail if there is none. (Without --resume or "
                   "--restart a saved run is continued automatically.)")
@click.option("--restart", "resume", flag_value="never",
              help="Ignore a saved run in MODEL_DIR and start over.")
@click.option("--embed-dim", type=click.IntRange(1), help="Advanced: override the preset's embedding size.")
@click.option("--hidden-dim", type=click.IntRange(1), help="Advanced: override the preset's GRU size.")
@click.option("--maxout-units", type=click.IntRange(1), help="Advanced: override the preset's maxout units.")
@click.option("--output-rank", type=click.IntRange(1), help="Advanced: override the preset's output rank.")
@ENCODING
@QUIET
def train(table, corpus, output_dir, preset, direction, vocab_dir, vocab_size, max_phrase_len, valid_share,
          valid_size, valid_every, patience, batch_size, clip_norm, max_updates, max_time, device, threads,
          bf16, seed, resume, embed_dim, hidden_dim, maxout_units, output_rank, encoding, quiet):
    """Train the RNN Encoder-Decoder on the unique phrase pairs of TABLE (or on --corpus).

    Adadelta (rho 0.95, eps 1e-6) on minibatches of random pairs, minimising the mean per-pair
    negative log-likelihood. Every --valid-every updates the held-out pairs are scored and the
    model saved: best.pt (lowest validation NLL) and last.pt, both self-contained model files.
    Runs until --max-updates, --max-time or early stopping; Ctrl-C saves and stops, and the same
    command continues exactly where it stopped.

    \b
    Example:
      mosesrnn train phrase-table.gz -o model/ --preset small --max-time 10m
    """
    _setup_logging(quiet)
    overrides = {k: v for k, v in dict(embed_dim=embed_dim, hidden_dim=hidden_dim, maxout_units=maxout_units,
                                       output_rank=output_rank).items() if v is not None}
    try:
        config = TrainConfig(output_dir, table=table, corpus=tuple(corpus) if corpus else None, preset=preset,
                             direction=direction, vocab_dir=vocab_dir, vocab_size=vocab_size,
                             max_len=max_phrase_len, encoding=encoding, valid_share=valid_share,
                             valid_size=valid_size, batch_size=batch_size, clip_norm=clip_norm,
                             valid_every=valid_every, patience=patience, max_updates=max_updates,
                             max_time=max_time, device=device, threads=threads, bf16=bf16, seed=seed,
                             model_overrides=overrides, resume=resume or "auto", quiet=quiet)
        result = run_training(config)
    except (PhraseTableError, ValueError, FileNotFoundError) as error:
        raise _fail(error) from None
    click.echo(f"{result.best_path}: validation perplexity {result.best_valid_ppl:.2f} per token "
               f"(unigram {result.unigram_ppl:.2f}), {result.updates} updates, {result.stop_reason}")
    if result.stop_reason == "interrupted":
        raise SystemExit(130)


@main.command()
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
@click.option("--chunk-lines", default=20000, show_default=True, type=click.IntRange(1),
              help="Lines read, scored and written per chunk.")
@ENCODING
@QUIET
def score(table, output, model_path, vocab_dir, features, unk_side, direction, length_normalize, device,
          dtype, batch_tokens, threads, shard_text, resume, checkpoint_every, chunk_lines, encoding, quiet):
    """Append feature columns to every line of a phrase table.

    The values go at the end of the third (scores) field, where Moses reads dense features;
    every other field is copied byte for byte, and the output has the input's lines in the
    input's order. Remember to raise num-features in moses.ini (`mosesrnn moses-ini`).

    \b
    Example:
      mosesrnn score examples/phrase-table.gz -m model.pt -o scored.gz
      mosesrnn score examples/phrase-table.gz --vocab vocab/ --features unk -o scored.gz
      mosesrnn score big.gz -m model.pt --shard 3/8 -o part3.gz   # then: mosesrnn merge part*.gz -o all.gz
    """
    _setup_logging(quiet)
    if threads:
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
        with ProgressBar("scoring", quiet=quiet) as bar:
            summary = score_table(table, output, columns, encoding=encoding, chunk_lines=chunk_lines,
                                  shard=shard, resume=resume, checkpoint_every=checkpoint_every,
                                  progress=bar.update_position)
    except (PhraseTableError, FileNotFoundError, ValueError) as error:
        raise _fail(error) from None
    log.info("scored %d lines (%d-%d) in %.1f s (%.0f lines/s); signature: %s", summary.lines,
             summary.first_line, summary.end_line - 1, summary.seconds, summary.lines_per_second,
             summary.signature)


@main.command()
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
    _setup_logging(quiet)
    try:
        summary = merge_parts(parts, output)
    except (MergeError, OSError) as error:
        raise _fail(error) from None
    log.info("merged %d parts, %d lines; signature: %s", summary.parts, summary.lines, summary.signature)


def _register_moses_commands() -> None:
    # moses_integration is the only code that calls Moses; its commands join this group.
    from moses_integration.cli import binarize, mert_moses, moses_ini
    for command in (moses_ini, binarize, mert_moses):
        main.add_command(command)


_register_moses_commands()

if __name__ == "__main__":
    main()
