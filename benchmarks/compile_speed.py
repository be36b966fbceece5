"""The recurrent steps compiled against eager: pairs/s, the compile time, and how far the values move.

For each preset (random weights: speed does not depend on training) the first --pairs lines of the table are
scored by ``RNNFeature`` eagerly and with its recurrent steps compiled (``compile=``: ``default``, inductor, on any
device; ``reduce-overhead``, CUDA graphs, on a GPU), and with the encoder's recurrence as one library GRU call
(``native-gru``: ``GRUEncoder.native``, cuDNN's GRU on cuda), in --rounds alternated rounds after one full pass
that compiles (its time, less the eager pass's, is the compile time). Each row gives the median pairs/s, the
spread, the ratio to eager, and the max and mean absolute difference from eager's values, in nats.

    python benchmarks/compile_speed.py --pairs 20000 --rounds 3 --threads 1
    python benchmarks/compile_speed.py --presets "" --model examples/model/tatoeba-small.pt --pairs 5000
    python benchmarks/compile_speed.py --device cuda --pairs 50000 --batch-tokens 32768
"""
from __future__ import annotations

import argparse
import copy
import itertools
import statistics
import time
from pathlib import Path

import torch
from score_speed import trained_model

from mosesrnn.encdec.encoders import GRUEncoder
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.runtime.cpu import cpu_flags

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT.parent / "shared/data/tatoeba-moses-en-fr/phrase-table.gz"
#: The mode that scores eagerly with the encoder's recurrence as one library GRU call (``GRUEncoder.native``).
NATIVE_GRU = "native-gru"


def timed_pass(feature: RNNFeature, entries, chunk_lines: int = 20000) -> tuple[float, list[float]]:
    """Seconds to score ``entries`` in the scorer's chunks, and the values."""
    values, started = [], time.perf_counter()
    for start in range(0, len(entries), chunk_lines):
        values += feature.values(entries[start:start + chunk_lines])
    return time.perf_counter() - started, values


def _feature(trained, mode: str, device: str, batch_tokens: int, normalizer: str) -> RNNFeature:
    """The rnn feature of ``mode``: ``none`` (eager), a ``compile=`` mode, or ``native-gru`` (eager, the encoder's
    recurrence one library call, on a copy of the model)."""
    if mode == NATIVE_GRU:
        if not isinstance(trained.model.encoder, GRUEncoder):
            raise ValueError(f"its encoder is {type(trained.model.encoder).__name__}, not C14's GRU encoder")
        trained = copy.deepcopy(trained)
        trained.model.encoder.native = True
    return RNNFeature(trained, device=device, batch_tokens=batch_tokens, normalizer=normalizer,
                      compile=False if mode in ("none", NATIVE_GRU) else mode)


def compile_rows(trained, entries, device: str, modes: tuple[str, ...], rounds: int, batch_tokens: int,
                 normalizer: str = "exact", label: str = "") -> list[list[str]]:
    """One row per mode (``none`` first): pairs/s (median of ``rounds`` alternated), its spread, the ratio to
    eager, the compile time (the first pass less an eager pass) and max / mean |delta| against eager. A mode that
    fails gives a row saying how, and the others go on."""
    features, first, values, failed = {}, {}, {}, {}
    for mode in modes:  # the first pass compiles: every shape the timed rounds will see
        try:
            features[mode] = _feature(trained, mode, device, batch_tokens, normalizer)
            first[mode], values[mode] = timed_pass(features[mode], entries)
        except Exception as error:  # noqa: BLE001 - a compiler's failure is a finding, not the end of the check
            if mode == "none":
                raise
            failed[mode] = f"failed: {type(error).__name__}: {str(error).strip().splitlines()[0][:100]}"
    modes = tuple(mode for mode in modes if mode not in failed)
    seconds: dict[str, list[float]] = {mode: [] for mode in modes}
    for number in range(rounds):
        for mode in (modes if number % 2 == 0 else modes[::-1]):
            seconds[mode].append(timed_pass(features[mode], entries)[0])
    eager = statistics.median(len(entries) / s for s in seconds["none"])
    rows = []
    for mode in modes:
        speeds = [len(entries) / s for s in seconds[mode]]
        delta = [abs(a - b) for a, b in zip(values[mode], values["none"])]
        rows.append([label or trained.name, "eager" if mode == "none" else mode, f"{statistics.median(speeds):,.0f}",
                     f"{min(speeds):,.0f}-{max(speeds):,.0f}", f"{statistics.median(speeds) / eager:.2f}",
                     "-" if mode == "none" else f"{max(first[mode] - first['none'], 0):.1f}",
                     "-" if mode == "none" else f"{max(delta):.1e} / {statistics.fmean(delta):.1e}"])
    rows += [[label or trained.name, mode, why, "", "", "", ""] for mode, why in failed.items()]
    return rows


HEADER = ["model", "steps", "pairs/s", "rounds min-max", "x eager", "compile s", "max / mean abs. Δ vs eager (nats)"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", default=str(TABLE if TABLE.exists() else ROOT / "examples/phrase-table.gz"))
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--presets", default="small,paper")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads on a CPU")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-tokens", type=int, default=4096)
    parser.add_argument("--normalizer", default="exact", choices=("exact", "skip"))
    parser.add_argument("--model", action="append", default=[],
                        help="also a trained model file (repeatable): its values move as a real model's do")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with read_entries(args.table) as stream:
        entries = list(itertools.islice(stream, args.pairs))
    modes = ("none", "default", "reduce-overhead") if args.device.startswith("cuda") else ("none", "default")
    modes += (NATIVE_GRU,)
    flags = sorted(cpu_flags() & {"avx2", "avx512f", "avx512_bf16", "amx_bf16"})
    where = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "CPU"
    print(f"torch {torch.__version__}; {where}; CPU flags {' '.join(flags)}; {args.threads} torch thread(s); "
          f"first {len(entries):,} lines of {args.table}; batch_tokens {args.batch_tokens}; --normalizer "
          f"{args.normalizer}; median of {args.rounds} alternated rounds after a compiling pass")
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    models = [(preset, lambda preset=preset: trained_model(preset, entries))
              for preset in filter(None, args.presets.split(","))]
    models += [(Path(path).name, lambda path=path: load_encoder_decoder(path)) for path in args.model]
    for label, load in models:
        for row in compile_rows(load(), entries, args.device, modes, args.rounds, args.batch_tokens,
                                args.normalizer, label=label):
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
