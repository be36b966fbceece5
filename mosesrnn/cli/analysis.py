"""``mosesrnn topk``, ``perplexity``, ``embed`` and ``report``: looking into a trained model."""
from __future__ import annotations

import logging
import os

import click

from ..errors import MosesRNNError
from ..io.compressed import atomic_text_output
from ..models import MODELS, HeldOutText, resolve
from .common import DEVICE, ENCODING, QUIET, THREADS, Command, load_model, setup_logging, torch_threads
from .generate import MODEL_OPTION
from .paths import ANY_MODEL, INPUT, OUTPUT, input_with, output_prefix_of

log = logging.getLogger("mosesrnn")

#: What ``embed`` writes: the map, its points, the nearest neighbours.
EMBED_SUFFIXES = (".png", ".tsv", ".neighbours.txt")


@click.command(cls=Command)
@click.argument("table", type=INPUT)
@MODEL_OPTION
@click.option("-k", default=3, show_default=True, type=click.IntRange(1), help="Targets listed per ranker.")
@click.option("--source", "sources", multiple=True, metavar="PHRASE", help="A source phrase to list (repeatable).")
@click.option("--num-sources", default=10, show_default=True, type=click.IntRange(1),
              help="Without --source: this many source phrases drawn at random (seeded)...")
@click.option("--min-words", default=4, show_default=True, type=click.IntRange(1),
              help="...among those with at least this many words (C14: 4).")
@click.option("--min-candidates", default=1, show_default=True, type=click.IntRange(1),
              help="...and at least this many targets in the table.")
@click.option("--seed", default=1, show_default=True, type=int)
@click.option("--tm-column", default=2, show_default=True, type=int,
              help="0-based score column of the translation model's p(target | source): Moses' third "
                   "score p(e|f) in its order p(f|e) lex(f|e) p(e|f) lex(e|f), f the source.")
@click.option("--tsv", type=OUTPUT, help="Also write the lists as TSV here.")
@DEVICE
@THREADS
@ENCODING
@QUIET
@torch_threads
def topk(table, model_path, k, sources, num_sources, min_words, min_candidates, seed, tm_column, tsv, device, encoding,
         quiet):
    """The k targets the RNN ranks highest among TABLE's candidates, beside the translation model's (C14 Table 2).

    \b
    Example:
      mosesrnn topk phrase-table.gz -m model/best.pt -k 3 --num-sources 10 --tsv top3.tsv
    """
    from ..analysis.topk import choose_groups, rank_candidates, text_report, tsv_lines
    setup_logging(quiet)
    trained, device = load_model(model_path, device)
    groups = choose_groups(table, sources=list(sources) or None, count=num_sources, min_words=min_words,
                           min_candidates=min_candidates, seed=seed, encoding=encoding, tm_column=tm_column)
    rankings = rank_candidates(trained, groups, k=k, tm_column=tm_column, device=device)
    if tsv:
        with atomic_text_output(tsv) as stream:
            stream.writelines(line + "\n" for line in tsv_lines(rankings))
    click.echo(text_report(rankings))


@click.command(cls=Command)
@click.option("-m", "--model", "model_path", required=True, type=ANY_MODEL,
              help="An RNN Encoder-Decoder file from `mosesrnn train` (INPUTS: SRC TRG or a TABLE), a CSLM file "
                   "from `mosesrnn lm train` (INPUTS: target-language texts) or a joint model from `mosesrnn bilm "
                   "train` (INPUTS: SRC TRG ALIGNMENT).")
@click.argument("inputs", nargs=-1, required=True, type=INPUT, metavar="SRC TRG | TABLE | TEXT... | SRC TRG ALIGN")
@click.option("--seed", default=1, show_default=True, type=int, help="Seed of the source shuffle.")
@click.option("--max-pairs", type=click.IntRange(1),
              help="Measure the first N lines (of each TEXT; a table: its first N unique pairs).")
@DEVICE
@THREADS
@ENCODING
@QUIET
@torch_threads
def perplexity(model_path, inputs, seed, max_pairs, device, encoding, quiet):
    """Per-token perplexity of held-out text under a model of any kind.

    \b
    An RNN Encoder-Decoder: the gold targets of a tokenised parallel corpus (SRC TRG, line i translating
    line i) or of a phrase table's unique pairs, and the same with the sources shuffled across pairs
    (the shuffled control tells how much the model uses the source).
    A CSLM: each tokenised TEXT (words and </s>), and how self-normalised the model is there (log Z).
    A joint model: the target words and </s> of a word-aligned corpus (SRC TRG ALIGNMENT), and log Z.

    \b
    Example:
      mosesrnn perplexity -m sent-model/best.pt test.tok.en test.tok.fr
      mosesrnn perplexity -m lm/best.pt test.tok.fr
      mosesrnn perplexity -m bilm/best.pt heldout.en heldout.fr heldout.align
    """
    from ..io.model_store import model_kind
    setup_logging(quiet)
    measured = MODELS[model_kind(model_path)].perplexity
    if measured.counts and len(inputs) not in measured.counts:
        raise click.UsageError(measured.reads)
    held_out = HeldOutText(tuple(inputs), encoding, max_pairs, seed, device)
    for line in resolve(measured.measure)(model_path, held_out):
        click.echo(line)


@click.command(cls=Command)
@MODEL_OPTION
@click.option("--words", "num_words", type=click.IntRange(2), help="Map the N most frequent input words' e(x).")
@click.option("--phrases", "phrase_table", type=INPUT, help="Map the representations c of this table's sources.")
@click.option("--max-phrases", default=2000, show_default=True, type=click.IntRange(2),
              help="Distinct source phrases of --phrases, drawn at random (--seed).")
@click.option("--projection", type=click.Choice(["tsne", "pca"]), default="tsne", show_default=True)
@click.option("--query", "queries", multiple=True, help="Items whose nearest neighbours are listed (repeatable; "
              "default: the first five).")
@click.option("--neighbours", "k", default=5, show_default=True, type=click.IntRange(1))
@click.option("-o", "--output", "prefix", required=True, type=output_prefix_of(*EMBED_SUFFIXES),
              help="Output prefix: PREFIX.png, PREFIX.tsv (label, x, y) and PREFIX.neighbours.txt.")
@click.option("--seed", default=1, show_default=True, type=int)
@THREADS
@ENCODING
@QUIET
@torch_threads
def embed(model_path, num_words, phrase_table, max_phrases, projection, queries, k, prefix, seed, encoding, quiet):
    """Word embeddings e(x) or phrase representations c, mapped to 2-D (C14 Fig. 4-5).

    \b
    Example:
      mosesrnn embed -m model/best.pt --words 1000 -o docs/words
      mosesrnn embed -m model/best.pt --phrases phrase-table.gz --max-phrases 3000 -o docs/phrases
    """
    from ..analysis import embeddings
    setup_logging(quiet)
    if (num_words is None) == (phrase_table is None):
        raise click.UsageError("give --words N or --phrases TABLE")
    outputs = [prefix + suffix for suffix in EMBED_SUFFIXES]
    trained, _ = load_model(model_path, "cpu")
    if num_words:
        labels, vectors = embeddings.word_vectors(trained, num_words)
    else:
        labels = _distinct_sources(phrase_table, max_phrases, encoding, seed)
        if len(labels) < 2:
            raise MosesRNNError(f"{phrase_table}: {len(labels)} source phrase(s), too few to map (at least 2)")
        vectors = embeddings.phrase_vectors(trained, labels)
    points = embeddings.project(vectors, projection, seed)
    what = "word embeddings e(x)" if num_words else "phrase representations c"
    embeddings.plot_map(points, labels, outputs[0], f"{projection.upper()} of {len(labels)} {what} "
                        f"({os.path.basename(model_path)})")
    with atomic_text_output(outputs[1]) as stream:
        stream.write("label\tx\ty\n")
        stream.writelines(f"{label}\t{x:.4f}\t{y:.4f}\n" for label, (x, y) in zip(labels, points))
    report = [_neighbour_line(embeddings, labels, vectors, query, k) for query in (queries or labels[:5])]
    with atomic_text_output(outputs[2]) as stream:
        stream.write("\n".join(report) + "\n")
    click.echo("\n".join(report))
    log.info("wrote %s.tsv, %s.png, %s.neighbours.txt", prefix, prefix, prefix)


def _neighbour_line(embeddings, labels, vectors, query: str, k: int) -> str:
    if query not in labels:
        return f"{query}: (not among the {len(labels)} embedded items)"
    found = embeddings.neighbours(labels, vectors, query, k)
    return f"{query}: " + ", ".join(f"{label} ({similarity:.3f})" for label, similarity in found)


def _distinct_sources(path: str, limit: int, encoding: str, seed: int) -> list[str]:
    """``limit`` distinct source phrases of a table drawn uniformly (reservoir sampling, seeded; C14
    Fig. 5 shows randomly selected phrases), in table order. Repeats are recognised when adjacent."""
    import random

    from ..formats.phrase_table import read_entries
    rng, chosen, seen, previous = random.Random(seed), [], 0, None
    with read_entries(path, encoding) as entries:
        for entry in entries:
            if entry.source == previous:
                continue
            previous, seen = entry.source, seen + 1
            if len(chosen) < limit:
                chosen.append((seen, entry.source))
            elif (slot := rng.randrange(seen)) < limit:
                chosen[slot] = (seen, entry.source)
    return list(dict.fromkeys(source for _, source in sorted(chosen)))


@click.command(cls=Command)
@click.argument("table", type=input_with(".json"))
@click.option("-o", "--output", required=True, type=OUTPUT, help="The PNG (scatter and histograms).")
@click.option("--rnn-column", type=int, help="0-based column of the RNN score (default: from TABLE.json, else last).")
@click.option("--tm-column", default=2, show_default=True, type=int,
              help="0-based column of the translation model's p(target | source) (Moses' third score).")
@click.option("--max-lines", type=click.IntRange(1), help="Read only the first N lines.")
@click.option("--max-points", default=50000, show_default=True, type=click.IntRange(1),
              help="Points drawn in the scatter (a seeded sample; the histograms and rho use every line).")
@ENCODING
@QUIET
def report(table, output, rnn_column, tm_column, max_lines, max_points, encoding, quiet):
    """Scatter of a scored table's RNN column against its p(target | source) column, histograms of both,
    and their rank correlation (C14 Fig. 3).

    \b
    Example:
      mosesrnn report phrase-table.rnn.gz -o docs/rnn-vs-tm.png
    """
    from ..analysis.report import plot_report, read_columns
    setup_logging(quiet)
    columns = read_columns(table, rnn_column, tm_column, max_lines, encoding)
    rho = plot_report(columns, output, os.path.basename(table), max_points)
    click.echo(f"{columns.lines} lines: Spearman rho(RNN column {columns.rnn_column + 1}, TM column "
               f"{columns.tm_column + 1}) = {rho:.4f}; mean log p: RNN {columns.rnn.mean():.3f}, "
               f"TM {columns.tm.mean():.3f}; plot: {output}")
