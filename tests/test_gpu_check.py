"""The device check as a bare GPU host runs it, rehearsed on the CPU: ``bash benchmarks/on_device.sh`` in a copy of
the tree (what a device call sends: the files git tracks or does not ignore) with a small bundle (`gpu_bundle.py`
on tests/data's Tatoeba slices, no wheels), python-isal unimportable, no ../shared beside it and the project not
installed (PYTHONPATH alone), in its CI-sized form (--device cpu --quick, both phases, packed for the trip back).
Then benchmarks/gpu_check.py's report: every section and every row with figures above zero, each on the size it
names, the cuda-against-CPU comparison said to be skipped on a CPU; phase 2's models kept; the parts put back
together here."""
from __future__ import annotations

import dataclasses
import gzip
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
DATA = ROOT / "tests/data"
SECTIONS = ("Device", "Matmul peak", "Model only: pairs/s", "Encoding: pairs/s", "Decode waits per chunk",
            "cuda vs CPU agreement",
            "End to end: mosesrnn score", "Compiled recurrent steps", "Training runs")
MODELS = ("att-en-fr", "att-fr-en", "bilm-r2l", "bilm-s2t", "bilm-t2s", "cslm")
#: python-isal unimportable, in the check and in every process it starts (PYTHONPATH's sitecustomize)
HIDE_ISAL = """import sys


class NoIsal:
    def find_spec(self, name, path=None, target=None):
        if name == "isal" or name.startswith("isal."):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden: a rehearsal of a GPU host without it)")
        return None


sys.meta_path.insert(0, NoIsal())
"""


def copy_tree(tree: Path) -> None:
    """What a device call sends: the files git tracks, and those it does not ignore."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True)
    if listed.returncode:
        pytest.skip("not a git checkout: the tree a device call sends is what git lists")
    for name in filter(None, listed.stdout.split("\0")):
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)


def small_shared(folder: Path) -> Path:
    """A Tatoeba data folder as ../shared holds one, from tests/data's slices (3,001 table lines, 2,000 sentences)."""
    folder.mkdir()
    shutil.copy(DATA / "tatoeba.en-fr.3k.gz", folder / "phrase-table.gz")
    for source, name in (("tatoeba.train2k.tok.en", "train.tok.en.gz"), ("tatoeba.train2k.tok.fr", "train.tok.fr.gz"),
                         ("tatoeba.train2k.align", "train.align.gdfa.gz")):
        (folder / name).write_bytes(gzip.compress((DATA / source).read_bytes()))
    (folder / "dev.tok.en").write_bytes(gzip.decompress((DATA / "tatoeba.dev400.en.gz").read_bytes()))
    shutil.copy(DATA / "tatoeba.dev400.fr", folder / "dev.tok.fr")
    return folder


@pytest.fixture(scope="module")
def device(tmp_path_factory) -> dict:
    """The rehearsal's folders (tree, out, fetched) and the on_device.sh run (about 3 minutes on 2 shared cores;
    gpu_check's budget 15 minutes, so that a loaded machine runs every row too)."""
    base = tmp_path_factory.mktemp("device")
    tree, hide, out, fetched = base / "host/tree", base / "hide", base / "host/out", base / "fetched"
    tree.mkdir(parents=True)
    hide.mkdir()
    copy_tree(tree)
    built = subprocess.run([sys.executable, "benchmarks/gpu_bundle.py", "--shared", str(small_shared(base / "small")),
                            "--table-lines", "3000", "--no-wheels"], cwd=tree, capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, built.stderr
    (hide / "sitecustomize.py").write_text(HIDE_ISAL)
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(hide), "SITE": str(base / "site")}
    done = subprocess.run(["bash", "benchmarks/on_device.sh", str(out), "--device", "cpu", "--quick", "--budget", "900",
                           "--train", "--train-budget", "400", "--copy-to", str(fetched)], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=1400)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"base": base, "tree": tree, "out": out, "fetched": fetched, "env": env, "bundle": built.stdout,
            "stderr": done.stderr}


@pytest.fixture(scope="module")
def run(device) -> tuple[str, str]:
    """The report file and gpu_check.py's stdout."""
    return ((device["out"] / "gpu-report.md").read_text(encoding="utf-8"),
            (device["out"] / "gpu_check.stdout").read_text(encoding="utf-8"))


def test_the_rehearsal_ran_as_a_bare_host_would(device):
    tree, log = device["tree"], (device["out"] / "on_device.log").read_text()
    assert not (tree.parent / "shared").exists() and not (tree / "shared").exists()
    hidden = subprocess.run([sys.executable, "-c", "import isal"], env=device["env"], capture_output=True, text=True)
    assert "hidden: a rehearsal" in hidden.stderr
    assert "no wheels in bundle/wheels" in log and "gzip through zlib" in log
    assert f"mosesrnn from {tree}/mosesrnn" in log
    assert "3,001 lines" not in device["bundle"] and "the first 3,000 lines" in device["bundle"]


def test_the_report_reads_the_bundle(run):
    device = section(run[0], "Device")
    assert "- data: bundle/data/tatoeba-moses-en-fr; table bundle/data/tatoeba-moses-en-fr/phrase-table.gz (3,000 " \
           "lines); training text bundle/data/tatoeba-moses-en-fr/train.tok.en.gz (2,000 sentences)" in device
    assert "gzip through zlib" in device


def test_phase_2_keeps_each_model_and_its_log(device):
    rows = table((device["out"] / "training.md").read_text())
    assert [row["model"] for row in rows] == list(MODELS)
    for row in rows:
        assert row["status"] == "0" and number(row["updates"]) > 0 and number(row["best.pt MiB"]) > 0, row
    for name in MODELS:
        kept = device["out"] / "models" / name
        assert (kept / "best.pt").stat().st_size > 0 and "train.jsonl" in os.listdir(kept), name
        assert (kept / "train.log").exists() and (kept / "command").read_text().startswith("python3 -m mosesrnn ")


def test_what_comes_back_fits_a_call_and_goes_back_together(device):
    fetched = device["fetched"]
    files = list(fetched.iterdir())
    assert len(files) <= 8 and sum(f.stat().st_size for f in files) <= 64 << 20
    assert {"gpu-report.md", "training.md", "MANIFEST.txt", "part-00"} <= {f.name for f in files}
    total = len(list((device["out"].parent / "out.parts").glob("part-*")))
    rest = [str(n) for n in range(len([f for f in files if f.name.startswith("part-")]), total)]
    folders = [str(fetched)]
    for call in range(0, len(rest), 4):  # the next calls, 4 parts each, as the first's last line says
        folders.append(str(device["base"] / f"call-{call}"))
        done = subprocess.run(["bash", "benchmarks/device_fetch.sh", str(device["out"]), folders[-1],
                               *rest[call:call + 4]], cwd=device["tree"], capture_output=True, text=True, check=True)
        assert "every part is out" in done.stdout or "left: parts" in done.stdout
    unpacked = device["base"] / "unpacked"
    subprocess.run(["bash", str(ROOT / "benchmarks/device_unpack.sh"), str(unpacked), *folders], check=True,
                   capture_output=True)
    assert (unpacked / "gpu-report.md").read_bytes() == (device["out"] / "gpu-report.md").read_bytes()
    for name in MODELS:
        assert (unpacked / "models" / name / "best.pt").read_bytes() == \
            (device["out"] / "models" / name / "best.pt").read_bytes()


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
    ("Encoding: pairs/s", ["pairs/s"], 1),
    ("End to end: mosesrnn score", ["lines/s (its log)", "start-up s", "wall s (start-up included)",
                                    "lines/s (wall)"], 4),
    ("Compiled recurrent steps", ["pairs/s", "x eager"], 6),
    ("Training runs", ["updates", "speed", "validation perplexity"], 3),
])
def test_every_row_is_there_with_figures_above_zero(run, title, columns, rows):
    found = table(section(run[0], title))
    assert len(found) >= rows, found
    for row in found:
        for column in columns:
            assert number(row[column]) > 0, (column, row)


def test_the_library_gru_rows_score_as_eager_does(run):
    """Both presets get a native-gru row (the encoder as one torch.gru call, cuDNN's on a GPU), its values within
    1e-4 nats of eager's: the row a GPU session reads to decide whether the library GRU pays."""
    found = [row for row in table(section(run[0], "Compiled recurrent steps")) if row["steps"] == "native-gru"]
    assert [row["model"] for row in found] == ["small", "paper"]
    for row in found:
        assert float(row["max / mean abs. Δ vs eager (nats)"].split(" / ")[0]) < 1e-4, row


def test_the_model_rows_cover_both_presets_and_the_three_paths(run):
    found = table(section(run[0], "Model only: pairs/s"))
    assert "encoded beforehand" in section(run[0], "Model only: pairs/s")
    assert {(row["preset"], row["path"]) for row in found} == {
        (preset, path) for preset in ("small", "paper") for path in ("exact fp32", "exact bf16", "skip fp32")}


def test_each_table_names_its_command(run):
    assert "Command: `score_speed.matmul_flops(" in section(run[0], "Matmul peak")
    assert "Command: `RNNFeature(" in section(run[0], "Model only: pairs/s")
    for title, command in (("End to end: mosesrnn score", "mosesrnn score slice.gz"),
                           ("Training runs", "mosesrnn ")):
        assert all(row["command"].startswith(f"`{command}") for row in table(section(run[0], title)))


def test_the_end_to_end_rows_measure_the_workers_first_and_keep_every_stderr(device, run):
    """Issue 56: the --workers rows first (the goal's configuration), at most the cores but one; each row's command
    and stderr kept beside the report; the 3,000-line bundle repeated to the size the rows name."""
    text = section(run[0], "End to end: mosesrnn score")
    assert "the first 3,000 lines of" in text and "repeated to 4,000" in text
    rows = table(text)
    counts = [int(re.search(r"--workers (\d+)", row["run"])[1]) for row in rows if "--workers" in row["run"]]
    cores = len(os.sched_getaffinity(0))
    assert counts and rows[0]["run"].endswith(f"--workers {counts[0]}") and counts == sorted(counts, reverse=True)
    assert counts[0] == max(cores - 1, 1) and 0 in counts
    for row in rows:
        log = device["out"] / row["stderr"]
        assert log.read_text().startswith(f"$ {row['command'].strip('`')}\n(exit status 0)\n"), row


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


def test_a_gpu_run_on_short_data_is_refused_in_one_line():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import gpu_check
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    sizes = gpu_check.sizes_for("cuda", quick=False)
    short = gpu_check.stand_ins(None)
    assert "a GPU run would measure stand-ins" in gpu_check.refusal("cuda", None, sizes)
    line = gpu_check.refusal("cuda", short, sizes)
    assert "holds 6,229 lines and the rows ask for up to 500,000" in line and "\n" not in line
    assert gpu_check.refusal("cpu", short, sizes) is None
    whole = gpu_check.Data(short.table, 500_000, short.train, 140_098, "the bundle")
    assert gpu_check.refusal("cuda", whole, sizes) is None
    assert gpu_check.sized(6229, 50_000, "pairs") == "6,229 pairs (asked 50,000: the data hold no more)"


def test_a_native_gru_row_for_another_encoder_says_why_and_the_others_go_on():
    """``native-gru`` times C14's GRU encoder as one library call; for a model with another encoder its row says
    so, and eager's row is still measured."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import compile_speed
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from mosesrnn.encdec.model import build_model
    from mosesrnn.formats.phrase_table import first_entries
    entries = first_entries(str(ROOT / "examples/phrase-table.gz"), 200)
    trained = compile_speed.trained_model("small", entries)
    trained.model = build_model(dataclasses.replace(trained.model.config, encoder="grconv"))
    eager, native = compile_speed.compile_rows(trained, entries, "cpu", ("none", "native-gru"), 1, 4096, label="g")
    assert eager[:2] == ["g", "eager"] and number(eager[2]) > 0
    assert native[:3] == ["g", "native-gru", "failed: ValueError: its encoder is GrConvEncoder, not C14's GRU encoder"]
