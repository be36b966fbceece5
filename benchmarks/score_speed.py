"""Throughput of the RNN scorer on a slice of the real Tatoeba table (prints figures; not a test).

For each preset (random weights: speed does not depend on training): pairs/s of the rnn feature
in fp32 and bf16, the naive baseline (one pair at a time through `model.log_prob`, no grouping,
no bucketing), and pairs/s as a share of the roofline = measured matmul FLOP/s / FLOPs per pair.
With --memory, also the peak RSS of `mosesrnn score --features unk` on a 1M-line table and on
the whole table concatenated twice (5.35M lines), to show memory stays flat.

    flock /tmp/mosesrnn-heavy.lock python benchmarks/score_speed.py --memory   # about 4 minutes

bf16 is also compared with fp32 on real pairs for three weight scales (the paper's N(0, 0.01^2)
initialisation gives near-uniform outputs, so wider ones stand in for a trained model's peakier ones).
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.compressed import count_lines
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.models.batching import pad
from mosesrnn.models.config import model_config, preset_shortlist
from mosesrnn.models.encdec import build_model
from mosesrnn.models.model_file import TrainedModel, save_trained_model
from mosesrnn.text.codec import Codec, CodecPair
from mosesrnn.text.tokenizers import MosesWords, words
from mosesrnn.text.vocab import Vocabulary, build_vocabularies

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


def naive_pairs_per_second(trained: TrainedModel, entries) -> float:
    """One pair at a time through model.log_prob: no grouping, no batching, full log_softmax."""
    started = time.perf_counter()
    with torch.inference_mode():
        for entry in entries:
            src, src_lengths = pad([trained.input_codec.ids(entry.source)])
            trg, trg_lengths = pad([trained.output_codec.ids(entry.target)], append_eos=True)
            device = trained.model.decoder.G_l.weight.device
            trained.model.log_prob(src.to(device), src_lengths.to(device), trg.to(device), trg_lengths.to(device))
    return len(entries) / (time.perf_counter() - started)


def bf16_difference(trained: TrainedModel, entries) -> tuple[float, float, float]:
    """Max and mean |log p(bf16) - log p(fp32)| over `entries`, and the mean |log p(fp32)|."""
    device = str(trained.model.decoder.G_l.weight.device)
    fp32 = torch.tensor(RNNFeature(trained, device=device).values(entries))
    bf16 = torch.tensor(RNNFeature(trained, dtype="bf16", device=device).values(entries))
    difference = (bf16 - fp32).abs()
    return difference.max().item(), difference.mean().item(), fp32.abs().mean().item()


def report_preset(preset: str, entries, args) -> None:
    """Print throughput, baseline and roofline share of one preset."""
    trained = trained_model(preset, entries)
    trained.model.to(args.device)
    flops, formula = flops_per_pair(trained.model.config, entries)
    print(f"\n== preset {preset}: {trained.model.num_parameters() / 1e6:.1f}M parameters")
    print(f"FLOPs/pair = {flops / 1e6:.1f} MFLOP = {formula}")
    naive = naive_pairs_per_second(trained, entries[:args.naive_pairs])
    print(f"naive baseline (1 pair at a time, {args.naive_pairs} pairs): {naive:,.0f} pairs/s")
    lines = args.lines if preset == "small" else args.paper_lines
    for dtype, count in (("fp32", lines), ("bf16", args.bf16_lines)):
        peak = matmul_flops(trained.model.config.hidden_dim, dtype, args.device)
        feature = RNNFeature(trained, dtype=dtype, batch_tokens=args.batch_tokens, device=args.device)
        speed = pairs_per_second(feature, entries[:count])
        print(f"{dtype}: {speed:,.0f} pairs/s on {count:,} pairs = {speed / naive:.1f}x naive; matmul "
              f"{peak / 1e9:.0f} GFLOP/s -> roofline {peak / flops:,.0f} pairs/s, "
              f"reached {speed * flops / peak:.0%}")
    for init_std in (0.01, 0.1, 0.2):  # the paper's init, then wider ones with peakier distributions
        model = trained if init_std == 0.01 else trained_model(preset, entries, init_std)
        model.model.to(args.device)
        worst, mean, typical = bf16_difference(model, entries[:args.bf16_lines])
        print(f"bf16 vs fp32 on {args.bf16_lines:,} real pairs, weights N(0, {init_std}^2): "
              f"|log p| difference "
              f"max {worst:.4f}, mean {mean:.4f} (mean |log p| {typical:.1f})")


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
    parser.add_argument("--lines", type=int, default=50000, help="slice read; small preset fp32 scores all")
    parser.add_argument("--paper-lines", type=int, default=20000, help="pairs for the paper preset in fp32")
    parser.add_argument("--bf16-lines", type=int, default=300, help="pairs for bf16 and its tolerance")
    parser.add_argument("--naive-pairs", type=int, default=300)
    parser.add_argument("--batch-tokens", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (a GPU run: --device cuda)")
    parser.add_argument("--memory", action="store_true", help="also measure peak RSS on 1M and 5.35M lines")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    entries = list(itertools.islice(read_entries(args.table), args.lines))
    print(f"{os.cpu_count()} CPUs ({torch.backends.cpu.get_cpu_capability()}), torch {torch.__version__}, "
          f"{args.threads} threads; slice: first {len(entries):,} lines of {args.table}")
    for preset in ("paper", "small"):
        report_preset(preset, entries, args)
    if args.memory:
        report_memory(entries, args.table)


if __name__ == "__main__":
    main()
