"""Time to a perplexity (MLPerf's measure): validation perplexity against training time, before and after.

Reads the ``train.jsonl`` of two or more runs on the same data and validation set, draws their
validation perplexity against training seconds (validation and data loading excluded, as the
runs record them) into one PNG, and prints when each run first reaches the target: by default the
best perplexity the first run reached. Times between validations are interpolated log-linearly.

    python benchmarks/train_curves.py before/train.jsonl after/train.jsonl --labels "paper recipe,Adam" \\
        -o docs/train-speed.png
"""
from __future__ import annotations

import argparse
import json
import math

__all__ = ["curve", "time_to"]


def curve(path: str) -> list[tuple[float, float]]:
    """(training seconds, validation perplexity) of every validation of a run."""
    with open(path, encoding="utf-8") as lines:
        return [(r["seconds"], r["valid_ppl"]) for r in map(json.loads, lines) if r["event"] == "valid"]


def time_to(points: list[tuple[float, float]], target: float) -> float | None:
    """The first training time at which the perplexity reaches ``target`` (None if never)."""
    previous = (0.0, math.inf)
    for seconds, ppl in points:
        if ppl <= target:
            if math.isinf(previous[1]):
                return seconds
            share = (math.log(previous[1]) - math.log(target)) / (math.log(previous[1]) - math.log(ppl))
            return previous[0] + share * (seconds - previous[0])
        previous = (seconds, ppl)
    return None


def main() -> None:
    """Print the times and draw the plot."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", nargs="+", help="train.jsonl files, the reference first")
    parser.add_argument("--labels", help="comma-separated names of the runs")
    parser.add_argument("--target", type=float, help="perplexity to reach (default: the first run's best)")
    parser.add_argument("-o", "--output", required=True, help="the PNG")
    args = parser.parse_args()
    labels = args.labels.split(",") if args.labels else args.logs
    curves = [curve(path) for path in args.logs]
    target = args.target or min(ppl for _, ppl in curves[0])
    reference = time_to(curves[0], target)
    print(f"target: validation perplexity {target:.2f} per token")
    for index, (label, points) in enumerate(zip(labels, curves)):
        reached = time_to(points, target)
        speedup = f", {reference / reached:.2f}x faster than {labels[0]}" if index and reached and reference else ""
        print(f"{label}: " + (f"{reached:.0f} s of training{speedup}" if reached else "not reached")
              + f"; best {min(p for _, p in points):.2f} after {points[-1][0]:.0f} s")
    from matplotlib.figure import Figure

    from mosesrnn.io.figures import save_png
    figure = Figure(figsize=(7, 4.5))
    axes = figure.subplots()
    for label, points in zip(labels, curves):
        axes.plot([s / 60 for s, _ in points], [p for _, p in points], marker=".", label=label)
    axes.axhline(target, color="grey", linestyle="--", linewidth=0.8, label=f"target {target:.1f}")
    axes.set(xlabel="training time (minutes)", ylabel="validation perplexity per token", yscale="log",
             title="Time to a perplexity")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    save_png(figure, args.output)


if __name__ == "__main__":
    main()
