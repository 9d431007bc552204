"""The pure parts of `scripts/bench --peers`: its case list and its ratio table (no peer is installed here)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "scripts"))
import bench_peers as bp  # noqa: E402

sys.path.pop(0)


def test_case_list_is_the_issues_cases_each_with_a_driver_call():
    keys = [c.key for c in bp.cases(quick=True)]
    assert keys == ["roundtrip", "sleep50", "sleep200", "output_rate", "output_rss", "cold", "racing"]
    assert [c.key for c in bp.cases(quick=False)] == keys
    calls = bp.calls(quick=False)
    assert set(calls) == set(keys) - {"output_rss"}  # output_rss is measured with output_rate
    assert calls["sleep50"] == ("sleep", 50) and calls["sleep200"] == ("sleep", 200)
    assert calls["racing"] == ("racing", 16) and calls["output_rate"] == ("output", 100)
    assert bp.calls(quick=True)["roundtrip"][1] < calls["roundtrip"][1]


@pytest.mark.parametrize("key, ours, theirs, expected", [
    ("roundtrip", 4.3, 1.5, "2.87x"),       # plugkit slower: above 1
    ("sleep50", 0.36, 10.2, "0.04x"),       # plugkit faster: below 1
    ("output_rate", 1043, 10, "0.010x"),    # a rate is inverted into a cost
    ("output_rss", 10, 317, "0.03x"),
    ("cold", None, 500, "-"),
    ("cold", 500, None, "-"),
    ("output_rss", -1.0, 20, "-"),          # no growth: no meaningful ratio
])
def test_ratio_reads_as_plugkit_cost_over_the_peers(key, ours, theirs, expected):
    case = next(c for c in bp.cases(quick=True) if c.key == key)
    assert bp.ratio(case, ours, theirs) == expected


def test_table_names_missing_peers_and_keeps_plugkit_and_failed_cells():
    cases = bp.cases(quick=True)
    ours = bp.Column("plugkit", results={"roundtrip": bp.Result(4.3), "racing": bp.Result(1.2, "1 runner")})
    peer = bp.Column("swe-rex", results={"roundtrip": bp.Result(1.5), "racing": bp.Result(None, "failed: boom")})
    gone = bp.Column("pm2", missing="npm is not on PATH (install Node.js and npm)")
    lines = bp.table([ours, peer, gone], cases)
    header = lines[0].split()
    assert header == ["case", "plugkit", "swe-rex"]
    rt = next(line for line in lines if line.startswith("`true` round trip"))
    assert "4.3 ms" in rt and "1.5 ms [2.87x]" in rt
    race = next(line for line in lines if line.startswith("16 racing"))
    assert "1.20 s (1 runner)" in race and "failed: boom [-]" in race
    assert lines[-1] == "pm2: missing: npm is not on PATH (install Node.js and npm)"
    assert len(lines) == 1 + len(cases) + 2
