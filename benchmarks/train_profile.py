"""Where a training step's time goes, by operator (torch.profiler; prints a Markdown table; not a test).

Runs ``mosesrnn train`` in this process on the first --lines lines of the Tatoeba table for
--updates updates (1 thread, no validation inside the window) under the profiler, and prints the
operators with the most self CPU time, as shares of all operator time, and the updates per
second. The CLI is the same in every version, so the same script profiles an older commit:

    PYTHONPATH=old-checkout python benchmarks/train_profile.py --updates 200   # before
    python benchmarks/train_profile.py --updates 200                           # after
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import tempfile
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

TABLE = str(Path(__file__).resolve().parents[2] / "shared/data/tatoeba-moses-en-fr/phrase-table.gz")


def main() -> None:
    """Profile one short training run and print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", default=TABLE)
    parser.add_argument("--lines", type=int, default=300_000, help="the slice of the table trained on")
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    import mosesrnn
    from mosesrnn.cli import main as mosesrnn_main
    with tempfile.TemporaryDirectory() as work:
        table = Path(work) / "slice.gz"
        with gzip.open(args.table, "rt", encoding="utf-8") as lines, gzip.open(table, "wt", encoding="utf-8") as out:
            out.writelines(itertools.islice(lines, args.lines))
        command = ["train", str(table), "-o", str(Path(work) / "model"), "--preset", args.preset, "--threads", "1",
                   "--max-updates", str(args.updates), "--valid-size", "1000", "--valid-every", str(args.updates), "-q"]
        with profile(activities=[ProfilerActivity.CPU]) as profiler:
            started = time.perf_counter()
            mosesrnn_main(command, standalone_mode=False)
            seconds = time.perf_counter() - started
    events = [e for e in profiler.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    print(f"mosesrnn {mosesrnn.__version__} from {Path(mosesrnn.__file__).parent}; torch {torch.__version__}; "
          f"{args.preset} preset, {args.updates} updates on {args.lines:,} lines, 1 thread: {seconds:.1f} s in all "
          f"(loading and one validation included); operator time {total / 1e6:.1f} s")
    print("| operator | share of operator time | calls |\n|---|---|---|")
    for event in sorted(events, key=lambda e: -e.self_cpu_time_total)[:args.top]:
        print(f"| `{event.key}` | {100 * event.self_cpu_time_total / total:.1f}% | {event.count:,} |")


if __name__ == "__main__":
    main()
