"""``mosesrnn train``: the RNN Encoder-Decoder on a phrase table's unique pairs, or on a corpus."""
from __future__ import annotations

import math
import os

import click

from ..encdec.architectures import ARCHITECTURES
from ..encdec.direction import DIRECTIONS, SOURCE_TO_TARGET
from .common import (
    CLIP_NORM,
    DEVICE,
    ENCODING,
    LR_DECAY,
    MIN_LR,
    QUIET,
    THREADS,
    WARMUP,
    Command,
    FiniteFloat,
    duration,
    end_training,
    setup_logging,
)
from .paths import INPUT, INPUT_FOLDER, MODEL_FOLDER_FILES, output_folder_writing


@click.command(cls=Command)
@click.argument("table", type=INPUT, required=False)
@click.option("--corpus", nargs=2, type=INPUT, metavar="SRC TRG",
              help="Train on a sentence-aligned corpus instead of a table: two tokenized text files "
                   "(.gz allowed), line i of SRC translating line i of TRG; every line pair is kept, duplicates "
                   "included, but those with an empty side (and over --max-len): their count is said.")
@click.option("-o", "--output", "output_dir", required=True, type=output_folder_writing(*MODEL_FOLDER_FILES),
              help="Model directory: best.pt, last.pt, state.pt, vocab/, train.jsonl and loss.png go here.")
@click.option("--preset", type=click.Choice(["small", "paper"]), default="small", show_default=True,
              help="Model sizes: paper = 1000 hidden units, 100-dim embeddings, 500 maxout units, "
                   "15,000-word shortlists; small = 256/64/128, 8,000 words (trains in minutes on a CPU).")
@click.option("--encoder", type=click.Choice(list(ARCHITECTURES)),
              help="The model [default: gru]: " + "; ".join(f"{a.name} = {a.summary}" for a in ARCHITECTURES.values())
                   + ".")
@click.option("--direction", type=click.Choice(DIRECTIONS), default=SOURCE_TO_TARGET, show_default=True,
              help="source-to-target models p(target | source); target-to-source gives p(source | target).")
@click.option("--vocab", "vocab_dir", type=INPUT_FOLDER,
              help="Shortlists from `mosesrnn vocab`, or its SentencePiece models (`vocab --spm`: a subword "
                   "model); without it word shortlists are built from the training data (the preset's "
                   "size). Saved to MODEL_DIR/vocab/.")
@click.option("--vocab-size", type=click.IntRange(1), help="Shortlist size per language when building them.")
@click.option("--max-phrase-len", type=click.IntRange(1),
              help="Skip pairs with more words than this on either side (default: keep all).")
@click.option("--valid-share", default=0.01, show_default=True, type=FiniteFloat(0, 1, min_open=True,
              max_open=True), help="Share of input phrases (by hash) held out for validation.")
@click.option("--valid-size", type=click.IntRange(1),
              help="Hold out about N pairs instead (whole input phrases, smallest hashes first).")
@click.option("--valid-every", default=1000, show_default=True, type=click.IntRange(1),
              help="Updates between validations (each also saves last.pt and the state).")
@click.option("--patience", default=10, show_default=True, type=click.IntRange(1),
              help="Stop after this many validations without a lower validation NLL.")
@click.option("--batch-size", default=64, show_default=True, type=click.IntRange(1),
              help="Phrase pairs per update (the paper: 64); under torchrun, per process (the update takes "
                   "N x this many).")
@click.option("--optimizer", type=click.Choice(["adadelta", "adam"]),
              help="[default: the preset's: paper = Adadelta (rho 0.95, eps 1e-6) as in the paper; small = Adam, "
                   "with the schedule below]")
@click.option("--learning-rate", type=FiniteFloat(0, min_open=True),
              help="[default: 1.0 for Adadelta; 1e-2 for Adam under the small preset, else 3e-3]; not scaled "
                   "with the number of processes.")
@CLIP_NORM
@WARMUP
@LR_DECAY
@MIN_LR
@click.option("--bucket", "bucket_window", type=click.IntRange(0),
              help="Length bucketing: sort pairs by length inside windows of N minibatches, then shuffle the "
                   "minibatches (0: random minibatches, the paper's) [default: small 20, paper 0].")
@click.option("--output-bias", type=click.Choice(["zero", "unigram"]),
              help="Start the softmax bias at 0 (the paper) or at the log unigram distribution of the targets "
                   "[default: small unigram, paper zero].")
@click.option("--self-norm", type=FiniteFloat(0), metavar="ALPHA",
              help="Train self-normalised: add ALPHA x (log Z)^2 per predicted position to the loss, so that "
                   "log Z (the softmax normaliser) stays near 0 and `score --normalizer skip` may leave it out; "
                   "validation then reports log Z's mean and spread. 0.1-1 with --clip-norm 1 (without it, "
                   "the small recipe's peak rate spiked the loss; docs/performance.md) [default: 0, off].")
@click.option("--max-updates", type=click.IntRange(1), help="Stop at this many updates in all.")
@click.option("--max-time", callback=duration, metavar="DURATION",
              help="Stop after this much training time in this invocation, e.g. 90s, 10m, 2h "
                   "(reading the data excluded).")
@DEVICE
@THREADS
@click.option("--dtype", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
              help="bf16: bfloat16 autocast with fp32 master weights (GPUs, CPUs with AMX or AVX512-BF16).")
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
def train(**options):
    """Train the RNN Encoder-Decoder on the unique phrase pairs of TABLE (or on --corpus).

    The paper's Adadelta (rho 0.95, eps 1e-6; Adam for the small preset) on minibatches of random
    pairs, minimising the mean per-pair negative log-likelihood. Several processes: `torchrun
    --nproc-per-node N -m mosesrnn train ...` (DistributedDataParallel; see docs/scaling.md).
    Every --valid-every updates the held-out pairs are scored and the model saved: best.pt
    (lowest validation NLL) and last.pt, both self-contained model files.
    Runs until --max-updates, --max-time or early stopping; Ctrl-C saves and stops, and the same
    command continues exactly where it stopped.

    \b
    Example:
      mosesrnn train phrase-table.gz -o model/ --preset small --max-time 10m
    """
    from ..encdec.task import EncoderDecoderTrainConfig, train_encoder_decoder
    from ..train.driver import config_from_options
    setup_logging(options["quiet"] or os.environ.get("RANK", "0") != "0")  # under torchrun rank 0 speaks for all
    if (options["table"] is None) == (not options["corpus"]):
        raise click.UsageError("give a phrase TABLE or --corpus SRC TRG (one of them)")
    overrides = {name: options[name] for name in ("encoder", "embed_dim", "hidden_dim", "maxout_units", "output_rank")
                 if options[name] is not None}
    config = config_from_options(EncoderDecoderTrainConfig, options,
                                 corpus=tuple(options["corpus"]) if options["corpus"] else None,
                                 max_len=options["max_phrase_len"], model_overrides=overrides)
    result = train_encoder_decoder(config)
    if math.isinf(result.best_valid_ppl):
        summary = (f"{result.best_path}: not validated yet ({result.updates} updates, {result.stop_reason}); "
                   f"the same command continues the run")
    else:
        summary = (f"{result.best_path}: validation perplexity {result.best_valid_ppl:.2f} per token "
                   f"(unigram {result.unigram_ppl:.2f}), {result.best_valid_word_ppl:.2f} per word, "
                   f"{result.updates} updates, {result.stop_reason}")
    end_training(summary, result.stop_reason)
