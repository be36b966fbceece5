"""Build bundle/: what a bare GPU host needs beside the repository's tree to run the device check (`make gpu-bundle`).

A lent GPU host has Python 3.12, torch, numpy, click, sacrebleu, sentencepiece, matplotlib and tqdm, no package
index, and receives a copy of the working tree (64 MiB at most) plus the ignored paths a call carries. So bundle/
(ignored by git, carried by name: ``carry: ["bundle"]``) holds:

- ``wheels/``: the wheels such a host lacks, for CPython 3.12 on manylinux x86-64 (python-isal, at the version
  installed here), which ``benchmarks/on_device.sh`` installs into a scratch site;
- ``data/tatoeba-moses-en-fr/``: a slice of the Tatoeba system's data at the sizes the report needs: the phrase
  table's first --table-lines lines (gzip), the training text and its alignment whole (``train.tok.en.gz``,
  ``train.tok.fr.gz``, ``train.align.gdfa.gz``: the joint model's and the CSLM's training data), and the dev and
  test text; ``SLICE.txt`` says what each file is;
- ``COMMIT``: the commit the bundle was built at (the host's copy of the tree has no git).

The shipped model (examples/model) is in the tree already. It prints what travels: the tree (tracked files and
untracked ones git does not ignore, shared/ if any) and the bundle, which must stay under --limit MiB (60).
Without the data beside the checkout it says in one line what it needs and exits with status 2.

    python benchmarks/gpu_bundle.py                       # from ../shared/data/tatoeba-moses-en-fr, into bundle/
    python benchmarks/gpu_bundle.py --table-lines 3000 --no-wheels --shared DIR --out DIR   # a small one (tests)
"""
from __future__ import annotations

import argparse
import gzip
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared/data/tatoeba-moses-en-fr"
WHOLE = ("train.tok.en.gz", "train.tok.fr.gz", "train.align.gdfa.gz", "dev.tok.en", "dev.tok.fr", "test.tok.en",
         "test.tok.fr")
#: the wheels a GPU host lacks: the package dependencies its image does not hold
WHEELS = ("isal",)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
MIB = 1 << 20


def fail(message: str) -> None:
    print(f"gpu-bundle: {message}", file=sys.stderr)
    raise SystemExit(2)


def lines_of(path: Path) -> int:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as stream:
        return sum(block.count(b"\n") for block in iter(lambda: stream.read(1 << 22), b""))


def download_wheels(folder: Path) -> list[str]:
    """pip download each of :data:`WHEELS` at the version installed here, for CPython 3.12 manylinux x86-64 (a
    wheel already there is kept: a rebuild needs no network)."""
    folder.mkdir(parents=True, exist_ok=True)
    got = []
    for name in WHEELS:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            fail(f"{name} is not installed in {sys.executable}'s environment: install the project first (make test)")
        found = sorted(folder.glob(f"{name.replace('-', '_')}-{version}-cp312-*.whl"))
        if not found:
            command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                       "--python-version", "3.12", "--implementation", "cp",
                       *(word for platform in PLATFORMS for word in ("--platform", platform)),
                       "-d", str(folder), f"{name}=={version}"]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                fail(f"pip download {name}=={version} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            found = sorted(folder.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
        got += [path.name for path in found]
    return got


def slice_data(shared: Path, folder: Path, table_lines: int) -> list[str]:
    """The table's first ``table_lines`` lines and the whole training, dev and test text, into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    notes = []
    written = 0
    with gzip.open(shared / "phrase-table.gz", "rb") as source, \
            gzip.open(folder / "phrase-table.gz", "wb", compresslevel=6) as out:
        for line in source:
            if written == table_lines:
                break
            out.write(line)
            written += 1
    notes.append(f"phrase-table.gz: the first {written:,} lines of {shared / 'phrase-table.gz'}")
    for name in WHOLE:
        if (shared / name).exists():
            shutil.copyfile(shared / name, folder / name)
            notes.append(f"{name}: {shared / name} whole, {lines_of(folder / name):,} lines")
        elif name.startswith("train"):
            fail(f"{shared} lacks {name}")
    (folder / "SLICE.txt").write_text("\n".join(notes) + "\n", encoding="utf-8")
    return notes


def git(*words: str) -> str:
    done = subprocess.run(["git", *words], capture_output=True, text=True, cwd=ROOT)
    return done.stdout if done.returncode == 0 else ""


def commit() -> str:
    head = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    changed = subprocess.run(["git", "diff", "--quiet", "HEAD", "--"], cwd=ROOT).returncode
    return head + (" + local changes" if changed else "")


def tree_bytes() -> int:
    """Bytes of what a device call sends without carry: tracked files, untracked ones git does not ignore, and
    shared/ inside the checkout."""
    names = set(git("ls-files", "-z").split("\0")) | set(git("ls-files", "-z", "--others", "--exclude-standard")
                                                          .split("\0"))
    total = sum((ROOT / name).stat().st_size for name in names if name and (ROOT / name).is_file())
    shared = ROOT / "shared"
    if shared.is_dir():
        total += sum(path.stat().st_size for path in shared.rglob("*") if path.is_file())
    return total


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def main() -> None:
    try:
        build()
    except OSError as error:  # a folder that cannot be written, a file where one is made: one line
        fail(f"{error.filename}: {error.strerror.lower()}" if error.filename and error.strerror else str(error))


def build() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", default=str(SHARED), help="the Tatoeba data folder [../shared/data/...]")
    parser.add_argument("--out", default=str(ROOT / "bundle"), help="the bundle folder [bundle/]")
    parser.add_argument("--table-lines", type=int, default=500_000,
                        help="lines of the phrase table (the report's largest row: 500,000) [500000]")
    parser.add_argument("--no-wheels", action="store_true", help="no wheels (a rehearsal without a network)")
    parser.add_argument("--limit", type=float, default=60, help="MiB the tree and the bundle may take [60]")
    args = parser.parse_args()
    shared, out = Path(args.shared), Path(args.out)
    needed = ("phrase-table.gz", "train.tok.en.gz", "train.tok.fr.gz", "train.align.gdfa.gz")
    if not all((shared / name).exists() for name in needed):
        fail(f"needs the Tatoeba data ({', '.join(needed)}, dev.tok.*, test.tok.*) in {shared}, the project's "
             f"shared data beside the checkout (or --shared DIR)")
    wheels = [] if args.no_wheels else download_wheels(out / "wheels")
    # the data is sliced beside the previous bundle's and replaces it only within the limit: a bundle over it is
    # refused with the previous one as it was
    data, staged = out / "data", out / "data.new"
    if staged.exists():
        shutil.rmtree(staged)
    notes = slice_data(shared, staged / "tatoeba-moses-en-fr", args.table_lines)
    tree = tree_bytes()
    bundle = folder_bytes(out) - (folder_bytes(data) if data.exists() else 0)
    for note in notes:
        print(f"  data/tatoeba-moses-en-fr/{note}")
    print(f"  wheels: {', '.join(wheels) or 'none (--no-wheels)'}")
    print(f"gpu-bundle: {out}: {bundle / MIB:.1f} MiB (wheels {folder_bytes(out / 'wheels') / MIB:.1f}, data "
          f"{folder_bytes(staged) / MIB:.1f}); the tree {tree / MIB:.1f} MiB; together {(tree + bundle) / MIB:.1f} "
          f"MiB of the {args.limit:.0f} allowed (the device takes 64); commit {commit()}")
    if tree + bundle > args.limit * MIB:
        shutil.rmtree(staged)
        fail(f"tree and bundle would take {(tree + bundle) / MIB:.1f} MiB, over {args.limit:.0f}: lower "
             f"--table-lines ({out}'s data left as it was)")
    if data.exists():
        shutil.rmtree(data)
    staged.rename(data)
    (out / "COMMIT").write_text(commit() + "\n", encoding="utf-8")
    if os.path.realpath(out) == os.path.realpath(ROOT / "bundle"):
        print('gpu-bundle: carry it to the device with carry: ["bundle"]; there: bash benchmarks/on_device.sh OUTDIR')


if __name__ == "__main__":
    main()
