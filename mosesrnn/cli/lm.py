"""``mosesrnn lm train|export``: the CSLM, a neural target language model for Moses' NeuralLM.

(Its perplexity on held-out text: ``mosesrnn perplexity -m lm/best.pt TEXT``, the command of both kinds of model.)
"""
from __future__ import annotations

import click

from ..cslm.config import LM_PRESETS, MAX_ORDER
from ..models import CSLM
from .common import (
    CLIP_NORM,
    LR_DECAY,
    MIN_LR,
    NGRAM_RUN,
    QUIET,
    WARMUP,
    Command,
    FiniteFloat,
    end_training,
    layer_sizes,
    setup_logging,
)
from .paths import INPUT, RUN_FOLDER_FILES, kept_output_with, model_of, output_folder_writing

__all__ = ["lm"]



@click.group("lm")
def lm() -> None:
    """The CSLM of Cho et al. (2014), Sec. 5.1.1: a neural target language model, trained here and used
    inside Moses (NPLM's format, Moses' NeuralLM feature) or on n-best lists (`mosesrnn nbest --lm`).

    \b
    Example:
      mosesrnn lm train train.tok.fr -o lm/ --valid dev.tok.fr --preset moses --max-time 2h
      mosesrnn lm export -m lm/best.pt -o lm.nplm
      mosesrnn moses-ini moses.ini --cslm $PWD/lm.nplm -o moses.cslm.ini
    """


@lm.command("train", cls=Command)
@click.argument("corpus", type=INPUT)
@click.option("-o", "--output", "output_dir", required=True, type=output_folder_writing(*RUN_FOLDER_FILES),
              help="Model directory: best.pt, last.pt, state.pt, train.jsonl and loss.png go here.")
@click.option("--valid", type=INPUT,
              help="Validation text (e.g. the dev set's target side, but not with `tune --select-on half`, which "
                   "chooses on the dev set); default: --valid-share of CORPUS, by hash. The model file records "
                   "its sha256 and line count.")
@click.option("--valid-share", default=0.01, show_default=True, type=FiniteFloat(0, 1, min_open=True,
              max_open=True), help="Share of CORPUS's sentences held out for validation when there is no --valid.")
@click.option("--preset", type=click.Choice(list(LM_PRESETS)), default="moses", show_default=True,
              help="paper = C14's 7-gram, 512-dim embeddings, hidden 1536+1024, 15,000 words (two hidden layers, "
                   "slow in the decoder); moses = 7-gram, 192, one hidden layer of "
                   "512, 15,000 words, trained by NCE (for Moses); small = 5-gram, 64, 256, 8,000 words (minutes on a "
                   "CPU).")
@click.option("--order", type=click.IntRange(2, MAX_ORDER), help="n of the n-grams [default: the preset's].")
@click.option("--vocab-size", type=click.IntRange(1), help="Shortlist size [default: the preset's].")
@click.option("--embed-dim", type=click.IntRange(1), help="Advanced: override the preset's embedding size.")
@click.option("--hidden", "hidden_dims", callback=layer_sizes, metavar="SIZES",
              help="Advanced: the hidden layers' sizes, e.g. 512 or 1536,1024.")
@click.option("--self-norm", default=0.1, show_default=True, type=FiniteFloat(0),
              help="alpha of the (log Z)^2 penalty that makes the raw scores log-probabilities (Devlin et al. "
                   "2014); Moses reads the raw scores.")
@click.option("--batch-size", type=click.IntRange(1), help="n-grams per update [default: the preset's recipe].")
@click.option("--learning-rate", type=FiniteFloat(0, min_open=True),
              help="Adam's learning rate [default: the preset's recipe].")
@WARMUP
@LR_DECAY
@MIN_LR
@CLIP_NORM
@click.option("--dropout", type=FiniteFloat(0, 1, max_open=True),
              help="Dropout on the context embeddings and the hidden layer, in training only (the model Moses "
                   "reads is the same network) [default: the preset's recipe].")
@click.option("--estimator", type=click.Choice(["softmax", "nce"]),
              help="softmax = the full softmax with the self-normalisation penalty; nce = noise-contrastive "
                   "estimation (NPLM's), --noise-samples unigram words shared by each minibatch (--self-norm unused) "
                   "[default: the preset's recipe].")
@click.option("--noise-samples", type=click.IntRange(1), help="k of NCE [default: the preset's recipe].")
@click.option("--output-bias", type=click.Choice(["uniform", "unigram"]),
              help="The output bias starts at -log V (uniform) or at the log unigram distribution; both start "
                   "self-normalised [default: the preset's recipe].")
@NGRAM_RUN
@QUIET
def train(**options):
    """Train a CSLM on CORPUS, tokenised target-side sentences (one a line, gzip or not), tokenised exactly as
    the Moses system's target side. Ctrl-C saves; the same command continues.

    \b
    Example:
      mosesrnn lm train train.tok.fr -o lm/ --valid dev.tok.fr --preset moses --max-time 2h

    With `tune --select-on half`, the dev set must not be the validation text: that tuning chooses its stage on
    a held-out half of the dev set, and refuses a model validated on it; leave --valid out (--valid-share).
    """
    from ..cslm.task import CSLMTrainConfig, train_cslm
    from ..train.driver import config_from_options
    setup_logging(options["quiet"])
    result = train_cslm(config_from_options(CSLMTrainConfig, options))
    end_training(result.summary(), result.stop_reason)


@lm.command("export", cls=Command)
@click.option("-m", "--model", "model_path", required=True, type=model_of(CSLM),
              help="A CSLM file from `mosesrnn lm train` (best.pt).")
@click.option("-o", "--output", required=True, type=kept_output_with(),
              help="The NPLM file for Moses (plain text, written whole or not at all); refused if it exists, "
                   "unless --force.")
@click.option("--force", is_flag=True, help="Replace an existing OUTPUT.")
def export(model_path, output, force):  # --force reaches the run's job (declared_paths)
    """Write a CSLM in NPLM's text format, the file Moses' NeuralLM reads (`NeuralLM ... path=OUTPUT`).

    Only one-hidden-layer models are written: NPLM, as Moses loads it, evaluates a two-hidden-layer
    file wrongly (see docs/cslm.md). A model that is not self-normalised (mean log Z on held-out text
    beyond +-0.5) is refused: Moses reads its raw scores, so every word would be off by log Z.

    \b
    Example:
      mosesrnn lm export -m lm/best.pt -o lm.nplm
    """
    import os

    from moses_integration.neural_lm import neural_lm_feature

    from ..cslm.export import export_cslm
    trained = export_cslm(model_path, output)
    config = trained.model.config
    layers = "+".join(map(str, config.hidden_dims))
    click.echo(f"wrote {output}: {config.order}-gram, {config.vocab_size} words, hidden layers of "
               f"{layers}; in moses.ini: {neural_lm_feature(config.order, os.path.abspath(output))}",
               err=True)
