"""The benchmark suite runs end to end in --quick mode and produces every row.

Timings are not asserted here (shared machines are noisy); scripts/bench checks targets.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def test_quick_bench_produces_every_row():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import bench
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    expected = set(bench.all_cases())
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--quick", "--json",
                             "--report-only"], capture_output=True, text=True, timeout=850, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(result.stdout)
    assert {r["group"] for r in rows} == expected
    for row in rows:
        assert row["case"] and row["ours"] and row["target"], row
