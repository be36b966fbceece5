"""``mosesrnn sample``, ``translate`` and ``augment``: what a trained model generates."""
from __future__ import annotations

import logging
import time

import click

from ..formats.text_file import read_lines
from ..io.compressed import atomic_text_output
from .common import DEVICE, DTYPE, ENCODING, QUIET, THREADS, Command, load_model, setup_logging, torch_threads
from .paths import INPUT, MODEL, OUTPUT, output_with

log = logging.getLogger("mosesrnn")

MODEL_OPTION = click.option("-m", "--model", "model_path", required=True, type=MODEL,
                            help="A model file from `mosesrnn train` (phrase-level or sentence-level).")
#: What ``augment`` writes beside its table: the new pairs, as TSV.
NEW_PAIRS = ".new.tsv"
BATCH = click.option("--batch-size", default=32, show_default=True, type=click.IntRange(1),
                     help="Sources searched together (each with its own beam or samples).")


def load_searcher(model_path: str, device: str, batch_size: int = 32, dtype: str = "fp32"):
    """The model file ready for search (torch imported here, so --help stays fast)."""
    from ..encdec.generate import Searcher
    trained, device = load_model(model_path, device)
    return Searcher(trained, device=device, batch_size=batch_size, dtype=dtype)


def _sources(source: tuple[str, ...], input_path: str | None) -> list[str]:
    if bool(source) == bool(input_path):
        raise click.UsageError("give INPUT (a file) or --source TEXT (one or more times)")
    return list(source) if source else read_lines(input_path)


@click.command(cls=Command)
@MODEL_OPTION
@click.argument("input_path", required=False, type=INPUT, metavar="[INPUT]")
@click.option("--source", multiple=True, metavar="TEXT", help="A source phrase or sentence (repeatable), instead of "
              "INPUT, one source per line (.gz allowed, '-' = stdin).")
@click.option("-n", "--num-samples", default=50, show_default=True, type=click.IntRange(1),
              help="Samples drawn per source (C14 Table 3: 50).")
@click.option("--top", default=5, show_default=True, type=click.IntRange(1),
              help="Distinct samples shown per source, by log p (C14 Table 3: 5).")
@click.option("--seed", default=1, show_default=True, type=int, help="Seed of the sampling generator.")
@click.option("--no-unk", is_flag=True, help="Never sample the unknown word <unk>.")
@click.option("--tsv", is_flag=True, help="TSV (source_id, rank, log_p, count, sample) instead of a report.")
@DEVICE
@DTYPE
@THREADS
@BATCH
@QUIET
@torch_threads
def sample(model_path, source, input_path, num_samples, top, seed, no_unk, tsv, device, dtype, batch_size, quiet):
    """Ancestral samples from p(target | source), deduplicated and ranked by log p.

    \b
    Example:
      mosesrnn sample -m model/best.pt --source "the united states" -n 50 --top 5
      mosesrnn sample -m model/best.pt phrases.txt --tsv > samples.tsv
    """
    setup_logging(quiet)
    sources = _sources(source, input_path)
    searcher = load_searcher(model_path, device, batch_size, dtype)
    results = searcher.sample(sources, num_samples, top=top, seed=seed, exclude_unk=no_unk)
    for index, (text, samples) in enumerate(zip(sources, results)):
        if not tsv:
            click.echo(f"{text}")
        for rank, s in enumerate(samples, 1):
            click.echo(f"{index}\t{rank}\t{s.log_prob:.4f}\t{s.count}\t{s.text}" if tsv
                       else f"  {s.log_prob:9.3f}  x{s.count:<3d} {s.text}")


@click.command(cls=Command)
@MODEL_OPTION
@click.argument("input_path", type=INPUT, metavar="INPUT")
@click.option("-o", "--output", default="-", show_default=True, type=OUTPUT,
              help="Where the translations go ('-' for stdout; written whole or not at all).")
@click.option("--beam", "beam_size", default=10, show_default=True, type=click.IntRange(1),
              help="Beam size (Cho et al. 2014b: 10); 1 is greedy search.")
@click.option("--nbest", type=click.IntRange(1),
              help="Write the K best (K <= beam) as a Moses n-best list instead of the 1-best.")
@click.option("--length-normalize", is_flag=True,
              help="Rank finished hypotheses by log p per token (words + EOS), as in 2014b.")
@click.option("--allow-unk", is_flag=True, help="Keep hypotheses with <unk> (excluded by default, as in 2014b).")
@DEVICE
@DTYPE
@THREADS
@BATCH
@QUIET
@torch_threads
def translate(model_path, input_path, output, beam_size, nbest, length_normalize, allow_unk, device, dtype,
              batch_size, quiet):
    """Translate each line of INPUT (tokenised sources, '-' for stdin) by beam search (batched over sentences).

    Writes the 1-best per line, or with --nbest K a Moses n-best list
    `id ||| hypothesis ||| RNN0= log p ||| total` (0-based ids; total = the ranking score).

    \b
    Example:
      mosesrnn translate -m sent-model/best.pt test.tok.en --beam 10 --length-normalize -o test.hyp
      mosesrnn translate -m sent-model/best.pt test.tok.en --beam 10 --nbest 10 -o test.10best
    """
    from ..encdec.generate import nbest_line
    setup_logging(quiet)
    if nbest and nbest > beam_size:
        raise click.BadParameter(f"at most the beam size ({beam_size})", param_hint="--nbest")
    searcher = load_searcher(model_path, device, batch_size, dtype)
    sources = read_lines(input_path)
    start = time.perf_counter()
    results = searcher.translate(sources, beam_size=beam_size, nbest=nbest or 1,
                                 length_normalize=length_normalize, exclude_unk=not allow_unk)
    seconds = time.perf_counter() - start
    with atomic_text_output(output) as stream:
        for index, hyps in enumerate(results):
            if nbest:
                stream.writelines(nbest_line(index, hyp) + "\n" for hyp in hyps)
            else:
                stream.write((hyps[0].text if hyps else "") + "\n")
    log.info("translated %d sentences in %.1f s (%.2f sentences/s), beam %d%s", len(sources), seconds,
             len(sources) / max(seconds, 1e-9), beam_size, ", length-normalised" if length_normalize else "")


@click.command(cls=Command)
@click.argument("table", type=INPUT)
@MODEL_OPTION
@click.option("-o", "--output", required=True, type=output_with(NEW_PAIRS),
              help=f"The augmented table (.gz allowed); the new pairs also go to OUTPUT{NEW_PAIRS} as TSV.")
@click.option("--beam", "beam_size", default=10, show_default=True, type=click.IntRange(1))
@click.option("--per-source", default=3, show_default=True, type=click.IntRange(1),
              help="The K best beam hypotheses of each source phrase are proposed (K <= beam).")
@click.option("--max-sources", type=click.IntRange(1),
              help="Propose for the first N distinct source phrases only (the rest is scored, not searched).")
@DEVICE
@DTYPE
@THREADS
@ENCODING
@QUIET
@torch_threads
def augment(table, model_path, output, beam_size, per_source, max_sources, device, dtype, encoding, quiet):
    """Add RNN-proposed target phrases that TABLE lacks (C14's future work).

    Every line gets the rnn column (exp log p, as `mosesrnn score --features rnn` writes it). For
    each source phrase, the --per-source best beam hypotheses that are not among its targets
    become new lines after its group, with the rnn score and, in every other score column, the
    lowest value that column has among the source's existing targets (a new pair is never
    favoured over a table entry by the translation model's columns; only the RNN tells them
    apart). Their alignment and counts fields are left empty. TABLE must be sorted by source
    phrase, as train-model.perl writes it.

    \b
    Example:
      mosesrnn augment phrase-table.gz -m model/best.pt --beam 10 --per-source 3 -o augmented.gz
    """
    from ..pipeline.augment import augment_table
    setup_logging(quiet)
    if per_source > beam_size:
        raise click.BadParameter(f"at most the beam size ({beam_size})", param_hint="--per-source")
    if output == "-":
        raise click.BadParameter("the augmented table goes to a file (its new pairs go beside it)",
                                 param_hint="-o")
    new_pairs = output + NEW_PAIRS
    searcher = load_searcher(model_path, device, dtype=dtype)
    summary = augment_table(table, output, searcher, beam_size=beam_size, per_source=per_source,
                            max_sources=max_sources, new_pairs_path=new_pairs, encoding=encoding)
    click.echo(f"{summary.new_pairs} new pairs for {summary.searched_sources} searched source phrases "
               f"({summary.lines} table lines kept, {summary.proposals_in_table} proposals already in the "
               f"table); listed in {new_pairs}", err=True)
