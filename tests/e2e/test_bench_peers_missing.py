"""`scripts/bench --peers` with its peers absent names each one missing and still measures plugkit.

--no-install keeps the run off the registries (CI does not depend on the peers' packages); an empty
XDG_CACHE_HOME makes every peer missing.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def test_peers_quick_without_peers_names_them_and_measures_plugkit(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--peers", "--quick", "--no-install"],
                            capture_output=True, text=True, timeout=550, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    for peer in ("swe-rex", "jupyter", "pm2"):
        missing = [ln for ln in lines if ln.startswith(f"{peer}: missing: not installed in {tmp_path}")]
        assert missing, result.stdout
    header = next(ln for ln in lines if ln.startswith("case"))
    assert header.split() == ["case", "plugkit"]
    rows = {label: next(ln for ln in lines if ln.startswith(label)) for label in
            ("`true` round trip", "50 concurrent", "200 concurrent", "100 MB of output", "server peak RSS",
             "cold start", "16 racing")}
    for row in rows.values():
        assert "failed" not in row and row.split("  ")[-1].strip()[0].isdigit(), row
    assert "1 runner, 16/16 answered" in rows["16 racing"]
    assert not (tmp_path / "plugkit-bench-peers").exists()  # nothing was installed
