"""Seconds per MERT run (loading excluded) on the Tatoeba dev 100-best lists of ../shared.

    python benchmarks/mert_speed.py [--restarts 20] [--seeds 1,2,3]

Also prints the time to read the lists and compute the BLEU statistics, and line searches per second.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from mosesrnn.tuning.bleu import BleuStatistics
from mosesrnn.tuning.mert import MertOptions, mert
from mosesrnn.tuning.nbest_mert import read_references
from mosesrnn.tuning.problem import load_nbest

TATOEBA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "tatoeba-moses-en-fr"
#: In decoding order: the initial weights are those of the last list.
LISTS = ["dev.untuned.100best.gz", "dev.mert-iter1.100best.gz"]


def main() -> None:
    """Time loading and one MERT run per seed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--restarts", type=int, default=20)
    parser.add_argument("--seeds", default="1,2,3")
    args = parser.parse_args()
    lists = [str(TATOEBA / "nbest" / name) for name in LISTS]
    start = time.perf_counter()
    bleu = BleuStatistics(read_references([str(TATOEBA / "dev.tok.fr")]))
    problem = load_nbest(lists, bleu)
    print(f"read {len(lists)} lists: {problem.num_sentences} sentences, {len(problem.features)} distinct "
          f"hypotheses, {problem.dimension} features in {time.perf_counter() - start:.1f} s")
    initial, _ = problem.decoder_weights()
    for seed in (int(seed) for seed in args.seeds.split(",")):
        start = time.perf_counter()
        result = mert(problem, bleu.scores, initial, MertOptions(restarts=args.restarts, seed=seed))
        seconds = time.perf_counter() - start
        print(f"seed {seed}: {seconds:.1f} s per MERT run ({args.restarts} restarts, {result.line_searches} line "
              f"searches, {result.line_searches / seconds:.0f}/s); "
              f"BLEU {result.initial_score:.2f} -> {result.score:.2f}")


if __name__ == "__main__":
    main()
