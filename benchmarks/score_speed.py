"""Throughput of the RNN scorer by path (normaliser and dtype) and threads, on one slice of the real Tatoeba table.

For each preset (random weights: speed does not depend on training; ``--vocab-size`` sets their
shortlists), each trained model of ``--model``, and 1 and 2 threads, every path of ``--paths`` scores
the same pairs (the first --pairs lines of the table), in --rounds alternated rounds (a, b, c, then
c, b, a, ...), so that the load of a shared machine falls on every row alike; each row gives the
median pairs/s, the spread over the rounds, and the median of the per-round ratios to the first path.
A path is ``NORMALISER:DTYPE``: ``exact:fp32`` is the exact log p in fp32; ``skip:fp32`` the raw score
without the softmax normaliser (``score --normalizer skip``, for a self-normalised model); the dtype
is fp32, bf16 or int8. exact:fp32 at 1 thread also gives its share of the roofline = measured matmul
FLOP/s / FLOPs per pair. The CPU's instruction sets and what ``--dtype auto`` picks are printed first.

With ``--model`` (or ``--accuracy-model``: no speed rows), also each path's accuracy on that trained
model, on the first --accuracy-pairs lines: mean and max |value - exact fp32 log p|, mean and max
|value - the same normaliser in fp32| (what the dtype alone moves), and the source phrases whose
best-scoring target changes. With --memory, also the peak RSS of `mosesrnn score --features unk` on a
1M-line table and on the whole table twice (5.35M lines).

    flock /tmp/mosesrnn-heavy.lock python benchmarks/score_speed.py --pairs 5000 --rounds 3
    python benchmarks/score_speed.py --paths exact:fp32,skip:fp32,skip:int8 --vocab-size 15000 \
        --model model-sn/best.pt          # issue 36: the normaliser skipped
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
from mosesrnn.encdec.model_file import TrainedEncoderDecoder, load_encoder_decoder, save_encoder_decoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.io.compressed import count_lines
from mosesrnn.runtime.cpu import cpu_flags
from mosesrnn.runtime.precision import auto_dtype
from mosesrnn.text.codec import Codec, CodecPair
from mosesrnn.text.tokenizers import MosesWords, words
from mosesrnn.text.vocab import Vocabulary, build_vocabularies

DTYPES = ("fp32", "bf16", "int8")
PATHS = "exact:fp32,exact:bf16,exact:int8"
TABLE = str(Path(__file__).resolve().parents[2] / "shared/data/tatoeba-moses-en-fr/phrase-table.gz")


def trained_model(preset: str, entries, init_std: float = 0.01, size: int | None = None) -> TrainedEncoderDecoder:
    """A randomly initialised model of `preset` whose shortlists are the slice's words, padded to ``size``
    (default: the preset's shortlist)."""
    size = size or preset_shortlist(preset)
    found, _ = build_vocabularies(entries, size)
    text = CodecPair(*(Codec(MosesWords(), Vocabulary(v.itos[3:] + [f"<filler{i}>" for i in range(size - len(v) + 3)]))
                       for v in (found.source, found.target)))
    torch.manual_seed(0)
    config = model_config(preset, len(text.source.vocabulary), len(text.target.vocabulary), init_std=init_std)
    model = build_model(config).eval()
    return TrainedEncoderDecoder(model, text, "source-to-target", {}, f"random-{preset}")


def flops_per_pair(config, entries, skip: bool = False) -> tuple[float, str]:
    """Matmul FLOPs per phrase pair from the model's sizes and the slice's phrase lengths; ``skip``: without the
    normaliser, G_l's K rows become the target's one row (K = 1 in the formula)."""
    E, H, M, R, K = (config.embed_dim, config.hidden_dim, config.maxout_units, config.output_rank,
                     1 if skip else config.trg_vocab_size)
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


def parse_paths(text: str) -> list[tuple[str, str]]:
    """``"exact:fp32,skip:int8"`` -> ``[("exact", "fp32"), ("skip", "int8")]``."""
    paths = [tuple(item.strip().split(":")) for item in text.split(",") if item.strip()]
    for path in paths:
        if len(path) != 2 or path[0] not in ("exact", "skip") or path[1] not in DTYPES:
            raise SystemExit(f"--paths: {':'.join(path)} is not NORMALISER:DTYPE (exact|skip : fp32|bf16|int8)")
    return paths


def name(path: tuple[str, str]) -> str:
    return ":".join(path)


def report_speed(label: str, trained: TrainedEncoderDecoder, entries, args) -> None:
    """One row per (threads, path): median pairs/s over alternated rounds, spread, ratio to the first path."""
    paths = parse_paths(args.paths)
    config = trained.model.config
    flops, formula = flops_per_pair(config, entries)
    print(f"\n== {label}: {trained.model.num_parameters() / 1e6:.1f}M parameters, K={config.trg_vocab_size}, "
          f"{len(entries):,} pairs")
    print(f"FLOPs/pair = {flops / 1e6:.2f} MFLOP = {formula}")
    if any(normaliser == "skip" for normaliser, _ in paths):
        print(f"FLOPs/pair without the normaliser = {flops_per_pair(config, entries, skip=True)[0] / 1e6:.2f} MFLOP "
              f"(K = 1: the target's row of G_l)")
    print(f"| threads | path | pairs/s (median) | rounds (min-max) | vs {name(paths[0])} | roofline share |")
    print("|---|---|---|---|---|---|")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        features = {path: RNNFeature(trained, normalizer=path[0], dtype=path[1], batch_tokens=args.batch_tokens,
                                     device="cpu") for path in paths}
        speeds: dict[tuple, list[float]] = {path: [] for path in paths}
        for round_number in range(args.rounds):
            for path in (paths if round_number % 2 == 0 else paths[::-1]):
                speeds[path].append(pairs_per_second(features[path], entries))
        peak = matmul_flops(config.hidden_dim, "fp32", "cpu") if threads == 1 else None
        for path in paths:
            ratio = statistics.median(s / f for s, f in zip(speeds[path], speeds[paths[0]]))
            roofline = (f"{statistics.median(speeds[path]) * flops / peak:.0%} of {peak / flops:,.0f}"
                        if peak and path == ("exact", "fp32") else "")
            print(f"| {threads} | {name(path)} | {statistics.median(speeds[path]):,.0f} | {min(speeds[path]):,.0f}-"
                  f"{max(speeds[path]):,.0f} | {ratio:.2f}x | {roofline} |", flush=True)


def best_targets(entries, values) -> dict[str, str]:
    """The best-scoring target of each source phrase that has two targets or more (ties: the first)."""
    best: dict[str, tuple[float, str]] = {}
    counts: dict[str, int] = {}
    for entry, value in zip(entries, values):
        counts[entry.source] = counts.get(entry.source, 0) + 1
        if entry.source not in best or value > best[entry.source][0]:
            best[entry.source] = (value, entry.target)
    return {source: target for source, (_, target) in best.items() if counts[source] > 1}


def report_accuracy(label: str, trained: TrainedEncoderDecoder, entries, args) -> None:
    """Each path against the exact fp32 log p, and against its own normaliser in fp32 (the dtype's share)."""
    torch.set_num_threads(args.accuracy_threads)
    paths = parse_paths(args.paths)
    values = {path: RNNFeature(trained, normalizer=path[0], dtype=path[1], batch_tokens=args.batch_tokens,
                               device="cpu").values(entries) for path in set(paths) | {("exact", "fp32")}}
    for normaliser in {normaliser for normaliser, _ in paths}:
        if (normaliser, "fp32") not in values:
            values[(normaliser, "fp32")] = RNNFeature(trained, normalizer=normaliser,
                                                      batch_tokens=args.batch_tokens).values(entries)
    exact = values[("exact", "fp32")]
    best = best_targets(entries, exact)
    info = trained.info
    print(f"\n== accuracy, {label} (self_norm {info.get('self_norm', 0)}, validation perplexity "
          f"{info.get('valid_ppl', float('nan')):.2f}, log Z {info.get('log_z_mean', float('nan')):+.3f} ± "
          f"{info.get('log_z_std', float('nan')):.3f}): first {len(entries):,} lines, {len(best):,} source "
          f"phrases with two targets or more; mean |exact log p| {statistics.fmean(abs(v) for v in exact):.2f}")
    print("| path | mean \\|value - exact fp32 log p\\| | max | mean \\|Δ\\| against its fp32 | max | "
          "best target changed |")
    print("|---|---|---|---|---|---|")
    for path in paths:
        got, fp32 = values[path], values[(path[0], "fp32")]
        to_exact = [abs(a - b) for a, b in zip(got, exact)]
        to_fp32 = [abs(a - b) for a, b in zip(got, fp32)]
        changed = sum(best_targets(entries, got)[source] != target for source, target in best.items())
        print(f"| {name(path)} | {statistics.fmean(to_exact):.3f} | {max(to_exact):.2f} | "
              f"{statistics.fmean(to_fp32):.4f} | {max(to_fp32):.3f} | {changed:,} of {len(best):,} "
              f"({changed / max(len(best), 1):.1%}) |", flush=True)


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
        save_encoder_decoder(model, trained.model, trained.text)
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
    parser.add_argument("--presets", default="paper,small", help="random-weight models of these presets ('': none)")
    parser.add_argument("--vocab-size", type=int, help="shortlists of the random-weight models [default: the preset's]")
    parser.add_argument("--paths", default=PATHS, help=f"NORMALISER:DTYPE rows, the first the baseline [{PATHS}]")
    parser.add_argument("--model", action="append", default=[],
                        help="a trained model file (repeatable): its speed rows and each path's accuracy on it")
    parser.add_argument("--accuracy-model", action="append", default=[],
                        help="a trained model file (repeatable) whose accuracy alone is measured")
    parser.add_argument("--accuracy-pairs", type=int, default=20000, help="the slice the accuracy is measured on")
    parser.add_argument("--accuracy-threads", type=int, default=1)
    parser.add_argument("--memory", action="store_true", help="also measure peak RSS on 1M and 5.35M lines")
    args = parser.parse_args()
    entries = list(itertools.islice(read_entries(args.table), args.pairs))
    flags = cpu_flags()
    shown = sorted(flags & {"avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8"})
    print(f"{os.cpu_count()} CPUs; torch {torch.__version__}, kernels {torch.backends.cpu.get_cpu_capability()}; "
          f"CPU flags: {' '.join(shown)}; --dtype auto picks {'%s (%s)' % auto_dtype('cpu', flags)}")
    print(f"slice: first {len(entries):,} lines of {args.table}; {args.rounds} alternated rounds per row")
    for preset in filter(None, args.presets.split(",")):
        report_speed(f"preset {preset}, random weights", trained_model(preset, entries, size=args.vocab_size),
                     entries, args)
    for path in args.model:
        report_speed(f"trained {path}", load_encoder_decoder(path), entries, args)
    if args.model or args.accuracy_model:
        accuracy = list(itertools.islice(read_entries(args.table), args.accuracy_pairs))
        for path in args.model + args.accuracy_model:
            report_accuracy(path, load_encoder_decoder(path), accuracy, args)
    if args.memory:
        report_memory(entries, args.table)


if __name__ == "__main__":
    main()
