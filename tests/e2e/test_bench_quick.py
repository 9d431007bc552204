"""The benchmark suite runs end to end in --smoke mode (every case, one sample a row, tiny
inputs: the same code paths as --quick and a full run) and produces every row, well-formed.
Three cases at a time (--jobs): each in its own process with its own sandboxes, as run alone;
most of a case's time is waiting on the processes it starts (runners, hosts, a browser).

Timings are not asserted here (shared machines are noisy); scripts/bench measures and checks targets.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def test_smoke_bench_produces_every_row():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    expected = set(bench.all_cases())
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--smoke", "--json",
                             "--report-only", "--jobs", "3"], capture_output=True, text=True, timeout=550, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(result.stdout)
    assert {r["group"] for r in rows} == expected
    for row in rows:
        assert row["case"] and row["ours"] and row["target"], row
