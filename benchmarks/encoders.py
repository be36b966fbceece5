"""The five encoders side by side: validation perplexity at equal training time, scoring speed, size.

Usage (the figures in the README, one run; about 6 x --minutes in all):

    flock /tmp/mosesrnn-heavy.lock python benchmarks/encoders.py \\
        --table ../shared/data/tatoeba-moses-en-fr/phrase-table.gz --minutes 4 --threads 1

The table is read once (its shortlists built once); then each encoder is trained from the same
seed on the same training pairs in the same order, with the `small` preset's sizes, for the same
training time (validation excluded, as in `mosesrnn train --max-time`), and validated on the same
held-out pairs (`--valid-size`, chosen by source-phrase hash). Each best.pt then scores the first
`--score-lines` lines of the table through the rnn feature (`mosesrnn score`'s code path, model
loaded from its file). Prints one table row per encoder and the unigram baseline.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from mosesrnn.encdec import task as trainer
from mosesrnn.encdec.config import ENCODER_KINDS
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.encdec.task import EncoderDecoderTrainConfig
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import first_entries

DEFAULT_TABLE = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "tatoeba-moses-en-fr",
                             "phrase-table.gz")


def train_one(encoder: str, data, args) -> trainer.EncoderDecoderTrainResult:
    """Train ``encoder`` on the already-read ``data`` for ``args.minutes`` of training time."""
    config = EncoderDecoderTrainConfig(os.path.join(args.out_dir, encoder), table=args.table, preset="small",
                         valid_size=args.valid_size, valid_every=args.valid_every, max_time=60 * args.minutes,
                         threads=args.threads, seed=args.seed, model_overrides={"encoder": encoder},
                         resume="never", quiet=True)
    os.makedirs(config.output_dir, exist_ok=True)
    torch.manual_seed(config.seed)
    np.random.seed(config.seed)
    run = trainer._Run(config, data, None)  # noqa: SLF001 - the table is read once for all five
    return trainer._finish(run, None)  # noqa: SLF001


def scoring_speed(path: str, pairs, threads: int) -> float:
    """Pairs/s of the rnn feature over ``pairs`` (one call, as one chunk of `mosesrnn score`)."""
    torch.set_num_threads(threads)
    feature = RNNFeature(load_encoder_decoder(path), device="cpu")
    feature.values(pairs[:200])  # warm-up
    started = time.perf_counter()
    feature.values(pairs)
    return len(pairs) / (time.perf_counter() - started)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", default=DEFAULT_TABLE)
    parser.add_argument("--encoders", default=",".join(ENCODER_KINDS))
    parser.add_argument("--minutes", type=float, default=4.0, help="training time per encoder")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--valid-size", type=int, default=5000)
    parser.add_argument("--valid-every", type=int, default=1000)
    parser.add_argument("--score-lines", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out-dir", default="bench-encoders")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    first = EncoderDecoderTrainConfig(os.path.join(args.out_dir, "data"), table=args.table, preset="small",
                        valid_size=args.valid_size, quiet=True)
    os.makedirs(first.output_dir, exist_ok=True)
    started = time.monotonic()
    data = trainer._load_data(first, resumed=False)  # noqa: SLF001
    print(f"{data.description}: {len(data.train):,} training / {len(data.valid):,} validation pairs, "
          f"read in {time.monotonic() - started:.0f} s; {args.minutes:g} min of training each, "
          f"{args.threads} thread(s)", flush=True)
    pairs = first_entries(args.table, args.score_lines)

    rows = []
    for encoder in args.encoders.split(","):
        result = train_one(encoder, data, args)
        speed = scoring_speed(result.best_path, pairs, args.threads)
        rows.append((encoder, result, speed))
        print(f"{encoder}: {result.updates} updates, validation perplexity {result.best_valid_ppl:.2f} "
              f"(unigram {result.unigram_ppl:.2f}), {result.parameters:,} parameters, "
              f"training {result.pairs_per_second:.0f} pairs/s, scoring {speed:.0f} pairs/s", flush=True)

    print(f"\n| encoder | parameters | updates in {args.minutes:g} min | training pairs/s | "
          f"validation perplexity per token | scoring pairs/s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for encoder, result, speed in rows:
        print(f"| {encoder} | {result.parameters:,} | {result.updates:,} | {result.pairs_per_second:.0f} | "
              f"{result.best_valid_ppl:.2f} | {speed:.0f} |")
    if rows:
        print(f"| unigram baseline | | | | {rows[0][1].unigram_ppl:.2f} | |")


if __name__ == "__main__":
    main()
