"""One command that measures a machine, a GPU above all (issue 41): every figure of the scorer and the trainers.

GPU time is scarce (a 15-minute session, drawn by chance), so this prints, in under 8 minutes on one GPU:

1. the device (GPU name, or the CPU's model and flags: AVX2, AVX-512, AMX), torch, the git commit;
2. the device's matmul FLOP/s, fp32 and bf16 (the denominator of every roofline share);
3. model only: pairs/s of the model's part of the rnn column (``RNNFeature.compute`` of pairs already in ids,
   its copy back included: the device's work is inside the clock), on the first lines of the Tatoeba table (50,000
   on a GPU), after a warm-up (a second on a GPU) and over rounds (5 on a GPU; median and spread), by preset
   (random weights: speed does not depend on training), path (exact fp32, exact bf16, skip fp32) and
   ``batch_tokens`` (4,096 and 32,768 on a GPU), with the share of the roofline (useful FLOP/s / matmul FLOP/s);
   the encoding (text to ids, the workers' part) as rows of its own;
4. the decode's waits: how often a chunk reads the device back (on a GPU the profiler's synchronisations and
   device-to-host copies; on a CPU the tensor calls that would be one), against its batches;
5. cuda against the CPU: max and mean |delta log p| of the shipped model's values, on the device in fp32 (also
   with TF32 matmuls) and bf16 against the CPU's fp32 (skipped on a CPU);
6. end to end: ``mosesrnn score`` in a child process on the table's first lines repeated to the size asked
   (2,000,000 on a GPU): by ``--workers`` first (up to the cores but one: the models' process needs one), then
   the shipped model, ``--normalizer skip``, a paper-preset model and ``--features unk`` alone; lines/s of the
   pass (its log) and of the whole process, start-up (the process less its pass) as a figure of its own, every
   row's command and stderr kept beside the report (``gpu-check-logs/``);
7. the recurrent steps compiled (``compile=``: inductor; CUDA graphs on a GPU) against eager: pairs/s, compile
   time and how far the values move;
8. ``mosesrnn train``, ``lm train`` and ``bilm train`` for 20 s of training each (a CPU: 20 s; --quick: 5 s):
   updates, speed and the validation perplexity at the end.

The Tatoeba data are read from --data, else the first of bundle/data/tatoeba-moses-en-fr (what `make gpu-bundle`
builds, to travel to a GPU host), shared/data/tatoeba-moses-en-fr inside the checkout, and the same beside it
(../shared). Every row names the sizes it ran on (the ``size`` column). On cuda a run whose data are smaller than
its rows ask for stops at once, in one line; on a CPU the rows run on what there is and each says so ("asked
..."); without any data folder, on a CPU only, examples/phrase-table.gz and the 2,000-sentence slices of tests/data
stand in (said in the same way). Sizes: see ``sizes_for``. Where mosesrnn is not installed, run it with
PYTHONPATH=. from the checkout; a GPU host runs it through ``bash benchmarks/on_device.sh``.

Every table comes with the command that made it. A time budget (--budget, 8 minutes) is checked before
every row: what would not fit is skipped with a note, and children are killed at the budget's end.

    python benchmarks/gpu_check.py --device cuda --out gpu-report.md     # a GPU machine, < 8 minutes
    python benchmarks/gpu_check.py --quick --device cpu                   # CI-sized, about a minute
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import gzip
import itertools
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import torch
from compile_speed import HEADER as COMPILE_HEADER
from compile_speed import NATIVE_GRU, compile_rows
from score_speed import flops_per_pair, matmul_flops, trained_model
from torch.overrides import TorchFunctionMode

from mosesrnn.cli import main as cli
from mosesrnn.encdec.model_file import load_encoder_decoder, save_encoder_decoder
from mosesrnn.features.rnn import RNNFeature
from mosesrnn.formats.phrase_table import read_entries
from mosesrnn.io import gzip_stream
from mosesrnn.io.compressed import count_lines, open_input
from mosesrnn.runtime.cpu import cpu_flags
from mosesrnn.runtime.devices import resolve_device
from mosesrnn.text.id_arrays import length_batches

ROOT = Path(__file__).resolve().parents[1]
#: where the Tatoeba system's data are looked for, in this order: the device bundle (it travels to a GPU host with
#: the tree, `make gpu-bundle`), shared/ inside the checkout, and ../shared beside it
DATA_FOLDERS = (ROOT / "bundle/data/tatoeba-moses-en-fr", ROOT / "shared/data/tatoeba-moses-en-fr",
                ROOT.parent / "shared/data/tatoeba-moses-en-fr")
TESTS = ROOT / "tests/data"
#: a data folder's files: the phrase table, and the joint model's and CSLM's training text and alignment
TABLE_FILE, TRAIN_FILES = "phrase-table.gz", ("train.tok.en.gz", "train.tok.fr.gz", "train.align.gdfa.gz")
MODEL = ROOT / "examples/model/tatoeba-small.pt"
PATHS = (("exact", "fp32"), ("exact", "bf16"), ("skip", "fp32"))
#: each section's deadline as a share of the budget (model only, waits, agreement, end to end, compiled; training
#: takes the rest), by the sections' weight: on a GPU the end-to-end rows and the compiling weigh most, on a CPU
#: the paper preset's model-only rows
DEADLINES = {"gpu": (0.15, 0.20, 0.24, 0.62, 0.80), "cpu": (0.35, 0.40, 0.42, 0.65, 0.82)}
SCORED = re.compile(r"scored (\d+) lines .* in ([\d.]+) s \(([\d.]+) lines/s[;)]")
STOPPED = re.compile(r"stopped \((\w+)\) after (\d+) updates: .*; (\d+) ([\w-]+)/s")
PERPLEXITY = re.compile(r"validation perplexity ([\d.]+)")


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How much each section does: a GPU run, a CPU run (the same rows, smaller) and --quick (CI)."""
    pairs: int  # model only: the slice every row scores
    rounds: int  # alternated rounds per row (the median is shown)
    batch_tokens: tuple[int, ...]
    score_lines: int  # end to end: the first lines of the table
    agreement_pairs: int
    train_seconds: int
    train_lines: int  # `mosesrnn train`: the first lines of the table
    matmul_hidden: int  # the peak: (1024 x H) by (H x 3H)
    compile_pairs: int  # the compiled steps against eager
    chunk_lines: int = 20000  # as `mosesrnn score` cuts the table (the waits are counted per chunk)
    train_sentences: int | None = None  # lm and bilm train: the first sentences of the training text (None: all)
    warmup_seconds: float = 0.0  # model only: each feature computes for this long before its rounds

    def table_lines(self) -> int:
        """The most lines of the phrase table any row reads (the end-to-end rows repeat the table to their size)."""
        return max(self.pairs, self.agreement_pairs, self.train_lines, self.compile_pairs)


def sizes_for(device: str, quick: bool) -> Sizes:
    """The sizes of a run on ``device`` (a GPU: batches up to 32,768 tokens; the CPU: smaller)."""
    gpu = device != "cpu"
    batch_tokens = (4096, 32768) if gpu else (1024, 4096)
    if quick:
        return Sizes(50, 1, batch_tokens, 4000, 1000, 5, 3000, 256, 100, 20, 2000)
    if gpu:
        return Sizes(50_000, 5, batch_tokens, 2_000_000, 5000, 20, 500_000, 4096, 50_000, warmup_seconds=1.0)
    return Sizes(500, 5, batch_tokens, 40_000, 2000, 20, 20_000, 1024, 500, 200, 20_000, warmup_seconds=0.2)


@dataclasses.dataclass(frozen=True)
class Data:
    """The data a run reads: the phrase table and its line count, the training text, where they came from."""
    table: str
    table_lines: int
    train: tuple[str, str, str]  # source and target sentences, their alignment
    train_sentences: int
    where: str

    def shortfalls(self, sizes: Sizes) -> list[str]:
        """What the rows ask for and the data lack, in words (empty: every row runs on the size it names)."""
        return ([f"the phrase table {self.table} holds {self.table_lines:,} lines and the rows ask for up to "
                 f"{sizes.table_lines():,}"] if self.table_lines < sizes.table_lines() else [])


def find_data(given: str | None, table: str | None) -> Data | None:
    """The data folder (``given``, else the first of :data:`DATA_FOLDERS` there is) and its files; ``table``
    replaces its phrase table. None where there is no folder: then the stand-ins (:func:`stand_ins`)."""
    folder = Path(given) if given else next((f for f in DATA_FOLDERS if (f / TABLE_FILE).exists()), None)
    if folder is None:
        return None
    missing = [name for name in (TABLE_FILE, *TRAIN_FILES) if not (folder / name).exists()]
    if missing and not (table and missing == [TABLE_FILE]):
        raise SystemExit(f"gpu_check: {folder} lacks {', '.join(missing)}: build the bundle with `make gpu-bundle` "
                         f"(beside ../shared) or name a Tatoeba data folder with --data")
    table = table or str(folder / TABLE_FILE)
    train = tuple(str(folder / name) for name in TRAIN_FILES)
    return Data(table, count_lines(table), train, count_lines(train[0]), str(folder))


def stand_ins(table: str | None) -> Data:
    """Where no data folder is at hand (a CPU run only): the example table and tests/data's 2,000 sentences."""
    table = table or str(ROOT / "examples/phrase-table.gz")
    train = tuple(str(TESTS / f"tatoeba.train2k.{name}") for name in ("tok.en", "tok.fr", "align"))
    return Data(table, count_lines(table), train, count_lines(train[0]),
                "stand-ins: no Tatoeba data folder was found (examples/ and tests/data)")


def refusal(device: str, data: Data | None, sizes: Sizes) -> str | None:
    """The one line that stops a GPU run on data smaller than its rows ask for (None: it runs). A CPU run goes on,
    each row saying what it used."""
    if device == "cpu":
        return None
    if data is None:
        return ("gpu_check: no Tatoeba data folder (bundle/data/tatoeba-moses-en-fr, shared/ or ../shared): a GPU run "
                "would measure stand-ins; build the bundle with `make gpu-bundle` or pass --data")
    if short := data.shortfalls(sizes):
        return (f"gpu_check: {'; '.join(short)}: a GPU run would measure less than its rows name; rebuild the bundle "
                f"(`make gpu-bundle`) or pass --data with the whole Tatoeba data")
    return None


def sized(used: int, asked: int, unit: str) -> str:
    """A row's size cell: ``50,000 pairs``, or what it used and what it asked for where the data ran short."""
    return f"{used:,} {unit}" + (f" (asked {asked:,}: the data hold no more)" if used < asked else "")


class Report:
    """Markdown on stdout, and in ``out`` (rewritten after every section, so a killed run leaves its figures)."""

    def __init__(self, out: str | None):
        self.out, self.lines, self.notes, self.started = out, [], [], time.monotonic()

    def line(self, text: str = "") -> None:
        print(text, flush=True)
        self.lines.append(text)

    def section(self, title: str) -> None:
        self.flush_notes()
        self.save()
        self.line(f"\n## {title}\n")
        print(f"gpu_check: {time.monotonic() - self.started:.0f} s: {title}", file=sys.stderr, flush=True)

    def command(self, text: str) -> None:
        self.line(f"Command: `{text}`\n")

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        self.line("| " + " | ".join(header) + " |")
        self.line("|" + "---|" * len(header))
        for row in rows:
            self.line("| " + " | ".join(row) + " |")
        self.flush_notes()

    def note(self, text: str) -> None:
        """A line for after the section's table (what was skipped)."""
        self.notes.append(text)

    def flush_notes(self) -> None:
        for text in self.notes:
            self.line(f"\n{text}")
        self.notes.clear()

    def save(self) -> None:
        if self.out:
            Path(self.out).write_text("\n".join(self.lines) + "\n", encoding="utf-8")


class Budget:
    """The run's time budget. A section runs until its deadline, a share of the budget counted from the start (so
    that what one section leaves unused goes to the next); each row asks whether it fits before it starts."""

    def __init__(self, seconds: float, report: Report):
        self.seconds, self.report, self.started, self.deadline = seconds, report, time.monotonic(), seconds

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> float:
        """Seconds left of the whole budget (a child still running then is stopped)."""
        return self.seconds - self.elapsed()

    def until(self, share: float) -> None:
        """The next rows' deadline: ``share`` of the budget, counted from the start."""
        self.deadline = share * self.seconds

    def allows(self, need: float, what: str) -> bool:
        """Whether ``need`` seconds are left before the deadline; if not, a note says what is skipped."""
        left = self.deadline - self.elapsed()
        if left >= need:
            return True
        self.report.note(f"_skipped ({what}): it needs about {need:.0f} s, and {max(left, 0):.0f} s are left "
                         f"before this section's deadline, {self.deadline:.0f} s into the {self.seconds:.0f}-s "
                         f"budget_")
        return False


def shell(words) -> str:
    return " ".join(shlex.quote(str(word)) for word in words)


def shown(words: list, folder: str) -> str:
    """A child's command line as the report shows it: ``mosesrnn ...``, paths relative to the repository or to
    the run's temporary folder."""
    return shell(["mosesrnn", *words]).replace(folder + "/", "").replace(str(ROOT) + "/", "")


def run_child(words: list[str], budget: Budget) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``python -m mosesrnn WORDS``, killed at the budget's end; its result and wall seconds."""
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "mosesrnn", *map(str, words)], capture_output=True, text=True,
                              timeout=max(budget.left(), 1), cwd=ROOT)
    except subprocess.TimeoutExpired as expired:
        done = subprocess.CompletedProcess(expired.cmd, -9, expired.stdout or "", "killed at the budget's end")
    return done, time.perf_counter() - started


def failure(done: subprocess.CompletedProcess) -> str:
    tail = (done.stderr or "").strip().splitlines()[-1:] or ["no message"]
    return f"failed (status {done.returncode}: {tail[0][:120]})"


# -- 1. the device ---------------------------------------------------------------------------------------------

def cpu_name() -> str:
    """lscpu's model name (else /proc/cpuinfo's), its instruction sets that matter here, and the core count."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        text = ""
    found = re.search(r"^Model name:\s*(.+)$", text, re.M)
    name = found[1].strip() if found else "unknown CPU"
    flags = cpu_flags()
    sets = [label for label, flag in (("AVX2", "avx2"), ("AVX-512", "avx512f"), ("AVX512-BF16", "avx512_bf16"),
                                       ("AMX", "amx_bf16")) if flag in flags]
    return f"{name}, {len(os.sched_getaffinity(0))} cores, {' '.join(sets) or 'no AVX2'}"


def git_commit(given: str | None) -> str:
    """The checkout's commit, marked when tracked files differ from it (read-only git calls); ``given`` (--commit)
    where the checkout is a copy without git."""
    if given:
        return f"{given} (as given by --commit)"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=ROOT, timeout=10)
        changed = subprocess.run(["git", "diff", "--quiet", "HEAD", "--"], cwd=ROOT, timeout=30).returncode
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"
    if commit.returncode:
        return "unknown (not a git checkout)"
    return commit.stdout.strip() + (" + local changes" if changed else "")


def device_section(report: Report, device: str, args, sizes: Sizes, data: Data) -> None:
    report.section("Device")
    if device != "cpu":
        properties = torch.cuda.get_device_properties(device)
        tf32 = "on" if torch.backends.cuda.matmul.allow_tf32 else "off"
        report.line(f"- device: {torch.cuda.get_device_name(device)}, {properties.total_memory / 2**30:.0f} GiB, "
                    f"CUDA {torch.version.cuda}; TF32 matmuls {tf32}")
    report.line(f"- CPU{' (host)' if device != 'cpu' else ''}: {cpu_name()}; torch's CPU kernels "
                f"{torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} threads")
    report.line(f"- torch {torch.__version__}; python {sys.version.split()[0]}; git commit {git_commit(args.commit)}")
    report.line(f"- {datetime.datetime.now().isoformat(timespec='seconds')}; "
                f"command: `{shell(['python', 'benchmarks/gpu_check.py', *sys.argv[1:]])}`")
    report.line(f"- data: {data.where}; table {data.table} ({data.table_lines:,} lines); training text "
                f"{data.train[0]} ({data.train_sentences:,} sentences)")
    report.line(f"- sizes: {dataclasses.asdict(sizes)}; budget {args.budget:.0f} s; gzip through "
                f"{gzip_stream.backend_name()}")


# -- 2. the matmul peak ----------------------------------------------------------------------------------------

def matmul_section(report: Report, device: str, sizes: Sizes) -> dict[str, float]:
    """FLOP/s of a big matmul, fp32 and bf16 autocast, as the scorer runs them."""
    report.section("Matmul peak")
    hidden = sizes.matmul_hidden
    report.command(f"score_speed.matmul_flops({hidden}, dtype, '{device}'): (1024 x {hidden}) by "
                   f"({hidden} x {3 * hidden}), bf16 by autocast, 1 s each")
    peaks = {dtype: matmul_flops(hidden, dtype, device) for dtype in ("fp32", "bf16")}
    report.table(["dtype", "GFLOP/s"], [[dtype, f"{peak / 1e9:,.1f}"] for dtype, peak in peaks.items()])
    return peaks


# -- 3. the model alone ----------------------------------------------------------------------------------------

def chunks_of(entries, size: int) -> list:
    """``entries`` cut as the scorer cuts a table."""
    return [entries[start:start + size] for start in range(0, len(entries), size)]


def compute_speed(feature: RNNFeature, encoded: list, pairs: int, warmup: float) -> float:
    """pairs/s of ``feature.compute`` over chunks already in ids, after ``warmup`` seconds of the same work. The
    values come back to the host in each call (one copy a chunk), so the device's work is inside the clock."""
    ended = time.perf_counter() + warmup
    feature.compute(encoded[0])
    while time.perf_counter() < ended:
        feature.compute(encoded[0])
    started = time.perf_counter()
    for chunk in encoded:
        feature.compute(chunk)
    return pairs / (time.perf_counter() - started)


def spread(speeds: list[float]) -> str:
    """A row's rounds: their min-max, and how far apart they are."""
    return f"{min(speeds):,.0f}-{max(speeds):,.0f} ({max(speeds) / min(speeds):.2f}x)"


def model_rows(preset: str, trained, entries, peaks, device: str, sizes: Sizes, budget: Budget) -> list[list[str]]:
    """One row per (batch_tokens, path): median pairs/s over alternated rounds and its roofline share."""
    config, rows, need = trained.model.config, [], 1.0
    flops = {normaliser: flops_per_pair(config, entries, skip=normaliser == "skip")[0]
             for normaliser in ("exact", "skip")}
    chunks = chunks_of(entries, sizes.chunk_lines)
    for batch_tokens in sizes.batch_tokens:
        if not budget.allows(need, f"{preset}, batch_tokens {batch_tokens} and after"):
            break
        started = time.monotonic()
        features = {path: RNNFeature(trained, normalizer=path[0], dtype=path[1], batch_tokens=batch_tokens,
                                     device=device) for path in PATHS}
        encoded = [features[PATHS[0]].encoder(chunk) for chunk in chunks]
        speeds: dict[tuple, list[float]] = {path: [] for path in PATHS}
        for round_number in range(sizes.rounds):
            for path in (PATHS if round_number % 2 == 0 else PATHS[::-1]):
                warmup = sizes.warmup_seconds if round_number == 0 else 0.0
                speeds[path].append(compute_speed(features[path], encoded, len(entries), warmup))
        for normaliser, dtype in PATHS:
            speed = statistics.median(speeds[normaliser, dtype])
            useful = speed * flops[normaliser]
            rows.append([preset, sized(len(entries), sizes.pairs, "pairs"), f"{batch_tokens:,}",
                         f"{normaliser} {dtype}", f"{speed:,.0f}", spread(speeds[normaliser, dtype]),
                         f"{flops[normaliser] / 1e6:.2f}", f"{useful / 1e9:,.1f}",
                         f"{useful / peaks[dtype]:.1%} of {dtype}"])
        need = time.monotonic() - started
    return rows


def encoding_section(report: Report, entries, sizes: Sizes) -> None:
    """pairs/s of the rnn column's encoder (text -> ids, on the host: the workers' part), apart from the model's."""
    report.section("Encoding: pairs/s")
    report.command(f"RNNFeature(load_encoder_decoder('{MODEL.relative_to(ROOT)}')).encoder(chunk) over the first "
                   f"{len(entries):,} pairs in chunks of {sizes.chunk_lines:,}, {max(sizes.rounds, 1)} round(s), "
                   f"median")
    feature, chunks = RNNFeature(load_encoder_decoder(str(MODEL))), chunks_of(entries, sizes.chunk_lines)
    speeds = []
    for _ in range(max(sizes.rounds, 1)):
        started = time.perf_counter()
        for chunk in chunks:
            feature.encoder(chunk)
        speeds.append(len(entries) / (time.perf_counter() - started))
    report.table(["encoder", "size", "pairs/s", "rounds min-max (spread)"],
                 [["shipped model's (15,000-word shortlists)", sized(len(entries), sizes.pairs, "pairs"),
                   f"{statistics.median(speeds):,.0f}", spread(speeds)]])
    report.line("\nOne process' host work a pair before the model: with `score --workers N` the N workers do it.")


def random_model(preset: str, entries):
    """score_speed's random-weight model of ``preset``, built on one thread: its init takes the SVD of six
    (H x H) Gaussian matrices, which threads on a busy CPU slow down several times (paper, H = 1000)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return trained_model(preset, entries)
    finally:
        torch.set_num_threads(threads)


def model_section(report: Report, budget: Budget, device: str, entries, peaks, sizes: Sizes):
    """The model alone, by preset, path and batch_tokens; returns the paper preset's model (for end to end)."""
    report.section("Model only: pairs/s")
    report.command(f"RNNFeature(score_speed.trained_model(preset, pairs), normalizer=..., dtype=..., "
                   f"batch_tokens=..., device='{device}').compute(ids) over the first {len(entries):,} pairs in "
                   f"chunks of {sizes.chunk_lines:,}, encoded beforehand (the encoding: the next section), a "
                   f"{sizes.warmup_seconds:g}-s warm-up, {sizes.rounds} alternated round(s), median")
    rows, paper = [], None
    for preset in ("small", "paper"):
        if not budget.allows(5, f"preset {preset}"):
            break
        trained = random_model(preset, entries)
        rows += model_rows(preset, trained, entries, peaks, device, sizes, budget)
        paper = trained if preset == "paper" else paper
    report.table(["preset", "size", "batch_tokens", "path", "pairs/s", "rounds min-max (spread)", "MFLOP/pair",
                  "useful GFLOP/s", "roofline share"], rows)
    report.line("\nMFLOP/pair from `score_speed.flops_per_pair` (skip: K = 1, the target's row of G_l); "
                "roofline share = pairs/s x FLOPs/pair / the matmul peak of that dtype.")
    return paper


# -- 4. the decode's waits -------------------------------------------------------------------------------------

class HostReads(TorchFunctionMode):
    """Counts the tensor calls that bring a value back to the host (on a GPU, each waits for the device)."""

    READS = {"tolist", "item", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__"}

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in self.READS or (name == "to" and any(str(a) == "cpu" for a in args[1:])):
            self.count += 1
        return func(*args, **(kwargs or {}))


#: the profiler's events of a host waiting for a GPU: the runtime's synchronisations and a scalar's read
WAITS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")


def device_waits(feature: RNNFeature, chunks: list) -> dict[str, int]:
    """The profiler's count, over ``chunks``, of synchronisations, device-to-host copies and scalar reads."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as profiled:
        for chunk in chunks:
            feature.values(chunk)
    found = {"synchronise": 0, "DtoH": 0, "scalar": 0}
    for event in profiled.events():
        if event.name in WAITS:
            found["synchronise"] += 1
        elif "DtoH" in event.name or "Device -> " in event.name:
            found["DtoH"] += 1
        elif event.name == "aten::_local_scalar_dense":  # what .item() and .tolist() of a GPU tensor run
            found["scalar"] += 1
    return found


def waits_section(report: Report, budget: Budget, device: str, entries, sizes: Sizes) -> None:
    """How often a chunk of the scorer waits for the device, against how many batches it runs."""
    report.section("Decode waits per chunk")
    if not budget.allows(10, "the count"):
        return
    batch_tokens = min(sizes.batch_tokens)  # the smallest batches: the most of them per chunk
    chunks = chunks_of(entries, sizes.chunk_lines)
    if device == "cpu":
        report.command(f"RNNFeature(load_encoder_decoder('{MODEL.relative_to(ROOT)}'), normalizer=..., dtype=..., "
                       f"batch_tokens={batch_tokens}).values(chunk) under a TorchFunctionMode counting the tensor "
                       f"calls that read a value back (tolist, item, cpu, numpy, bool, int, float), chunks of "
                       f"{sizes.chunk_lines:,} pairs")
    else:
        report.command(f"torch.profiler (CPU + CUDA) around RNNFeature(load_encoder_decoder("
                       f"'{MODEL.relative_to(ROOT)}'), device='{device}', normalizer=..., dtype=..., batch_tokens="
                       f"{batch_tokens}).values(chunk), chunks of {sizes.chunk_lines:,} pairs: "
                       f"{', '.join(WAITS)}; device-to-host copies; aten::_local_scalar_dense")
    trained = load_encoder_decoder(str(MODEL), map_location=device)
    rows = []
    for normaliser, dtype in PATHS:
        feature = RNNFeature(trained, normalizer=normaliser, dtype=dtype, batch_tokens=batch_tokens, device=device)
        batches = [len(length_batches(feature.encoder(chunk).outputs.lengths + 1, batch_tokens)) for chunk in chunks]
        feature.values(chunks[0])  # warm-up: the device's first use
        size = sized(len(entries), sizes.pairs, "pairs") + f" in {len(chunks)} chunks"
        per_chunk = f"{statistics.fmean(batches):.1f}"
        if device == "cpu":
            with HostReads() as reads:
                for chunk in chunks:
                    feature.values(chunk)
            rows.append([f"{normaliser} {dtype}", size, per_chunk, f"{reads.count / len(chunks):.1f}"])
        else:
            found = device_waits(feature, chunks)
            rows.append([f"{normaliser} {dtype}", size, per_chunk, f"{found['synchronise'] / len(chunks):.1f}",
                         f"{found['DtoH'] / len(chunks):.1f}", f"{found['scalar'] / len(chunks):.1f}"])
    if device == "cpu":
        report.table(["path", "size", "batches per chunk", "host reads per chunk"], rows)
    else:
        report.table(["path", "size", "batches per chunk", "synchronisations per chunk", "DtoH copies per chunk",
                      "scalar reads per chunk"], rows)
    report.line("\nOne wait per chunk (the values' copy back) whatever the batches: the lengths, the order and the "
                "positions are worked out on the host (mosesrnn.encdec.packing).")


# -- 5. cuda against the CPU -----------------------------------------------------------------------------------

def agreement_section(report: Report, budget: Budget, device: str, table: str, sizes: Sizes) -> None:
    """max and mean |delta log p| between the device's values of the shipped model and the CPU's fp32 ones."""
    report.section("cuda vs CPU agreement")
    if device == "cpu":
        report.line("skipped: this run's device is the CPU, so there is no second device to compare with "
                    "(run with --device cuda on a GPU machine)")
        return
    if not budget.allows(20, "the comparison"):
        return
    with read_entries(table) as stream:
        entries = list(itertools.islice(stream, sizes.agreement_pairs))
    report.command(f"RNNFeature(load_encoder_decoder('{MODEL.relative_to(ROOT)}'), device=..., dtype=...)"
                   f".values(first {len(entries):,} pairs), against device='cpu', dtype='fp32'")
    reference = RNNFeature(load_encoder_decoder(str(MODEL)), device="cpu").values(entries)
    rows = []
    for dtype, tf32 in (("fp32", False), ("fp32", True), ("bf16", False)):
        before = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            values = RNNFeature(load_encoder_decoder(str(MODEL), map_location=device), device=device,
                                dtype=dtype).values(entries)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before
        delta = [abs(a - b) for a, b in zip(values, reference)]
        rows.append([f"{device} {dtype}{' (TF32 matmuls)' if tf32 else ''}",
                     sized(len(entries), sizes.agreement_pairs, "pairs"), f"{max(delta):.2e}",
                     f"{statistics.fmean(delta):.2e}"])
    report.table(["values", "size", "max |Δ log p| (nats)", "mean |Δ log p|"], rows)
    report.line(f"\nmean |log p| of the CPU's values: {statistics.fmean(abs(v) for v in reference):.2f}")


# -- 6. end to end ---------------------------------------------------------------------------------------------

def write_head(table: str, path: str, lines: int | None) -> int:
    """Write the first ``lines`` lines (None: all) of ``table`` (gzip or not) as a gzip file; how many there were."""
    with open_input(table) as source, gzip.open(path, "wb", compresslevel=1) as out:
        head = list(itertools.islice(source, lines))
        out.writelines(head)
    return len(head)


def write_repeated(table: str, path: str, lines: int) -> tuple[int, int]:
    """Write ``lines`` lines as a gzip file: ``table``'s lines, repeated from its start as often as it takes (a
    scorer's speed does not depend on which lines it reads); (lines written, lines of the table used)."""
    with open_input(table) as source:
        head = list(itertools.islice(source, lines))
    if head and not head[-1].endswith(b"\n"):
        head[-1] += b"\n"
    with gzip.open(path, "wb", compresslevel=1) as out:
        written = 0
        while head and written < lines:
            part = head[:lines - written]
            out.writelines(part)
            written += len(part)
    return written, len(head)


def worker_counts(cores: int) -> list[int]:
    """The --workers of the end-to-end rows, most first: the cores but one (the models' process needs one), the
    powers of two below, 1 and 0."""
    most = max(cores - 1, 1)
    return sorted({0, 1, most} | {2 ** k for k in range(1, most.bit_length()) if 2 ** k <= most}, reverse=True)


def score_runs(device: str, paper_path: str | None, workers: bool) -> list[tuple[str, list]]:
    """(label, options) of every end-to-end row: --workers first, then the shipped model's paths, paper, unk alone
    (the scorer's default workers)."""
    model, runs = ["-m", MODEL], []
    if workers:
        runs += [(f"shipped model, --workers {count}", model + ["--workers", count])
                 for count in worker_counts(len(os.sched_getaffinity(0)))]
    runs.append(("shipped small model, exact", model))
    runs.append(("shipped model, --normalizer skip", model + ["--normalizer", "skip"]))
    if paper_path:
        runs.append(("paper preset, random weights", ["-m", paper_path]))
    runs.append(("--features unk alone (no network)", model + ["--features", "unk"]))
    return [(label, options + ["--device", device]) for label, options in runs]


def knows_workers() -> bool:
    """Whether the installed `mosesrnn score` has --workers (what its --help lists, read without a child)."""
    score = cli.get_command(click.Context(cli), "score")
    return any("--workers" in parameter.opts for parameter in score.params)


def keep_log(logs: Path | None, number: int, label: str, command: str, done: subprocess.CompletedProcess) -> str:
    """Write a row's command and stderr to ``logs/NN-label.log``; its name for the report ("-" without logs)."""
    if logs is None:
        return "-"
    name = f"{number:02d}-{re.sub(r'[^a-z0-9]+', '-', label.lower()).strip('-')}.log"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / name).write_text(f"$ {command}\n(exit status {done.returncode})\n{done.stderr}", encoding="utf-8")
    return f"{logs.name}/{name}"


def score_row(label: str, options: list, folder: str, slice_path: str, budget: Budget, lines: int,
              size: str, log: tuple[Path | None, int]) -> list[str]:
    out = os.path.join(folder, "out.gz")
    words = ["score", slice_path, *options, "-o", out, "--restart"]
    done, wall = run_child(words, budget)
    kept = keep_log(log[0], log[1], label, shown(words, folder), done)
    for leftover in (out, out + ".json"):
        if os.path.exists(leftover):
            os.remove(leftover)
    if done.returncode:
        return [label, f"`{shown(words, folder)}`", size, failure(done), "", "", "", kept]
    found = SCORED.search(done.stderr)
    logged, startup = (f"{float(found[3]):,.0f}", f"{wall - float(found[2]):.1f}") if found else ("not logged", "?")
    if found and int(found[1]) != lines:  # what the scorer read, not what was asked
        size = f"{int(found[1]):,} lines scored of {lines:,} written"
    return [label, f"`{shown(words, folder)}`", size, logged, startup, f"{wall:.1f}", f"{lines / wall:,.0f}", kept]


def score_section(report: Report, budget: Budget, device: str, table: str, paper, sizes: Sizes,
                  logs: Path | None) -> None:
    """`mosesrnn score` in a child process: lines/s of its pass as it logs them, its start-up, and lines/s by the
    wall clock (start-up included); each row's command and stderr in ``logs``."""
    report.section("End to end: mosesrnn score")
    workers = knows_workers()
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as folder:
        slice_path = os.path.join(folder, "slice.gz")
        lines, used = write_repeated(table, slice_path, sizes.score_lines)
        paper_path = None
        if paper is not None:
            paper_path = os.path.join(folder, "paper-random.pt")
            save_encoder_decoder(paper_path, paper.model.to("cpu"), paper.text)
        repeated = f", repeated to {lines:,}" if lines > used else ""
        report.line(f"slice.gz: the first {used:,} lines of {table}{repeated}; paper-random.pt: the "
                    f"paper-preset model of the model-only rows (random weights); rows without --workers run "
                    f"the scorer's default{' (--workers auto)' if workers else ''}; start-up: the process' wall "
                    f"time less its pass (interpreter, imports, the model's loading)\n")
        rows, need = [], 10.0
        for number, (label, options) in enumerate(score_runs(device, paper_path, workers), start=1):
            if not budget.allows(need, f"{label} and after"):
                break
            started = time.monotonic()
            rows.append(score_row(label, options, folder, slice_path, budget, lines,
                                  sized(lines, sizes.score_lines, "lines"), (logs, number)))
            need = max(need, time.monotonic() - started)
    report.table(["run", "command", "size", "lines/s (its log)", "start-up s", "wall s (start-up included)",
                  "lines/s (wall)", "stderr"], rows)
    if not workers:
        report.line("\n--workers rows skipped: the installed `mosesrnn score --help` has no --workers option yet")


# -- 7. the recurrent steps compiled ---------------------------------------------------------------------------

def compile_section(report: Report, budget: Budget, device: str, data: Data, sizes: Sizes) -> None:
    """compile_speed.compile_rows for the small and paper presets at the largest batch_tokens."""
    report.section("Compiled recurrent steps")
    modes = ("none", "default", "reduce-overhead") if device != "cpu" else ("none", "default")
    modes += (NATIVE_GRU,)
    with read_entries(data.table) as stream:
        entries = list(itertools.islice(stream, sizes.compile_pairs))
    batch_tokens = max(sizes.batch_tokens)
    report.command(f"compile_speed.compile_rows(score_speed.trained_model(preset, pairs), first {len(entries):,} "
                   f"pairs, '{device}', modes {', '.join(modes)}, rounds={sizes.rounds}, batch_tokens={batch_tokens})"
                   f" (as `python benchmarks/compile_speed.py --device {device} --pairs {sizes.compile_pairs} "
                   f"--batch-tokens {batch_tokens}`)")
    rows, need = [], 30.0
    for preset in ("small", "paper"):
        if not budget.allows(need, f"compiled steps, {preset} and after"):
            break
        started = time.monotonic()
        for row in compile_rows(random_model(preset, entries), entries, device, modes, sizes.rounds, batch_tokens,
                                label=preset):
            rows.append([row[0], sized(len(entries), sizes.compile_pairs, "pairs"), *row[1:]])
        need = time.monotonic() - started
    report.table([COMPILE_HEADER[0], "size", *COMPILE_HEADER[1:]], rows)
    report.line("\nexact fp32; compile s: the first pass (it compiles every shape the rounds see) less eager's; "
                "reduce-overhead replays CUDA graphs, each step's rows rounded up to a bucket "
                "(mosesrnn.encdec.compiled); native-gru runs the encoder's recurrence as one torch.gru call "
                "(GRUEncoder.native: cuDNN's GRU on cuda), the rest eager")


# -- 8. training -----------------------------------------------------------------------------------------------

def training_runs(train_table: str, text: tuple[str, str, str], device: str,
                  sizes: Sizes) -> list[tuple[str, list]]:
    """(label, command words) of the three trainers: ``train`` on ``train_table``, the others on ``text``, the
    training sentences (the Tatoeba system's 140,098, or their first ``sizes.train_sentences``)."""
    en, fr, align = text
    small = device == "cpu"  # the CPU trains the small presets; a GPU the shipped recipe and Moses' presets
    common = ["--max-time", f"{sizes.train_seconds}s", "--device", device, "--valid-every", 10 ** 9, "--restart"]
    return [("train (RNN Encoder-Decoder, small)", ["train", train_table, "--preset", "small", *common]),
            (f"lm train (CSLM, {'small' if small else 'moses'})",
             ["lm", "train", fr, "--preset", "small" if small else "moses", *common]),
            (f"bilm train (joint, {'small' if small else 'moses'})",
             ["bilm", "train", en, fr, align, "--preset", "small" if small else "moses", *common])]


def run_log(output: str) -> dict:
    """updates, examples/s and the last validation perplexity of a finished run, from its train.jsonl."""
    try:
        records = [json.loads(line) for line in Path(output, "train.jsonl").read_text().splitlines() if line]
    except (OSError, ValueError):
        return {}
    found = {}
    for record in records:
        if record.get("event") == "end":
            found.update(updates=str(record.get("update", "")), speed=f"{record.get('pairs_per_second', 0):,.0f}/s",
                         stop=record.get("reason", ""))
        if record.get("event") == "valid" and "valid_ppl" in record:
            found["perplexity"] = f"{record['valid_ppl']:.2f}"
    return found


def training_row(label: str, words: list, folder: str, budget: Budget, size: str) -> list[str]:
    """Run one trainer; its updates, speed, final validation perplexity (summary line, else train.jsonl)."""
    output = os.path.join(folder, label.split()[0] + "-model")
    words = [*words, "-o", output]
    done, wall = run_child(words, budget)
    if done.returncode:
        return [label, f"`{shown(words, folder)}`", size, failure(done), "", "", "", ""]
    found = run_log(output)
    if stopped := STOPPED.search(done.stderr):
        found.update(updates=stopped[2], speed=f"{int(stopped[3]):,} {stopped[4]}/s", stop=stopped[1])
    if perplexity := PERPLEXITY.search(done.stdout):
        found["perplexity"] = perplexity[1]
    return [label, f"`{shown(words, folder)}`", size, found.get("updates", "?"), found.get("speed", "?"),
            found.get("perplexity", "not validated"), found.get("stop", "?"), f"{wall:.0f}"]


def training_section(report: Report, budget: Budget, device: str, data: Data, sizes: Sizes) -> None:
    report.section("Training runs")
    rows, need = [], sizes.train_seconds + 20.0
    with tempfile.TemporaryDirectory(prefix="gpu-check-train-") as folder:
        train_table = os.path.join(folder, "train-slice.gz")
        lines = write_head(data.table, train_table, sizes.train_lines)
        text, sentences = data.train, data.train_sentences
        if sizes.train_sentences is not None:  # their first sentences, with their alignment
            text = tuple(os.path.join(folder, name) for name in TRAIN_FILES)
            sentences = min(write_head(whole, head, sizes.train_sentences) for whole, head in zip(data.train, text))
        report.line(f"Each trainer for {sizes.train_seconds} s of training (reading the data and the one validation "
                    f"at the end excluded); train-slice.gz: the first {lines:,} lines of {data.table}; lm and bilm "
                    f"on the first {sentences:,} sentences of {data.train[0]} and its companions\n")
        for label, words in training_runs(train_table, text, device, sizes):
            if not budget.allows(need, f"{label} and after"):
                break
            started = time.monotonic()
            size = (sized(lines, sizes.train_lines, "lines") if words[0] == "train"
                    else sized(sentences, sizes.train_sentences or data.train_sentences, "sentences"))
            rows.append(training_row(label, words, folder, budget, size))
            need = max(need, time.monotonic() - started)
    report.table(["trainer", "command", "size", "updates", "speed", "validation perplexity", "stop", "wall s"], rows)


# -- the run ---------------------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--quick", action="store_true", help="CI-sized: everything small, about a minute on a CPU")
    parser.add_argument("--out", help="also write the report (markdown) to this file")
    parser.add_argument("--budget", type=float, default=480, help="seconds the whole run may take [480]")
    parser.add_argument("--commit", help="the commit to report where the checkout is a copy without git")
    parser.add_argument("--data", help="the Tatoeba data folder (phrase-table.gz, train.tok.en.gz, train.tok.fr.gz, "
                                       "train.align.gdfa.gz) [bundle/data/..., else shared/data/... in or beside "
                                       "the checkout]")
    parser.add_argument("--table", help="another phrase table than the data folder's")
    args = parser.parse_args()
    try:
        device = resolve_device(args.device)
    except ValueError as error:
        parser.error(str(error))
    sizes = sizes_for(device, args.quick)
    data = find_data(args.data, args.table)
    if refused := refusal(device, data, sizes):
        raise SystemExit(refused)
    data = data or stand_ins(args.table)
    report = Report(args.out)
    budget = Budget(args.budget, report)
    device_section(report, device, args, sizes, data)
    peaks = matmul_section(report, device, sizes)
    with read_entries(data.table) as stream:
        entries = list(itertools.islice(stream, sizes.pairs))
    deadlines = iter(DEADLINES["cpu" if device == "cpu" else "gpu"])
    budget.until(next(deadlines))
    paper = model_section(report, budget, device, entries, peaks, sizes)
    encoding_section(report, entries, sizes)
    budget.until(next(deadlines))
    waits_section(report, budget, device, entries, sizes)
    budget.until(next(deadlines))
    agreement_section(report, budget, device, data.table, sizes)
    budget.until(next(deadlines))
    logs = Path(args.out).resolve().parent / "gpu-check-logs" if args.out else None
    score_section(report, budget, device, data.table, paper, sizes, logs)
    budget.until(next(deadlines))
    compile_section(report, budget, device, data, sizes)
    budget.until(1.0)
    training_section(report, budget, device, data, sizes)
    report.flush_notes()
    report.line(f"\ntotal {budget.elapsed():.0f} s of the {args.budget:.0f}-s budget")
    report.save()


if __name__ == "__main__":
    main()
