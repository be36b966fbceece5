"""benchmarks/feeding_speed.py divides by the lines it scored: a table shorter than --lines is said, its end-to-end
rows are the lines actually written over the time, not --lines over it, and its host-cost rows give the models'
process' and each worker's CPU time a line."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_a_short_table_is_said_and_its_figures_are_of_its_lines(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks/feeding_speed.py"), "--table",
                           str(ROOT / "examples/phrase-table.gz"), "--lines", "1000000", "--rounds", "1",
                           "--workers-list", "0,1"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "on the first 6,229 lines of" in done.stdout and "(asked 1,000,000: the table holds no more)" in done.stdout
    speeds = [float(found.replace(",", "")) for found in re.findall(r"^\| (?:unk|rnn[^|]*) \| 0 \| ([\d,]+) \|",
                                                                      done.stdout, re.M)]
    assert len(speeds) == 2
    assert max(speeds) < 6229  # 6,229 lines take over a second with the start-up; 1,000,000 / that time would not
    rows = re.findall(r"^\| ([01]) \| [\d,]+ \| \*\*([\d.]+)\*\* \| [\d.]+ \| ([\d., ]+|-) \| [\d,]+ \|$",
                      done.stdout, re.M)
    hosts = {workers: (float(host), each) for workers, host, each in rows}
    assert set(hosts) == {"0", "1"}, done.stdout
    assert hosts["0"][0] > 0 and hosts["0"][1] == "-"  # one process: no worker
    assert hosts["1"][0] > 0 and float(hosts["1"][1]) > 0  # one worker, its cost a line of its own chunks
