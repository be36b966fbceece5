"""``mosesrnn bilm train|export``: the neural network joint model (Devlin et al. 2014) for Moses' BilingualNPLM."""
from __future__ import annotations

import click

from ..bilm.config import EXPORT_FILES, JOINT_PRESETS
from ..encdec.direction import DIRECTIONS, SOURCE_TO_TARGET
from ..models import JOINT
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

__all__ = ["bilm"]



@click.group("bilm")
def bilm() -> None:
    """The neural network joint model of Devlin et al. (2014): a neural language model of the target
    that also reads 2m+1 source words around the word each target word is aligned to. Moses runs it
    inside the decoder as BilingualNPLM (a Moses built --with-nplm); mosesrnn trains it on the
    word-aligned training corpus and rescores n-best lists with it (`nbest --features bilm`). Devlin et
    al.'s other directions (--direction target-to-source, --right-to-left) are n-best features of their
    own (`nbest --bilm-t2s`, --bilm-r2l, --bilm-t2s-r2l).

    \b
    Example:
      mosesrnn bilm train train.tok.en.gz train.tok.fr.gz model/aligned.grow-diag-final-and -o bilm/ --max-time 1h
      mosesrnn bilm export -m bilm/best.pt -o bilm.nplm
      mosesrnn moses-ini moses.ini --bilm $PWD/bilm.nplm -o moses.bilm.ini
    """


@bilm.command("train", cls=Command)
@click.argument("source", type=INPUT)
@click.argument("target", type=INPUT)
@click.argument("alignment", type=INPUT)
@click.option("-o", "--output", "output_dir", required=True, type=output_folder_writing(*RUN_FOLDER_FILES),
              help="Model directory: best.pt, last.pt, state.pt, train.jsonl and loss.png go here.")
@click.option("--valid-share", default=0.01, show_default=True, type=FiniteFloat(0, 1, min_open=True,
              max_open=True), help="Share of the sentence pairs held out (by hash) for validation.")
@click.option("--preset", type=click.Choice(list(JOINT_PRESETS)), default="moses", show_default=True,
              help="moses = Devlin's windows (3 target words of history, 11 source words), 192-dim embeddings, "
                   "one hidden layer of 512, 16,000 words a side; small = 2 and 5 words, 64, 256, 8,000 words.")
@click.option("--order", type=click.IntRange(2, 10),
              help="Target words read, the predicted one included (BilingualNPLM's order) [default: the preset's].")
@click.option("--source-window", type=click.IntRange(0, 10),
              help="Source words on each side of the affiliated one (BilingualNPLM's source_window) [default: the "
                   "preset's].")
@click.option("--direction", type=click.Choice(DIRECTIONS), default=SOURCE_TO_TARGET, show_default=True,
              help="target-to-source: predict each SOURCE word from the source words before it and 2m+1 target "
                   "words around its affiliated target word (Devlin et al.'s p(f | e), an n-best feature: "
                   "`nbest --bilm-t2s`; Moses' BilingualNPLM runs only source-to-target).")
@click.option("--right-to-left", is_flag=True,
              help="Read the predicted side backwards: the history is the following words (an n-best feature: "
                   "`nbest --bilm-r2l`, or --bilm-t2s-r2l with --direction target-to-source).")
@click.option("--vocab-size", type=click.IntRange(1),
              help="Shortlist of the predicted side (the target's, or the source's with --direction "
                   "target-to-source) [default: the preset's].")
@click.option("--source-vocab-size", type=click.IntRange(1),
              help="Shortlist of the window side [default: the preset's].")
@click.option("--embed-dim", type=click.IntRange(1), help="Advanced: override the preset's embedding size.")
@click.option("--hidden", "hidden_dims", callback=layer_sizes, metavar="SIZES",
              help="Advanced: the hidden layers' sizes, e.g. 512 or 1024,512 (two are slower in the decoder).")
@click.option("--self-norm", default=0.1, show_default=True, type=FiniteFloat(0),
              help="alpha of the (log Z)^2 penalty of --estimator softmax (NCE self-normalises by itself).")
@click.option("--batch-size", type=click.IntRange(1), help="n-grams per update [default: the recipe's, 512].")
@click.option("--learning-rate", type=FiniteFloat(0, min_open=True), help="Adam's rate [default: 2e-3].")
@WARMUP
@LR_DECAY
@MIN_LR
@CLIP_NORM
@click.option("--dropout", type=FiniteFloat(0, 1, max_open=True), help="[default: the recipe's, 0.3]")
@click.option("--estimator", type=click.Choice(["softmax", "nce"]), help="[default: the recipe's, nce]")
@click.option("--noise-samples", type=click.IntRange(1), help="k of NCE [default: the recipe's, 500].")
@click.option("--output-bias", type=click.Choice(["uniform", "unigram"]), help="[default: the recipe's, unigram]")
@NGRAM_RUN
@QUIET
def train(**options):
    """Train a joint model on SOURCE and TARGET (tokenised exactly as the Moses system, line for line) and
    ALIGNMENT, their word alignment in Moses' format (`i-j` pairs, i a source and j a target position,
    e.g. model/aligned.grow-diag-final-and). Ctrl-C saves; the same command continues.

    \b
    Example:
      mosesrnn bilm train train.tok.en.gz train.tok.fr.gz train.align.gz -o bilm/ --max-time 1h --threads 1
    """
    from ..bilm.task import JointTrainConfig, train_joint
    from ..train.driver import config_from_options
    setup_logging(options["quiet"])
    result = train_joint(config_from_options(JointTrainConfig, options, corpus=options["target"]))
    end_training(result.summary(), result.stop_reason)


@bilm.command("export", cls=Command)
@click.option("-m", "--model", "model_path", required=True, type=model_of(JOINT),
              help="A joint model file from `mosesrnn bilm train` (best.pt).")
@click.option("-o", "--output", required=True, type=kept_output_with(*EXPORT_FILES),
              help="The NPLM file for Moses (plain text); OUTPUT.target and OUTPUT.source (the vocabularies) and "
                   "OUTPUT.json (the windows) are written beside it. Refused if any of them exists, unless --force.")
@click.option("--force", is_flag=True, help="Replace an existing OUTPUT and the files beside it.")
def export(model_path, output, force):  # --force reaches the run's job (declared_paths)
    """Write a joint model for Moses' BilingualNPLM: NPLM's text format and the two vocabulary files.

    Only one-hidden-layer, self-normalised, source-to-target, left-to-right models are written (Moses reads
    the raw scores, and runs only the forward model in the decoder).

    \b
    Example:
      mosesrnn bilm export -m bilm/best.pt -o bilm.nplm
      mosesrnn moses-ini moses.ini --bilm $PWD/bilm.nplm -o moses.bilm.ini
    """
    import os

    from moses_integration.bilingual_lm import bilingual_lm_feature

    from ..bilm.export import export_joint
    done = export_joint(model_path, output)
    line = bilingual_lm_feature(done.order, done.source_window, *map(os.path.abspath, (output, done.source_vocab,
                                                                                       done.target_vocab)))
    click.echo(f"wrote {output}, {done.target_vocab} and {done.source_vocab}: order {done.order}, source window "
               f"{done.source_window}; in moses.ini: {line}", err=True)
