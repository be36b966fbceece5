"""benchmarks/gpu_check.py, the one command that measures a GPU machine, in its CI-sized form on the CPU:
it finishes, prints every section and every row with figures above zero, and says that the cuda-against-CPU
comparison is skipped on a CPU."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
SCRIPT = ROOT / "benchmarks/gpu_check.py"
SECTIONS = ("Device", "Matmul peak", "Model only: pairs/s", "Decode waits per chunk", "cuda vs CPU agreement",
            "End to end: mosesrnn score", "Compiled recurrent steps", "Training runs")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[str, str]:
    """The report file and stdout of ``gpu_check.py --quick --device cpu`` (about a minute on 2 idle cores; a
    budget of 15 minutes, not 8, so that a machine other jobs share runs every row too)."""
    out = tmp_path_factory.mktemp("gpu-check") / "report.md"
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--device", "cpu", "--budget", "900",
                           "--out", str(out)], capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return out.read_text(encoding="utf-8"), done.stdout


def section(report: str, title: str) -> str:
    """The text of the section ``## title`` up to the next one."""
    return report.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def table(text: str) -> list[dict[str, str]]:
    """The rows of the first markdown table in ``text``, by column name."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")))) for line in lines[2:]]


def number(cell: str) -> float:
    """``"1,234"``, ``"7.9% of fp32"``, ``"77 pairs/s"`` -> its leading number."""
    found = re.match(r"[\d,]*\.?\d+(?:e[-+]?\d+)?", cell)
    assert found, f"no number in {cell!r}"
    return float(found[0].replace(",", ""))


def test_the_report_has_every_section_in_order_and_stdout_is_the_report(run):
    report, stdout = run
    positions = [report.find(f"\n## {title}\n") for title in SECTIONS]
    assert -1 not in positions and positions == sorted(positions), positions
    assert stdout.strip() == report.strip()
    assert "_skipped (" not in report  # no row ran out of the time budget


def test_the_header_names_the_cpu_torch_and_the_commit(run):
    device = section(run[0], "Device")
    assert re.search(r"- CPU: .+, \d+ cores", device)
    assert "torch 2." in device and "git commit " in device


@pytest.mark.parametrize("title, columns, rows", [
    ("Matmul peak", ["GFLOP/s"], 2),
    ("Model only: pairs/s", ["pairs/s", "MFLOP/pair", "useful GFLOP/s", "roofline share"], 2 * 2 * 3),
    ("Decode waits per chunk", ["batches per chunk", "host reads per chunk"], 3),
    ("End to end: mosesrnn score", ["lines/s (its log)", "wall s (start-up included)", "lines/s (wall)"], 4),
    ("Compiled recurrent steps", ["pairs/s", "x eager"], 4),
    ("Training runs", ["updates", "speed", "validation perplexity"], 3),
])
def test_every_row_is_there_with_figures_above_zero(run, title, columns, rows):
    found = table(section(run[0], title))
    assert len(found) >= rows, found
    for row in found:
        for column in columns:
            assert number(row[column]) > 0, (column, row)


def test_the_model_rows_cover_both_presets_and_the_three_paths(run):
    found = table(section(run[0], "Model only: pairs/s"))
    assert {(row["preset"], row["path"]) for row in found} == {
        (preset, path) for preset in ("small", "paper") for path in ("exact fp32", "exact bf16", "skip fp32")}


def test_each_table_names_its_command(run):
    assert "Command: `score_speed.matmul_flops(" in section(run[0], "Matmul peak")
    assert "Command: `RNNFeature(" in section(run[0], "Model only: pairs/s")
    for title, command in (("End to end: mosesrnn score", "mosesrnn score slice.gz"),
                           ("Training runs", "mosesrnn ")):
        assert all(row["command"].startswith(f"`{command}") for row in table(section(run[0], title)))


def test_the_agreement_is_skipped_on_the_cpu(run):
    assert section(run[0], "cuda vs CPU agreement").strip().startswith("skipped: this run's device is the CPU")


def test_a_chunk_reads_the_device_back_once(run):
    for row in table(section(run[0], "Decode waits per chunk")):
        assert number(row["host reads per chunk"]) == 1.0, row


def test_every_row_names_its_size_and_ran_on_it(run):
    for title in SECTIONS[2:]:
        text = section(run[0], title)
        for row in (table(text) if "\n|" in text else []):
            if "size" in row:
                assert re.match(r"[\d,]+ (pairs|lines|sentences)", row["size"]) and "asked" not in row["size"], row
