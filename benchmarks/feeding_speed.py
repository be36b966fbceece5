"""How fast Python feeds the network: the host's CPU time a line in the models' process and in each worker, and
`mosesrnn score` end to end.

The host-cost rows run the scorer (``mosesrnn.pipeline.score.score_table``) in this process on the first --lines
lines of the real Tatoeba table with a *tiny* model (4 units everywhere, the slice's shortlists, the normaliser
skipped) and the unk column, for each ``--workers`` of --workers-list, torch on one thread. The model's own calls
(``source_context``, ``score_log_prob``) are timed by the CPU clock of the thread that runs them and taken out of
this process' CPU time around the scorer's call: what is left is its host cost a line (reading, parsing and
encoding in-process, or taking the workers' arrays; the batch plan; writing), the figure that caps a GPU's
lines/s. Each worker's CPU time from its start to its last chunk, over the lines of its own chunks, is its cost a
line (reported by the scorer since issue 56). Their prediction for one device that computes in no host time:
``min(1/model's process, N/worker)`` lines/s, beside the pass's measured lines/s (on a machine with fewer cores
than processes they take turns, and the measured figure is lower).

The end-to-end rows time `mosesrnn score` (a child process) on the same lines, gzipped, with ``--features unk``
(no network) and with the tiny model's rnn column, for each ``--workers``; start-up (the interpreter, the imports,
the model's loading) is the run's wall time less its pass's, reported apart.

    python benchmarks/feeding_speed.py --lines 300000
    PYTHONPATH=/tmp/base python benchmarks/feeding_speed.py --lines 300000   # an older commit, side by side
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import itertools
import logging
import os
import re
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
from mosesrnn.features.unk import UnknownWordFeature
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.runtime.cpu import cpu_flags

try:
    from mosesrnn.pipeline.score import run_score_job
except ImportError:  # a commit before issue 58 named it as the API does
    from mosesrnn.pipeline.score import score_table as run_score_job
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
    """CPU seconds of the calling thread spent inside the model's scoring calls, wrapped on the instance."""

    def __init__(self, model: torch.nn.Module):
        self.seconds = 0.0
        for name in ("source_context", "score_log_prob"):
            setattr(model, name, self._timed(getattr(model, name)))

    def _timed(self, call):
        def timed(*args, **kwargs):
            started = time.thread_time()
            try:
                return call(*args, **kwargs)
            finally:
                self.seconds += time.thread_time() - started
        return timed


def skipping_normalizer(trained: TrainedEncoderDecoder) -> RNNFeature:
    """The rnn column of ``trained`` without the softmax's normaliser (the keyword was ``normaliser`` before
    issue 58)."""
    try:
        return RNNFeature(trained, normalizer="skip", batch_tokens=4096)
    except TypeError:
        return RNNFeature(trained, normaliser="skip", batch_tokens=4096)


def host_cost_row(table: str, lines: int, trained: TrainedEncoderDecoder, workers: int, directory: str) -> str:
    """One table row: the pass's lines/s, the models' process' CPU a line with and without the model's calls,
    each worker's a line of its own chunks (where the scorer reports them: not before issue 56), and the lines/s
    these predict for one device."""
    rnn = skipping_normalizer(trained)
    clock = ModelClock(rnn.model)
    cpu, started = time.process_time(), time.perf_counter()
    summary = run_score_job(table, os.path.join(directory, f"host{workers}.gz"), [rnn, UnknownWordFeature(
        trained.vocabularies)], workers=workers, resume=False)
    cpu, seconds = time.process_time() - cpu, time.perf_counter() - started
    host = (cpu - clock.seconds) / lines
    each = [cpu * workers / lines for cpu in getattr(summary, "worker_cpu_seconds", ())]
    predicted = min(1 / host, *(workers / cost for cost in each)) if each else 1 / host
    worker_text = ", ".join(f"{1e6 * cost:.2f}" for cost in each) or ("-" if not workers else "not reported")
    return (f"| {workers} | {lines / seconds:,.0f} | **{1e6 * host:.2f}** | {1e6 * clock.seconds / lines:.2f} | "
            f"{worker_text} | {predicted:,.0f} |")


def end_to_end(table: str, lines: int, model: str, features: str, workers: int | None,
               rounds: int) -> tuple[float, float]:
    """Median lines/s of `mosesrnn score` (a child process, its start-up included) over ``rounds`` runs of
    ``table``, which holds ``lines`` lines, and the median seconds outside its pass (start-up)."""
    speeds, startups = [], []
    with tempfile.TemporaryDirectory() as directory:
        command = [sys.executable, "-m", "mosesrnn.cli", "score", table, "-m", model, "--features", features,
                   "-o", os.path.join(directory, "out.gz"), "--restart", "--threads", "1"]
        if features == "rnn":
            command += ["--normalizer", "skip"]
        if workers is not None:
            command += ["--workers", str(workers)]
        for _ in range(rounds):
            started = time.perf_counter()
            run = subprocess.run(command, check=True, capture_output=True, text=True)
            wall = time.perf_counter() - started
            speeds.append(lines / wall)
            passed = re.search(r"scored \d+ lines \(\S+\) in ([\d.]+) s", run.stderr)
            startups.append(wall - float(passed.group(1)) if passed else float("nan"))
    return statistics.median(speeds), statistics.median(startups)


def main() -> None:
    """Parse the options and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", default=str(TABLE if TABLE.exists() else EXAMPLE))
    parser.add_argument("--lines", type=int, default=300_000, help="table lines of every row")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each end-to-end row (median)")
    parser.add_argument("--workers-list", default="0,1,2", help="the --workers of the rows")
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING)
    flags = sorted(cpu_flags() & {"avx2", "avx512f", "avx512_bf16", "amx_bf16"})
    print(f"mosesrnn {mosesrnn.__version__} from {Path(mosesrnn.__file__).parent}; torch {torch.__version__}; "
          f"{os.cpu_count()} CPUs ({' '.join(flags)}); 1 torch thread")
    with tempfile.TemporaryDirectory() as directory:
        table = os.path.join(directory, "head.gz")
        with gzip.open(args.table) as source, gzip.open(table, "wb", 1) as out:
            head = list(itertools.islice(source, args.lines))
            out.writelines(head)
        lines = len(head)  # what the rows divide by: the table may hold fewer than --lines
        with contextlib.closing(read_entries(table)) as entries:
            trained = tiny_model(list(entries))
        model = os.path.join(directory, "tiny.pt")
        # standing as self-normalised, so that --normalizer skip runs: the network is then a gather, not a softmax
        save_encoder_decoder(model, trained.model, trained.text, info={"self_norm": 0.1, "log_z_mean": 0.0})
        workers = [int(n) for n in args.workers_list.split(",")]
        short = f" (asked {args.lines:,}: the table holds no more)" if lines < args.lines else ""
        print(f"\n== host cost a line: the scorer in this process on the first {lines:,} lines of {args.table}{short}, "
              f"tiny model (skip normaliser) + unk, the model's calls taken out")
        print("| --workers | lines/s (the pass) | models' process, us a line | model's calls, us a line | "
              "each worker, us a line of its own | predicted lines/s, one device |")
        print("|---|---|---|---|---|---|")
        for count in workers:
            print(host_cost_row(table, lines, trained, count, directory), flush=True)
        print(f"\n== end to end: mosesrnn score on the same {lines:,} lines, median of {args.rounds} runs")
        print("| features | --workers | lines/s, start-up included | start-up (s) | lines/s of the pass alone |")
        print("|---|---|---|---|---|")
        for features in ("unk", "rnn"):
            for count in workers:
                speed, startup = end_to_end(table, lines, model, features, count, args.rounds)
                alone = lines / (lines / speed - startup)
                print(f"| {features}{' (tiny model)' if features == 'rnn' else ''} | {count} | {speed:,.0f} | "
                      f"{startup:.2f} | {alone:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
