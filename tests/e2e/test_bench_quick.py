"""The benchmark suite runs end to end in --smoke mode (every case, one sample a row, tiny
inputs: the same code paths as --quick and a full run) and produces every row, well-formed.
Three cases at a time (--jobs): each in its own process with its own sandboxes, as run alone;
most of a case's time is waiting on the processes it starts (runners, hosts, a browser).

Timings are not asserted here (shared machines are noisy); scripts/bench measures and checks targets.
The time bound only ends a hung bench: beside a CPU hog on a shared 2-core machine the whole run took
over 550 s (445 s at load 14 without one), and a bench ended at its bound takes its cases' runners and
hosts with it (its own process group) instead of leaving them to the leak check.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
BOUND_S = 1500
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(BOUND_S + 60)]


def test_smoke_bench_produces_every_row():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    expected = set(bench.all_cases())
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "bench.py"), "--smoke", "--json", "--report-only",
                             "--jobs", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the bench and its cases' processes, not left to the leak check
        proc.communicate()
        raise
    assert proc.returncode == 0, err[-2000:]
    rows = json.loads(out)
    assert {r["group"] for r in rows} == expected
    for row in rows:
        assert row["case"] and row["ours"] and row["target"], row
