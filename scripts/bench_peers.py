"""`scripts/bench --peers`: the same cases against plugkit, SWE-ReX, a Jupyter kernel and pm2 in one run.

The peers are installed by this script into a cache of its own (a venv for the PyPI peers, an npm prefix
for pm2; pinned versions), are driven over loopback only, and every process started is stopped at the end.
A peer that cannot be installed or started is named as missing; plugkit is measured regardless.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import PY  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "plugkit-bench-peers"
PYPI_PINS = ("swe-rex==1.4.0", "jupyter-client==8.10.0", "ipykernel==7.4.0")
NPM_PINS = ("pm2@7.0.4",)


@dataclass(frozen=True)
class Case:
    """One row: `lower` says which way is better, so every ratio reads as plugkit's cost over the peer's."""
    key: str
    label: str
    unit: str
    lower: bool = True


def cases(quick: bool) -> tuple[Case, ...]:
    return (
        Case("roundtrip", f"`true` round trip p50 ({10 if quick else 50} calls)", "ms"),
        Case("sleep50", "50 concurrent `sleep 0.2`, wall", "s"),
        Case("sleep200", "200 concurrent `sleep 0.2`, wall", "s"),
        Case("output_rate", "100 MB of output, throughput", "MB/s", lower=False),
        Case("output_rss", "server peak RSS growth over 100 MB", "MiB"),
        Case("cold", f"cold start p50 ({3 if quick else 7} starts)", "ms"),
        Case("racing", "16 racing cold starts, all answered", "s"),
    )


@dataclass
class Result:
    """A peer's figure for one case, or why there is none; `note` carries what a number can't (servers left)."""
    value: float | None = None
    note: str = ""


@dataclass
class Column:
    peer: str
    missing: str = ""  # why the peer could not be measured at all
    results: dict[str, Result] = field(default_factory=dict)


def ratio(case: Case, ours: float | None, theirs: float | None) -> str:
    """plugkit's cost over the peer's: < 1 means plugkit is ahead (rates are inverted to a cost)."""
    if ours is None or theirs is None or ours <= 0 or theirs <= 0:
        return "-"
    r = ours / theirs if case.lower else theirs / ours
    return f"{r:.2f}x" if r >= 0.01 else f"{r:.3f}x"


def cell(case: Case, res: Result | None) -> str:
    if res is None:
        return "-"
    if res.value is None:
        return res.note or "-"
    digits = 2 if case.unit == "s" else 0 if case.unit == "MB/s" else 1
    text = f"{res.value:.{digits}f} {case.unit}"
    return f"{text} ({res.note})" if res.note else text


def table(columns: list[Column], case_list: tuple[Case, ...]) -> list[str]:
    """Rows of case | plugkit | each peer's figure with plugkit/peer in brackets; missing peers listed below."""
    ours = columns[0]
    header = ["case", ours.peer] + [c.peer for c in columns[1:] if not c.missing]
    rows = [header]
    for case in case_list:
        mine = ours.results.get(case.key)
        row = [case.label, cell(case, mine)]
        for col in columns[1:]:
            if col.missing:
                continue
            theirs = col.results.get(case.key)
            r = ratio(case, mine.value if mine else None, theirs.value if theirs else None)
            row.append(f"{cell(case, theirs)} [{r}]")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.append("[x] = plugkit's cost / the peer's (time, memory, 1/throughput): below 1 plugkit is ahead")
    lines += [f"{c.peer}: missing: {c.missing}" for c in columns[1:] if c.missing]
    return lines


def install(no_install: bool) -> dict[str, str]:
    """Bring the pinned peers into CACHE; returns {peer: why it is missing} for those that are not there."""
    venv, prefix = CACHE / "venv", CACHE / "npm"
    missing: dict[str, str] = {}
    stamp = venv / "plugkit-pins"  # a venv from older pins is installed anew
    have_py = (venv / "bin" / "swerex-remote").exists() and (venv / "bin" / "jupyter-kernel").exists() and \
        stamp.exists() and stamp.read_text() == " ".join(PYPI_PINS)
    if not have_py and not no_install:
        CACHE.mkdir(parents=True, exist_ok=True)
        log = CACHE / "pip.log"
        with open(log, "w") as out:
            ok = subprocess.run([PY, "-m", "venv", str(venv)], stdout=out, stderr=out).returncode == 0 and \
                subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *PYPI_PINS],
                               stdout=out, stderr=out, timeout=900).returncode == 0
        have_py = ok
        if ok:
            stamp.write_text(" ".join(PYPI_PINS))
        if not ok:
            missing["swe-rex"] = missing["jupyter"] = f"pip install {' '.join(PYPI_PINS)} failed (see {log})"
    if not have_py and not missing:
        missing["swe-rex"] = missing["jupyter"] = f"not installed in {venv} (run `scripts/bench --peers`)"
    pm2 = prefix / "node_modules" / "pm2" / "bin" / "pm2"
    manifest = prefix / "node_modules" / "pm2" / "package.json"
    pinned = NPM_PINS[0].split("@")[1]

    def have_pm2() -> bool:  # another version in the prefix counts as absent: npm install brings the pin
        return pm2.exists() and json.loads(manifest.read_text()).get("version") == pinned

    if not have_pm2() and not no_install:
        npm = shutil.which("npm")
        if npm is None:
            missing["pm2"] = "npm is not on PATH (install Node.js and npm)"
        else:
            log = CACHE / "npm.log"
            CACHE.mkdir(parents=True, exist_ok=True)
            with open(log, "w") as out:
                subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", *NPM_PINS],
                               stdout=out, stderr=out, timeout=600)
            if not have_pm2():
                missing["pm2"] = f"npm install {' '.join(NPM_PINS)} failed (see {log})"
    if not have_pm2() and "pm2" not in missing:
        missing["pm2"] = f"not installed in {prefix} (run `scripts/bench --peers`)"
    elif "pm2" not in missing and shutil.which("node") is None:
        missing["pm2"] = "node is not on PATH"
    return missing


def calls(quick: bool) -> dict[str, tuple[str, int]]:
    """Each case's driver method and its count; output_rss comes with output_rate."""
    return {"roundtrip": ("roundtrip", 10 if quick else 50), "sleep50": ("sleep", 50), "sleep200": ("sleep", 200),
            "output_rate": ("output", 100), "cold": ("cold", 3 if quick else 7), "racing": ("racing", 16)}


def measure(driver, case: Case, quick: bool, out: dict[str, Result]) -> None:
    """Run one case on one driver; a failure is reported in its cell and the other cases still run."""
    if case.key not in calls(quick):
        return
    method, count = calls(quick)[case.key]
    began = time.monotonic()
    try:
        got = getattr(driver, method)(count)
        if case.key == "output_rate":
            out["output_rate"], out["output_rss"] = got
        else:
            out[case.key] = got
    except Exception as exc:  # noqa: BLE001 - one peer's failure is a cell, not the end of the run
        first = str(exc).splitlines()[0][:60] if str(exc) else type(exc).__name__
        out[case.key] = Result(None, f"failed: {first}")
    print(f"  {driver.name} {case.key}: {cell(case, out.get(case.key))} ({time.monotonic() - began:.0f} s)",
          file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench --peers", description=__doc__.splitlines()[0])
    parser.add_argument("--peers", action="store_true")
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--no-install", action="store_true", help="measure only the peers already in the cache")
    args = parser.parse_args(argv)
    from bench_peers_drivers import DRIVERS

    case_list = cases(args.quick)
    missing = install(args.no_install)
    columns: list[Column] = []
    drivers = []
    try:
        for name, make in DRIVERS:
            if name in missing:
                columns.append(Column(name, missing[name]))
                continue
            try:
                drivers.append(make(CACHE))
                columns.append(Column(name))
            except Exception as exc:  # noqa: BLE001 - a peer that won't start is missing, plugkit is not
                if name == "plugkit":
                    raise
                columns.append(Column(name, f"did not start: {exc}"))
        live = {c.peer: c for c in columns if not c.missing}
        # Case by case, every peer in turn: load drift on a shared machine hits all columns alike.
        for case in case_list:
            for driver in drivers:
                measure(driver, case, args.quick, live[driver.name].results)
    finally:
        for driver in drivers:
            driver.close()
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    print("\n".join(table(columns, case_list)))
    return 0
