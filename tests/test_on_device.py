"""``benchmarks/on_device.sh``'s exit status: a phase that failed is not a success (its training phase alone here;
tests/test_gpu_check.py rehearses the whole check)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).parent.parent


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU here: the trainers of --device cuda would run")
def test_train_only_without_a_gpu_fails_when_every_trainer_fails(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("benchmarks", "mosesrnn", "moses_integration"):
        (tree / name).symlink_to(ROOT / name)
    data = tree / "bundle" / "data" / "tatoeba-moses-en-fr"
    data.mkdir(parents=True)
    (data / "phrase-table.gz").write_bytes(b"")
    (tree / "bundle" / "COMMIT").write_text("test\n")
    env = {**os.environ, "PYTHON": sys.executable, "SITE": str(tmp_path / "site")}
    done = subprocess.run(["bash", "benchmarks/on_device.sh", str(tmp_path / "out"), "--train-only", "--quick",
                           "--train-budget", "120"], cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "phase 2: 6 of 6 trainers failed" in done.stderr
