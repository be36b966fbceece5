"""Training throughput (pairs/s) of the `small` and `paper` presets, fp32 and bf16 autocast, and the
share of the machine's measured matmul FLOP/s it represents.

Usage: python benchmarks/train_speed.py [--table tests/data/tatoeba.en-fr.3k.gz] [--updates 20]

Pairs come from a real phrase table (its phrase lengths set the cost); the model has the preset's
full vocabulary sizes. FLOPs per pair = 6 x the forward multiply-adds of the matrix products
(forward 2 FLOPs per multiply-add, backward twice the forward):

    MACs = S * 3H(E + H)                                 encoder GRU, per source word
         + 5H^2 + 2M(H + E)                              V, V', C (3H^2), O_c, O_w: once per pair
         + T * (3H(E + H) + 2M(H + E) + M R + R K)       decoder GRU, maxout input, G_r, G_l per target token

with S, T the mean source and target lengths (T counts EOS). Embedding lookups, gates and softmax
are not counted.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from mosesrnn.encdec.config import PRESETS, model_config
from mosesrnn.encdec.data import load_table
from mosesrnn.encdec.model import EncoderDecoder, build_model
from mosesrnn.train.shuffler import Shuffler


def matmul_flops(dtype: torch.dtype, size: int = 1024, repeats: int = 30, budget: float = 5.0) -> float:
    """Measured FLOP/s of a square torch.mm in ``dtype`` (at least one, at most ``budget`` seconds)."""
    torch.mm(torch.ones(64, 64, dtype=dtype), torch.ones(64, 64, dtype=dtype))  # warm-up
    a, b = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)
    started, done = time.perf_counter(), 0
    while done < repeats and (done == 0 or time.perf_counter() - started < budget):
        torch.mm(a, b)
        done += 1
    return 2 * size ** 3 * done / (time.perf_counter() - started)


def flops_per_pair(config, src_len: float, trg_len: float) -> float:
    """Training FLOPs per pair from the formula in the module docstring."""
    E, H, M, R, K = (config.embed_dim, config.hidden_dim, config.maxout_units, config.output_rank,
                     config.trg_vocab_size)
    macs = (src_len * 3 * H * (E + H) + 5 * H * H + 2 * M * (H + E)
            + trg_len * (3 * H * (E + H) + 2 * M * (H + E) + M * R + R * K))
    return 6 * macs


def pairs_per_second(model: EncoderDecoder, pairs, updates: int, bf16: bool, batch_size: int = 64,
                     warmup: int = 2) -> float:
    """Adadelta updates on minibatches of real pairs; the first ``warmup`` are not timed."""
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0, rho=0.95, eps=1e-6)
    shuffler = Shuffler(len(pairs), batch_size, seed=1)
    started, seen = time.perf_counter(), 0
    for update in range(updates + warmup):
        if update == warmup:
            started, seen = time.perf_counter(), 0
        index = shuffler.next_batch()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = -model.log_prob(*pairs.batch(index)).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        seen += len(index)
    return seen / (time.perf_counter() - started)


def plan(preset: str, bf16: bool, updates: int) -> tuple[int, int]:
    """(timed updates, warm-up updates) of one configuration.

    The first updates of a run are slow (new batch shapes set up kernels), hence the warm-up.
    bf16 gets few updates: on a CPU without AVX512-BF16 or AMX one takes seconds.
    """
    if bf16:
        return 2, 1
    return (updates if preset == "small" else max(updates // 2, 2)), 10


def main() -> None:
    """Print one line per preset and precision."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", default="tests/data/tatoeba.en-fr.3k.gz")
    parser.add_argument("--updates", type=int, default=30,
                        help="timed fp32 updates for `small` (paper: half)")
    args = parser.parse_args()
    data = load_table(args.table, valid_share=0.01)
    src_len = np.diff(data.train.src_offsets).mean()
    trg_len = np.diff(data.train.trg_offsets).mean() + 1
    peak = {False: matmul_flops(torch.float32), True: matmul_flops(torch.bfloat16)}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.table}: mean lengths "
          f"source {src_len:.2f}, target {trg_len:.2f} (with EOS)")
    print(f"matmul 1024^3: fp32 {peak[False] / 1e9:.1f} GFLOP/s, bf16 {peak[True] / 1e9:.2f} GFLOP/s")
    print(f"{'preset':8} {'dtype':5} {'params':>10} {'MFLOP/pair':>10} {'batch':>5} {'pairs/s':>8} "
          f"{'GFLOP/s':>8} {'of peak':>8}", flush=True)
    for preset in ("small", "paper"):
        vocab = PRESETS[preset]["shortlist"] + 3
        config = model_config(preset, vocab, vocab)
        flops = flops_per_pair(config, src_len, trg_len)
        for bf16 in (False, True):
            torch.manual_seed(1)
            model = build_model(config).train()
            updates, warmup = plan(preset, bf16, args.updates)
            speed = pairs_per_second(model, data.train, updates, bf16, 64, warmup)
            achieved = speed * flops
            print(f"{preset:8} {'bf16' if bf16 else 'fp32':5} {model.num_parameters():>10,} "
                  f"{flops / 1e6:>10.1f} "
                  f"{64:>5} {speed:>8.1f} {achieved / 1e9:>8.2f} {100 * achieved / peak[bf16]:>7.1f}%",
                  flush=True)


if __name__ == "__main__":
    main()
