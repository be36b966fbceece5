"""benchmarks/feeding_speed.py divides by the lines it scored: a table shorter than --lines is said, and its
end-to-end rows are the lines actually written over the time, not --lines over it."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_a_short_table_is_said_and_its_speeds_are_of_its_lines(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks/feeding_speed.py"), "--table",
                           str(ROOT / "examples/phrase-table.gz"), "--pairs", "300", "--lines", "1000000",
                           "--rounds", "1", "--workers-list", "0"], capture_output=True, text=True, timeout=600,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "on the first 6,229 lines (asked 1,000,000: the table holds no more)" in done.stdout
    speeds = [float(found.replace(",", "")) for found in re.findall(r"^\| (?:unk|rnn[^|]*) \| 0 \| ([\d,]+) \|$",
                                                                      done.stdout, re.M)]
    assert len(speeds) == 2
    assert max(speeds) < 6229  # 6,229 lines take over a second with the start-up; 1,000,000 / that time would not
