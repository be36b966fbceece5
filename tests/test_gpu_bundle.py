"""``benchmarks/gpu_bundle.py``: a bundle over its size limit is refused with the previous bundle as it was."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_gpu_check import small_shared

ROOT = Path(__file__).parent.parent


def bundle(shared: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "benchmarks/gpu_bundle.py", "--shared", str(shared), "--out", str(out),
                           "--no-wheels", *extra], cwd=ROOT, capture_output=True, text=True, timeout=300)


def files_of(folder: Path) -> dict[Path, bytes]:
    return {path.relative_to(folder): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_a_bundle_over_its_limit_leaves_the_previous_one_as_it_was(tmp_path):
    shared, out = small_shared(tmp_path / "shared"), tmp_path / "bundle"
    built = bundle(shared, out, "--table-lines", "100", "--limit", "1000")
    assert built.returncode == 0, built.stderr
    before = files_of(out)
    assert Path("data/tatoeba-moses-en-fr/phrase-table.gz") in before and Path("COMMIT") in before
    over = bundle(shared, out, "--table-lines", "3000", "--limit", "0.01")
    assert over.returncode == 2 and "over 0" in over.stderr and "left as it was" in over.stderr, over.stderr
    assert len(over.stderr.strip().splitlines()) == 1 and "Traceback" not in over.stderr
    assert files_of(out) == before
    again = bundle(shared, out, "--table-lines", "3000", "--limit", "1000")
    assert again.returncode == 0, again.stderr
    assert "the first 3,000 lines" in (out / "data/tatoeba-moses-en-fr/SLICE.txt").read_text()
    assert not (out / "data.new").exists()


def test_a_bundle_under_a_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("not a folder\n")
    done = bundle(small_shared(tmp_path / "shared"), tmp_path / "file" / "bundle", "--table-lines", "100")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("gpu-bundle: ") and len(done.stderr.strip().splitlines()) == 1, done.stderr
