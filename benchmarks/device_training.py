"""The summary of on_device.sh's phase 2 (issue 53): one row per model trained on the device, read from what
each kept in MODELS/NAME/ (train.jsonl, status, command, best.pt): updates, speed, the last validation perplexity
(with the unigram's), why it stopped, wall seconds and the size of best.pt.

    python benchmarks/device_training.py OUTDIR/models > OUTDIR/training.md
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def row(folder: Path) -> list[str]:
    records = []
    if (folder / "train.jsonl").exists():
        records = [json.loads(line) for line in (folder / "train.jsonl").read_text().splitlines() if line.strip()]
    end = next((r for r in reversed(records) if r.get("event") == "end"), {})
    valid = next((r for r in reversed(records) if r.get("event") == "valid" and "valid_ppl" in r), {})
    status, wall = ((folder / "status").read_text().split() + ["?", "?"])[:2] if (folder / "status").exists() \
        else ("?", "?")
    best = folder / "best.pt"
    command = (folder / "command").read_text().strip() if (folder / "command").exists() else "?"
    return [folder.name, f"`{command}`", status, str(end.get("update", "?")),
            f"{end['pairs_per_second']:,.0f}/s" if "pairs_per_second" in end else "?",
            f"{valid['valid_ppl']:.2f} (unigram {valid.get('unigram_ppl', 0):.2f})" if valid else "not validated",
            end.get("reason", "?"), wall, f"{best.stat().st_size / 2**20:.1f}" if best.exists() else "none"]


def main() -> None:
    models = Path(sys.argv[1])
    header = ["model", "command", "status", "updates", "speed (examples/s)", "validation perplexity", "stop",
              "wall s", "best.pt MiB"]
    print("## Models trained on the device (on_device.sh, phase 2)\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for folder in sorted(path for path in models.iterdir() if path.is_dir()) if models.is_dir() else []:
        print("| " + " | ".join(row(folder)) + " |")


if __name__ == "__main__":
    main()
