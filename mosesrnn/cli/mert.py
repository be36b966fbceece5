"""``mosesrnn mert`` and ``mosesrnn rerank``: our own MERT over n-best lists, and reranking with its weights."""
from __future__ import annotations

import click
from sacrebleu.metrics.bleu import BLEU

from ..errors import MosesRNNError
from ..formats.moses_ini import read_weights, weights_text
from ..io.compressed import atomic_output
from ..tuning.mert import MertOptions
from ..tuning.nbest_mert import mert_nbest_files
from ..tuning.rerank import rerank as rerank_nbest
from ..tuning.vectors import named_weights
from .common import Command
from .paths import INPUT, OUTPUT

__all__ = ["mert", "rerank"]


@click.command("mert", cls=Command)
@click.argument("nbest", nargs=-1, required=True, type=INPUT)
@click.option("--refs", multiple=True, required=True, type=INPUT,
              help="Reference translations, one line per sentence (repeat for several references).")
@click.option("-o", "--output", default="-", show_default=True, type=OUTPUT,
              help="The tuned weights, in moses.ini [weight] syntax ('-' for stdout; written whole or not at all).")
@click.option("--init", type=INPUT,
              help="Start from the [weight] section of this moses.ini (or a file of 'Name= v1 v2' lines). "
                   "Default: the weights the decoder used, fitted to the total scores of the last NBEST.")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the random restarts and directions.")
@click.option("--restarts", type=click.IntRange(min=0), default=20, show_default=True,
              help="Random start points besides the initial weights (as mert-moses.pl's default).")
@click.option("--random-directions", type=click.IntRange(min=0), default=3, show_default=True,
              help="Random directions line-searched in every pass, besides one per feature.")
@click.option("--tokenize", type=click.Choice(sorted(BLEU.TOKENIZERS)), default="none", show_default=True,
              help="sacrebleu's tokenizer; 'none' because Moses output and references are already tokenised.")
def mert(nbest, refs, output, init, seed, restarts, random_directions, tokenize):
    """Tune feature weights on Moses n-best lists with Och's (2003) exact line-search MERT.

    The lists (e.g. of several decoder runs) are pooled per sentence, duplicates removed; their
    sentence ids must be 0..N-1 for the N lines of the references. The weights are normalised
    to L1 norm 1, as Moses' mert writes them. BLEU of the 1-best before and after goes to stderr.

    \b
    Example:
      mosesrnn mert run1.100best.gz run2.100best.gz --refs dev.tok.fr -o weights.txt --seed 1
    """
    options = MertOptions(restarts=restarts, random_directions=random_directions, seed=seed)
    result = mert_nbest_files(nbest, refs, init, tokenize, options)
    with atomic_output(output) as stream:
        stream.write(weights_text(named_weights(result.groups, result.weights)).encode("utf-8"))
    click.echo(f"{result.sentences} sentences, {result.hypotheses} distinct hypotheses; "
               f"initial weights: {result.initial_source}", err=True)
    click.echo(f"{result.line_searches} line searches, seed {seed}, {restarts} random restarts", err=True)
    click.echo(f"sacrebleu {result.signature}", err=True)
    click.echo(f"dev BLEU before: {result.before}", err=True)
    click.echo(f"dev BLEU after:  {result.after}", err=True)
    if output != "-":
        click.echo(f"wrote {output}:\n{weights_text(named_weights(result.groups, result.weights))}", err=True,
                   nl=False)


@click.command("rerank", cls=Command)
@click.argument("nbest", type=INPUT)
@click.option("--weights", "weights_path", required=True, type=INPUT,
              help="Weights in moses.ini [weight] syntax (what `mosesrnn mert` writes, or a moses.ini).")
@click.option("-o", "--output", default="-", show_default=True, type=OUTPUT,
              help="One 1-best translation per line, in sentence order (.gz is compressed; - is stdout).")
def rerank(nbest, weights_path, output):
    """Write the best hypothesis of every sentence of NBEST under the given weights.

    \b
    Example:
      mosesrnn rerank dev.100best.gz --weights weights.txt -o dev.rerank.fr
    """
    weights = read_weights(weights_path)
    if not weights:
        raise MosesRNNError(f"{weights_path}: no 'Name= v1 v2 ...' weight lines")
    with atomic_output(output) as stream:
        for text in rerank_nbest(nbest, weights):
            stream.write(f"{text}\n".encode("utf-8"))
