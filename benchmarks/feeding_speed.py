"""How fast Python feeds the network: the scorer's time outside the model, and `mosesrnn score` end to end.

The model-only rows score the first --pairs lines of the real Tatoeba table with a *tiny* model (4 units
everywhere, the slice's shortlists, the normaliser skipped): the network's cost vanishes, so what is left
is the feeding — grouping, tokenising, word -> id, padding, host -> device copies, putting the values back
in order. The time inside the model's two calls (``source_context``, ``score_log_prob``) is measured
apart and subtracted; the row says the time outside it per 100,000 pairs. The end-to-end rows time
`mosesrnn score` on the first --lines lines (gzipped) with ``--features unk`` (no network) and with the
tiny model's rnn column (without the normaliser), for each ``--workers`` of --workers-list (skipped when
the installed scorer has no ``--workers``), the model on one thread. Their lines/s divide the lines actually
written to the head file (a table shorter than --lines gives fewer, and the heading says so), not --lines.

Run it against two checkouts side by side (the same script, the code from PYTHONPATH):

    python benchmarks/feeding_speed.py --pairs 100000 --lines 300000
    PYTHONPATH=/tmp/base python benchmarks/feeding_speed.py --pairs 100000 --lines 300000   # an older commit
"""
from __future__ import annotations

import argparse
import contextlib
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

import mosesrnn
from mosesrnn.encdec.config import model_config
from mosesrnn.encdec.model import build_model
from mosesrnn.encdec.model_file import TrainedEncoderDecoder, save_encoder_decoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.runtime.cpu import cpu_flags
from mosesrnn.text.codec import Codec, CodecPair
from mosesrnn.text.tokenizers import MosesWords
from mosesrnn.text.vocab import build_vocabularies

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT.parent / "shared/data/tatoeba-moses-en-fr/phrase-table.gz"
EXAMPLE = ROOT / "examples/phrase-table.gz"


def tiny_model(entries, size: int = 15000) -> TrainedEncoderDecoder:
    """A 4-unit model over the slice's shortlists (random weights: the feeding does not depend on them)."""
    found, _ = build_vocabularies(entries, size)
    text = CodecPair(*(Codec(MosesWords(), vocabulary) for vocabulary in (found.source, found.target)))
    torch.manual_seed(0)
    config = model_config("small", len(found.source), len(found.target), embed_dim=4, hidden_dim=4,
                          maxout_units=4, output_rank=4)
    return TrainedEncoderDecoder(build_model(config).eval(), text, "source-to-target", {}, "tiny")


class ModelClock:
    """Seconds spent inside the model's scoring calls, wrapped on the instance."""

    def __init__(self, model: torch.nn.Module):
        self.seconds = 0.0
        for name in ("source_context", "score_log_prob"):
            setattr(model, name, self._timed(getattr(model, name)))

    def _timed(self, call):
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
        return timed


def feeding_row(entries, rounds: int, chunk_lines: int) -> str:
    """Median pairs/s of the tiny model's rnn values and the time outside the model per 100,000 pairs."""
    trained = tiny_model(entries)
    feature = RNNFeature(trained, normalizer="skip", batch_tokens=4096)
    clock = ModelClock(feature.model)
    feature.values(entries[:200])
    speeds, outside = [], []
    for _ in range(rounds):
        clock.seconds, started = 0.0, time.perf_counter()
        for start in range(0, len(entries), chunk_lines):
            feature.values(entries[start:start + chunk_lines])
        total = time.perf_counter() - started
        speeds.append(len(entries) / total)
        outside.append((total - clock.seconds) * 100_000 / len(entries))
    return (f"| tiny model, skip normaliser | {statistics.median(speeds):,.0f} | "
            f"{statistics.median(outside):.2f} s | {min(outside):.2f}-{max(outside):.2f} s |")


def has_workers() -> bool:
    """Whether the installed `mosesrnn score` knows --workers."""
    shown = subprocess.run([sys.executable, "-m", "mosesrnn.cli", "score", "--help"], capture_output=True, text=True)
    return "--workers" in shown.stdout


def end_to_end(table: str, lines: int, model: str, features: str, workers: int | None, rounds: int) -> float:
    """Median lines/s of `mosesrnn score` (a child process, its start-up included) over ``rounds`` runs of
    ``table``, which holds ``lines`` lines."""
    speeds = []
    with tempfile.TemporaryDirectory() as directory:
        command = [sys.executable, "-m", "mosesrnn.cli", "score", table, "-m", model, "--features", features,
                   "-o", os.path.join(directory, "out.gz"), "--quiet", "--restart", "--threads", "1"]
        if features == "rnn":
            command += ["--normalizer", "skip"]
        if workers is not None:
            command += ["--workers", str(workers)]
        for _ in range(rounds):
            started = time.perf_counter()
            subprocess.run(command, check=True)
            speeds.append(lines / (time.perf_counter() - started))
    return statistics.median(speeds)


def main() -> None:
    """Parse the options and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", default=str(TABLE if TABLE.exists() else EXAMPLE))
    parser.add_argument("--pairs", type=int, default=100_000, help="pairs of the model-only rows")
    parser.add_argument("--lines", type=int, default=300_000, help="table lines of the end-to-end rows")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunk-lines", type=int, default=20000, help="as `mosesrnn score` cuts the table")
    parser.add_argument("--workers-list", default="0,1,2", help="the --workers of the end-to-end rows")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the model-only rows")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with contextlib.closing(read_entries(args.table)) as table:  # closing(): older checkouts' readers too
        entries = list(itertools.islice(table, args.pairs))
    flags = sorted(cpu_flags() & {"avx2", "avx512f", "avx512_bf16", "amx_bf16"})
    print(f"mosesrnn {mosesrnn.__version__} from {Path(mosesrnn.__file__).parent}; torch {torch.__version__}; "
          f"{os.cpu_count()} CPUs ({' '.join(flags)}); {args.threads} torch thread(s)")
    print(f"\n== the feeding ceiling: first {len(entries):,} lines of {args.table}, chunks of {args.chunk_lines:,}, "
          f"median of {args.rounds}")
    print("| model | pairs/s | outside the model, per 100,000 pairs | rounds |")
    print("|---|---|---|---|")
    print(feeding_row(entries, args.rounds, args.chunk_lines), flush=True)

    with tempfile.TemporaryDirectory() as directory:
        table = os.path.join(directory, "head.gz")
        with gzip.open(args.table) as source, gzip.open(table, "wb", 1) as out:
            head = list(itertools.islice(source, args.lines))
            out.writelines(head)
        lines = len(head)  # what the rows divide by: the table may hold fewer than --lines
        model = os.path.join(directory, "tiny.pt")
        trained = tiny_model(entries)
        # standing as self-normalised, so that --normalizer skip runs: the network is then a gather, not a softmax
        save_encoder_decoder(model, trained.model, trained.text, info={"self_norm": 0.1, "log_z_mean": 0.0})
        workers = [int(n) for n in args.workers_list.split(",")] if has_workers() else [None]
        short = f" (asked {args.lines:,}: the table holds no more)" if lines < args.lines else ""
        print(f"\n== end to end: mosesrnn score on the first {lines:,} lines{short}, median of {args.rounds} runs "
              f"(start-up included){'' if workers != [None] else '; this scorer has no --workers'}")
        print("| features | --workers | lines/s |")
        print("|---|---|---|")
        for features in ("unk", "rnn"):
            for count in workers:
                speed = end_to_end(table, lines, model, features, count, args.rounds)
                print(f"| {features}{' (tiny model)' if features == 'rnn' else ''} | "
                      f"{'-' if count is None else count} | {speed:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
