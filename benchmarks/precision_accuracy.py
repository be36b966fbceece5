"""How far bf16 and int8 move a trained model's scores from fp32 (prints Markdown tables; not a test).

On the first --pairs lines of a table: for each normaliser (``exact``: log p; ``skip``: the raw score
of a self-normalised model, ``score --normalizer skip``) and each dtype, mean and max
|value(dtype) - value(fp32)| per pair, the mean |value| for scale, and the share of source phrases
(among those with two targets or more) whose best-ranked target changes — what a decoder's choice
between translations would feel.

With ``--parts``, also where bf16 loses its precision: bf16 again with one part of the network run
in fp32 (autocast off around it: the encoder, the decoder's recurrent matrices, its readout O_*, G_r,
the K-way G_l), and with the GRU gates of the encoder computed in bf16 as before the fix of
``mosesrnn.encdec.layers.gru_update`` (which now computes them in float32).

    python benchmarks/precision_accuracy.py examples/model/tatoeba-small.pt \\
        --table examples/phrase-table.gz --pairs 6229 --parts
    python benchmarks/precision_accuracy.py /path/to/trained/best.pt --pairs 20000
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import logging
import platform
from pathlib import Path

import numpy as np
import torch

from mosesrnn.encdec import encoders
from mosesrnn.encdec.layers import gru_update
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.runtime.cpu import cpu_flags

TABLE = str(Path(__file__).resolve().parents[2] / "shared/data/tatoeba-moses-en-fr/phrase-table.gz")
_DECODER = ("W", "U", "C", "V")
_READOUT = ("O_h", "O_y", "O_c", "O_w")
#: bf16 with these parts in fp32: (label, modules kept in fp32, encoder GRU gates in bf16 as before the fix)
PARTS = (
    ("bf16, encoder GRU gates in bf16 (before the fix)", (), True),
    ("... and the encoder in fp32", ("encoder",), True),
    ("... and the decoder's W', U', C, V' in fp32", tuple(f"decoder.{n}" for n in _DECODER), True),
    ("... and the readout O_h, O_y, O_c, O_w in fp32", tuple(f"decoder.{n}" for n in _READOUT), True),
    ("... and G_r, G_l (logits, normaliser) in fp32", ("decoder.G_r", "decoder.G_l"), True),
    ("bf16, G_r and G_l in fp32", ("decoder.G_r", "decoder.G_l"), False),
)


def best_changed(sources: list[str], reference: np.ndarray, other: np.ndarray) -> tuple[int, int]:
    """(source phrases whose argmax target differs, source phrases with two targets or more)."""
    groups: dict[str, list[int]] = {}
    for position, source in enumerate(sources):
        groups.setdefault(source, []).append(position)
    several = [rows for rows in groups.values() if len(rows) > 1]
    changed = sum(int(np.argmax(reference[rows]) != np.argmax(other[rows])) for rows in several)
    return changed, len(several)


def _bf16_gates(x_proj, hU, h):
    """The GRU step as before the fix: gates and state in the projections' dtype (bf16 under autocast)."""
    x_r, x_z, x_h = x_proj.chunk(3, dim=-1)
    u_r, u_z, u_h = hU.chunk(3, dim=-1)
    r, z = torch.sigmoid(x_r + u_r), torch.sigmoid(x_z + u_z)
    return z * h + (1 - z) * torch.tanh(x_h + r * u_h)


def _in_fp32(module: torch.nn.Module):
    """``module.forward`` with autocast off and float inputs made float32."""
    forward, device_type = module.forward, next(module.parameters()).device.type

    def fp32_forward(*args):
        with torch.autocast(device_type, enabled=False):
            return forward(*(a.float() if torch.is_tensor(a) and a.is_floating_point() else a for a in args))
    return fp32_forward


@contextlib.contextmanager
def variant(model: torch.nn.Module, fp32_parts: tuple[str, ...], bf16_gates: bool):
    """Run ``model`` with ``fp32_parts`` in fp32 and, if asked, the encoder's GRU gates in bf16."""
    modules = [model.get_submodule(name) for name in fp32_parts]
    for module in modules:
        module.forward = _in_fp32(module)
    encoders.gru_update = _bf16_gates if bf16_gates else gru_update
    try:
        yield
    finally:
        encoders.gru_update = gru_update
        for module in modules:
            del module.forward


def row(label: str, reference: np.ndarray, other: np.ndarray, sources: list[str]) -> str:
    """One Markdown row: mean and max |difference|, and the best targets changed."""
    difference = np.abs(other - reference)
    changed, groups = best_changed(sources, reference, other)
    return (f"| {label} | {difference.mean():.4f} | {difference.max():.3f} | {changed} of {groups} source phrases "
            f"({changed / max(groups, 1):.2%}) |")


def main() -> None:
    """Score the slice in every dtype (and, with --parts, every bf16 variant) and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--table", default=TABLE)
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtypes", default="bf16,int8", help="compared with fp32 (int8: CPU only)")
    parser.add_argument("--normalizers", default="exact,skip", help="skip: only for a self-normalised model")
    parser.add_argument("--parts", action="store_true", help="also bf16 with one part at a time in fp32")
    args = parser.parse_args()
    logging.getLogger("mosesrnn").setLevel(logging.ERROR)  # bf16 on a CPU without it warns at every feature
    torch.set_num_threads(args.threads)
    trained = load_encoder_decoder(args.model)
    with read_entries(args.table) as table:
        entries = list(itertools.islice(table, args.pairs))
    sources = [entry.source for entry in entries]
    simd = sorted(flag for flag in cpu_flags() if flag.startswith(("avx", "amx")))
    print(f"{args.model}: {trained.info.get('preset')} preset, {trained.info.get('updates')} updates, validation "
          f"perplexity {trained.info.get('valid_ppl') or float('nan'):.2f}; first {len(entries):,} lines of "
          f"{args.table}; {args.device}, {platform.processor() or platform.machine()} ({' '.join(simd) or 'no AVX'}), "
          f"{args.threads} thread(s), torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()} kernels)")
    for normaliser in args.normalizers.split(","):
        if normaliser == "skip" and not trained.info.get("self_norm"):
            continue

        def values(dtype: str, parts: tuple[str, ...] = (), bf16_gates: bool = False,
                   normaliser: str = normaliser) -> np.ndarray:
            feature = RNNFeature(trained, dtype=dtype, device=args.device, normalizer=normaliser)
            with variant(feature.model, parts, bf16_gates):
                return np.array(feature.values(entries))

        reference = values("fp32")
        print(f"\n{normaliser} normaliser; mean |value| in fp32 {np.abs(reference).mean():.2f}\n")
        print("| dtype | mean abs(delta) | max abs(delta) | best target changed |")
        print("|---|---|---|---|")
        for dtype in args.dtypes.split(","):
            print(row(dtype, reference, values(dtype), sources), flush=True)
        for label, parts, bf16_gates in PARTS if args.parts else ():
            print(row(label, reference, values("bf16", parts, bf16_gates), sources), flush=True)


if __name__ == "__main__":
    main()
