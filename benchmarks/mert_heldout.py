"""Tune on the first half of the Tatoeba dev sentences, test on the second half (../shared data).

    python benchmarks/mert_heldout.py [--restarts 20] [--seeds 1,2,3] [--lists A.gz B.gz]

``--lists`` takes other lists of the same sentences, e.g. the shared ones with RNN0= and UNK0= added
by `mosesrnn nbest`; their last list's decoder weights (new groups: 0) are the start point.

Prints the 1-best BLEU (sacrebleu, tok none) of each half before (the decoder's weights of the last
list) and after tuning, per seed: a gain on the tuning half that does not carry over is overfitting.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from mosesrnn.tuning.bleu import BleuStatistics
from mosesrnn.tuning.mert import MertOptions, mert
from mosesrnn.tuning.nbest_mert import read_references, starting_weights
from mosesrnn.tuning.problem import TuningProblem, load_nbest

TATOEBA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "tatoeba-moses-en-fr"
#: In decoding order: the initial weights are those of the last list.
LISTS = ["dev.untuned.100best.gz", "dev.mert-iter1.100best.gz"]


def one_best_bleu(problem: TuningProblem, bleu: BleuStatistics, weights: np.ndarray) -> float:
    """sacrebleu's corpus BLEU of the 1-best hypotheses under ``weights``."""
    return bleu.score(problem.stats[problem.best_rows(weights)].sum(axis=0)).score


def main() -> None:
    """Tune on one half per seed and print BLEU on both halves before and after."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--restarts", type=int, default=20)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--init", help="start from these [weight] lines (groups they lack: 0) rather than the "
                                           "decoder weights fitted to the last list's totals")
    parser.add_argument("--lists", nargs="+", default=[str(TATOEBA / "nbest" / name) for name in LISTS],
                        help="n-best lists of the Tatoeba dev sentences, in decoding order")
    args = parser.parse_args()
    lists = args.lists
    bleu = BleuStatistics(read_references([str(TATOEBA / "dev.tok.fr")]))
    problem = load_nbest(lists, bleu)
    half = problem.num_sentences // 2
    tune, test = problem.subset(range(half)), problem.subset(range(half, problem.num_sentences))
    initial, source = starting_weights(problem, args.init)
    print(f"{bleu.signature}; tune: sentences 1-{half}, test: {half + 1}-{problem.num_sentences}; lists: {lists}; "
          f"initial weights: {source}")
    print(f"before: tune {one_best_bleu(tune, bleu, initial):.2f}, test {one_best_bleu(test, bleu, initial):.2f}")
    columns = [f"{name}[{i}]" if size > 1 else name for name, size in problem.groups for i in range(size)]
    for seed in (int(seed) for seed in args.seeds.split(",")):
        weights = mert(tune, bleu.scores, initial, MertOptions(restarts=args.restarts, seed=seed)).weights
        print(f"seed {seed}: tune {one_best_bleu(tune, bleu, weights):.2f}, "
              f"test {one_best_bleu(test, bleu, weights):.2f}; weights "
              f"{' '.join(f'{name}={w:.4f}' for name, w in zip(columns, weights))}")


if __name__ == "__main__":
    main()
