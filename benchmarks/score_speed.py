"""Throughput of the RNN scorer by dtype and threads, on one slice of the real Tatoeba table (prints figures).

For each preset (random weights: speed does not depend on training) and for 1 and 2 threads, every
dtype (fp32, bf16, int8) scores the same pairs (the first --pairs lines of the table), in --rounds
alternated rounds (fp32, bf16, int8, then int8, bf16, fp32, ...), so that the load of a shared machine
falls on every row alike; each row gives the median pairs/s, the spread over the rounds, and the
median of the per-round ratios to fp32. fp32 at 1 thread also gives its share of the roofline =
measured matmul FLOP/s / FLOPs per pair. The CPU's instruction sets and what ``--dtype auto`` picks
are printed first. With --memory, also the peak RSS of `mosesrnn score --features unk` on a 1M-line
table and on the whole table twice (5.35M lines). Accuracy is benchmarks/precision_accuracy.py's.

    flock /tmp/mosesrnn-heavy.lock python benchmarks/score_speed.py --pairs 5000 --rounds 3
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from mosesrnn.encdec.config import model_config, preset_shortlist
from mosesrnn.encdec.model import build_model
from mosesrnn.encdec.model_file import TrainedModel, save_trained_model
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.io.compressed import count_lines
from mosesrnn.runtime.cpu import cpu_flags
from mosesrnn.runtime.precision import auto_dtype
from mosesrnn.text.codec import Codec, CodecPair
from mosesrnn.text.tokenizers import MosesWords, words
from mosesrnn.text.vocab import Vocabulary, build_vocabularies

DTYPES = ("fp32", "bf16", "int8")
TABLE = str(Path(__file__).resolve().parents[2] / "shared/data/tatoeba-moses-en-fr/phrase-table.gz")


def trained_model(preset: str, entries, init_std: float = 0.01) -> TrainedModel:
    """A randomly initialised model of `preset` whose shortlists are the slice's words, padded to size."""
    size = preset_shortlist(preset)
    found, _ = build_vocabularies(entries, size)
    text = CodecPair(*(Codec(MosesWords(), Vocabulary(v.itos[3:] + [f"<filler{i}>" for i in range(size - len(v) + 3)]))
                       for v in (found.source, found.target)))
    torch.manual_seed(0)
    config = model_config(preset, len(text.source.vocabulary), len(text.target.vocabulary), init_std=init_std)
    model = build_model(config).eval()
    return TrainedModel(model, text, "source-to-target", {}, f"random-{preset}")


def flops_per_pair(config, entries) -> tuple[float, str]:
    """Matmul FLOPs per phrase pair from the model's sizes and the slice's phrase lengths."""
    E, H, M, R, K = (config.embed_dim, config.hidden_dim, config.maxout_units, config.output_rank,
                     config.trg_vocab_size)
    sources = {entry.source for entry in entries}
    T = sum(len(words(e.target)) + 1 for e in entries) / len(entries)  # predicted tokens per pair
    S = sum(len(words(s)) for s in sources) / len(sources)  # words per distinct source
    share = len(sources) / len(entries)  # encodings per pair
    decoder = 2 * (3 * H * H + 3 * H * E + 2 * M * H + 2 * M * E + M * R + R * K)
    encoder_word = 2 * (3 * H * E + 3 * H * H)
    per_source = 2 * (H * H + H * H + 3 * H * H + 2 * M * H + 2 * M * E)
    total = T * decoder + share * (S * encoder_word + per_source)
    formula = (f"T*2(3H^2+3HE+2MH+2ME+MR+RK) + (sources/pairs)*(S*2(3HE+3H^2) + 2(5H^2+2MH+2ME))"
               f" with T={T:.2f}, S={S:.2f}, sources/pairs={share:.3f}, H={H}, E={E}, M={M}, R={R}, K={K}")
    return total, formula


def matmul_flops(hidden: int, dtype: str, device: str, seconds: float = 1.0) -> float:
    """FLOP/s of the recurrent step's matmul, (1024 x H) by (H x 3H), as the scorer runs it."""
    x = torch.randn(1024, hidden, device=device)
    layer = torch.nn.Linear(hidden, 3 * hidden, bias=False, device=device)
    kind = "cuda" if device.startswith("cuda") else "cpu"
    with torch.inference_mode(), torch.autocast(kind, dtype=torch.bfloat16, enabled=dtype == "bf16"):
        layer(x)
        runs, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            layer(x)
            runs += 1
            if kind == "cuda" and runs % 100 == 0:
                torch.cuda.synchronize()
        if kind == "cuda":
            torch.cuda.synchronize()
    return 2 * 1024 * hidden * 3 * hidden * runs / (time.perf_counter() - started)


def pairs_per_second(feature: RNNFeature, entries, chunk_lines: int = 20000) -> float:
    """Throughput of the feature's log_probs over `entries`, in chunks as the scorer cuts them."""
    feature.values(entries[:200])  # warm-up
    started = time.perf_counter()
    for start in range(0, len(entries), chunk_lines):
        feature.values(entries[start:start + chunk_lines])
    return len(entries) / (time.perf_counter() - started)


def report_preset(preset: str, entries, args) -> None:
    """One row per (threads, dtype): median pairs/s over alternated rounds, spread, ratio to fp32."""
    trained = trained_model(preset, entries)
    flops, formula = flops_per_pair(trained.model.config, entries)
    print(f"\n== preset {preset}: {trained.model.num_parameters() / 1e6:.1f}M parameters, {len(entries):,} pairs")
    print(f"FLOPs/pair = {flops / 1e6:.1f} MFLOP = {formula}")
    print("| threads | dtype | pairs/s (median) | rounds (min-max) | vs fp32 | roofline share |")
    print("|---|---|---|---|---|---|")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        features = {dtype: RNNFeature(trained, dtype=dtype, batch_tokens=args.batch_tokens, device="cpu")
                    for dtype in DTYPES}
        speeds: dict[str, list[float]] = {dtype: [] for dtype in DTYPES}
        for round_number in range(args.rounds):
            order = DTYPES if round_number % 2 == 0 else DTYPES[::-1]
            for dtype in order:
                speeds[dtype].append(pairs_per_second(features[dtype], entries))
        peak = matmul_flops(trained.model.config.hidden_dim, "fp32", "cpu") if threads == 1 else None
        for dtype in DTYPES:
            ratio = statistics.median(s / f for s, f in zip(speeds[dtype], speeds["fp32"]))
            roofline = (f"{statistics.median(speeds[dtype]) * flops / peak:.0%} of {peak / flops:,.0f}"
                        if peak and dtype == "fp32" else "")
            print(f"| {threads} | {dtype} | {statistics.median(speeds[dtype]):,.0f} | {min(speeds[dtype]):,.0f}-"
                  f"{max(speeds[dtype]):,.0f} | {ratio:.2f}x | {roofline} |", flush=True)


def peak_rss(table: str, model: str) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of `mosesrnn score --features unk` on `table`, in a child process."""
    with tempfile.TemporaryDirectory() as directory:
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "mosesrnn.cli", "score", table, "-m", model,
                                  "--features", "unk", "-o", os.path.join(directory, "out.gz"), "--quiet"])
        _, status, usage = os.wait4(child.pid, 0)
        if status != 0:
            raise RuntimeError(f"mosesrnn score failed with status {status}")
        return time.perf_counter() - started, usage.ru_maxrss / 1024


def report_memory(entries, table: str) -> None:
    """Peak RSS of a 1M-line table and of the whole `table` twice (5.35M lines for Tatoeba)."""
    print("\n== memory: mosesrnn score --features unk (small-preset model file), peak RSS of the child")
    with tempfile.TemporaryDirectory() as directory:
        trained = trained_model("small", entries)
        model = os.path.join(directory, "small.pt")
        save_trained_model(model, trained.model, trained.text)
        with gzip.open(table) as lines, gzip.open(os.path.join(directory, "1m.gz"), "wb", 1) as out:
            out.writelines(itertools.islice(lines, 1_000_000))
        with open(os.path.join(directory, "twice.gz"), "wb") as out:
            out.write(open(table, "rb").read() * 2)
        for name, lines in (("1m.gz", 1_000_000), ("twice.gz", 2 * count_lines(table))):
            seconds, rss = peak_rss(os.path.join(directory, name), model)
            print(f"{lines:>9,} lines: {seconds:5.1f} s ({lines / seconds:,.0f} lines/s), "
                  f"peak RSS {rss:,.0f} MB")


def main() -> None:
    """Parse the options and print every figure."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", default=TABLE)
    parser.add_argument("--pairs", type=int, default=5000, help="the slice every row scores")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds per row")
    parser.add_argument("--batch-tokens", type=int, default=4096)
    parser.add_argument("--presets", default="paper,small")
    parser.add_argument("--memory", action="store_true", help="also measure peak RSS on 1M and 5.35M lines")
    args = parser.parse_args()
    entries = list(itertools.islice(read_entries(args.table), args.pairs))
    flags = cpu_flags()
    shown = sorted(flags & {"avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8"})
    print(f"{os.cpu_count()} CPUs; torch {torch.__version__}, kernels {torch.backends.cpu.get_cpu_capability()}; "
          f"CPU flags: {' '.join(shown)}; --dtype auto picks {'%s (%s)' % auto_dtype('cpu', flags)}")
    print(f"slice: first {len(entries):,} lines of {args.table}; {args.rounds} alternated rounds per row")
    for preset in args.presets.split(","):
        report_preset(preset, entries, args)
    if args.memory:
        report_memory(entries, args.table)


if __name__ == "__main__":
    main()
