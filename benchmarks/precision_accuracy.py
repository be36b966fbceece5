"""How far bf16 and int8 move a trained model's scores from fp32 (prints a Markdown table; not a test).

On the first --pairs lines of the real Tatoeba table: mean and max |log p(dtype) - log p(fp32)| per
pair, the mean |log p| for scale, and the share of source phrases (among those with two targets or
more) whose best-ranked target changes — what a decoder's choice between translations would feel.

    python benchmarks/precision_accuracy.py /path/to/trained/best.pt --pairs 20000
"""
from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import torch

from mosesrnn.encdec.model_file import load_trained_model
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries

TABLE = str(Path(__file__).resolve().parents[2] / "shared/data/tatoeba-moses-en-fr/phrase-table.gz")


def best_changed(sources: list[str], reference: np.ndarray, other: np.ndarray) -> tuple[int, int]:
    """(source phrases whose argmax target differs, source phrases with two targets or more)."""
    groups: dict[str, list[int]] = {}
    for position, source in enumerate(sources):
        groups.setdefault(source, []).append(position)
    several = [rows for rows in groups.values() if len(rows) > 1]
    changed = sum(int(np.argmax(reference[rows]) != np.argmax(other[rows])) for rows in several)
    return changed, len(several)


def main() -> None:
    """Score the slice in every dtype and print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--table", default=TABLE)
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    trained = load_trained_model(args.model)
    entries = list(itertools.islice(read_entries(args.table), args.pairs))
    sources = [entry.source for entry in entries]
    scores = {dtype: np.array(RNNFeature(trained, dtype=dtype).values(entries)) for dtype in ("fp32", "bf16", "int8")}
    print(f"{args.model}: {trained.info.get('preset')} preset, {trained.info.get('updates')} updates, validation "
          f"perplexity {trained.info.get('valid_ppl'):.2f}; first {len(entries):,} lines of {args.table}; mean "
          f"|log p| in fp32 {np.abs(scores['fp32']).mean():.2f}")
    print("| dtype | mean abs(delta log p) | max abs(delta log p) | best target changed |")
    print("|---|---|---|---|")
    for dtype in ("bf16", "int8"):
        difference = np.abs(scores[dtype] - scores["fp32"])
        changed, groups = best_changed(sources, scores["fp32"], scores[dtype])
        print(f"| {dtype} | {difference.mean():.4f} | {difference.max():.3f} | {changed} of {groups} source phrases "
              f"({changed / groups:.2%}) |")


if __name__ == "__main__":
    main()
