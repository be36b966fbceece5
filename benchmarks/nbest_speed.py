"""Hypotheses/s of `mosesrnn nbest` on real Moses 100-best lists, beside phrase pairs/s of `score`.

The same model scores (1) the first --sentences sentences of the Tatoeba dev 100-best list with
their source sentences and (2) --pairs phrase pairs of the Tatoeba phrase table, each through
the whole pipeline (reading, features, formatting, writing). Random weights: speed does not
depend on training. A hypothesis is a whole sentence (about 7 words) scored against its source
sentence; a phrase pair is about 2 words each side, so expect fewer hypotheses than pairs per second.

    flock /tmp/mosesrnn-heavy.lock python benchmarks/nbest_speed.py --threads 1
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import os
import tempfile
from pathlib import Path

import torch
from score_speed import TABLE, trained_model

from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import first_entries
from mosesrnn.pipeline.nbest import run_nbest_job
from mosesrnn.pipeline.score import run_score_job

SYSTEM = Path(__file__).resolve().parents[2] / "shared/data/tatoeba-moses-en-fr"


def first_sentences(nbest: str, source: str, sentences: int, directory: str) -> tuple[str, str]:
    """Copies of the first ``sentences`` sentences of an n-best list and of its source."""
    small_nbest, small_source = os.path.join(directory, "nbest.gz"), os.path.join(directory, "source")
    with gzip.open(nbest, "rt", encoding="utf-8") as lines, gzip.open(small_nbest, "wt", encoding="utf-8") as out:
        out.writelines(itertools.takewhile(lambda line: int(line.split("|||", 1)[0]) < sentences, lines))
    with open(source, encoding="utf-8") as lines, open(small_source, "w", encoding="utf-8") as out:
        out.writelines(itertools.islice(lines, sentences))
    return small_nbest, small_source


def main() -> None:
    """Print hypotheses/s and pairs/s for each preset."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nbest", default=str(SYSTEM / "nbest/dev.untuned.100best.gz"))
    parser.add_argument("--source", default=str(SYSTEM / "dev.tok.en"))
    parser.add_argument("--table", default=TABLE)
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    entries = first_entries(args.table, args.pairs)
    print(f"{os.cpu_count()} CPUs ({torch.backends.cpu.get_cpu_capability()}), torch {torch.__version__}, "
          f"{args.threads} threads")
    with tempfile.TemporaryDirectory() as directory:
        nbest, source = first_sentences(args.nbest, args.source, args.sentences, directory)
        table = os.path.join(directory, "table.gz")
        with gzip.open(table, "wt", encoding="utf-8") as out:
            out.writelines(line for _, line in zip(range(args.pairs), gzip.open(args.table, "rt", encoding="utf-8")))
        for preset in ("small", "paper"):
            feature = RNNFeature(trained_model(preset, entries))
            hyps = run_nbest_job(nbest, source, os.path.join(directory, "out.nbest.gz"), [feature])
            pairs = run_score_job(table, os.path.join(directory, "out.table.gz"), [feature])
            print(f"{preset}: nbest {hyps.lines_per_second:,.0f} hypotheses/s ({hyps.lines:,} hypotheses of "
                  f"{hyps.sentences} sentences); score {pairs.lines_per_second:,.0f} pairs/s ({pairs.lines:,} pairs)")


if __name__ == "__main__":
    main()
