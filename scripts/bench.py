"""plugkit benchmarks: each case measured beside its baseline in the same run.

Prints one table: case, ours, baseline, ratio, target, pass/fail. Not a test:
timings on shared machines are noisy, so targets are checked here, never in pytest.
"""

import argparse
import enum
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
PLUGKIT = str(Path(PY).parent / "plugkit")


@dataclass
class Row:
    case: str
    ours: str
    baseline: str
    ratio: str
    target: str
    ok: bool


class Size(enum.IntEnum):
    """How much each case measures: FULL (the default), QUICK (--quick: fewer samples) or SMOKE
    (--smoke: one sample a row, tiny inputs; the test suite's check that every row is produced
    and well-formed, its numbers mean nothing). A case gets it as its `quick` argument: false
    only for FULL, so `a if quick else b` still reads QUICK and SMOKE alike."""

    FULL = 0
    QUICK = 1
    SMOKE = 2

    def pick(self, full, quick, smoke=1):
        return (full, quick, smoke)[self]


def sized(size, full, quick, smoke=1):
    """`full`, `quick` or `smoke` by the size a case was given (a Size, or a bool from older callers)."""
    return Size(int(size)).pick(full, quick, smoke)


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"


def timed(argv: list[str], env: dict | None = None) -> float:
    began = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - began


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sandbox:
    """A throwaway PLUGKIT_HOME + port; stop() kills whatever runner serves it."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="plugkit-bench-")
        self.env = dict(os.environ, PLUGKIT_HOME=os.path.join(self.dir, "home"), PLUGKIT_PORT=str(free_port()))

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([PLUGKIT, *args], env=self.env, capture_output=True, text=True)

    def stop(self) -> None:
        try:
            info = json.loads(Path(self.env["PLUGKIT_HOME"], "port").read_text())
            os.kill(info["pid"], signal.SIGTERM)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and os.path.exists(f"/proc/{info['pid']}"):
                time.sleep(0.01)
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


CASES: dict = {}  # every case lives in a bench_*.py module beside this file


# Each issue's benchmarks live beside this file and plug their CASES in here.
EXTRA_MODULES = ("bench_runner", "bench_cli", "bench_serial", "bench_hooks", "bench_browser", "bench_hosts", "bench_work",
                 "bench_spawn", "bench_search", "bench_search_perf", "bench_gates", "bench_work_ray", "bench_ui",
                 "bench_work_ready", "bench_restart", "bench_budget", "bench_work_queue")


def all_cases() -> dict:
    import importlib

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    cases = dict(CASES)
    for name in EXTRA_MODULES:
        cases.update(importlib.import_module(name).CASES)
    return cases


# The cases that take longest, longest first (a smoke run's seconds on a loaded 2-core machine:
# the hosts' own starts, a real search model, four work items): --jobs starts them first, so the
# run does not end on one of them started last while the other processes sit idle.
SLOWEST = ("hosts_qwen", "hosts_gemini", "search_quality", "work_4_items", "check_comparison", "restart_downtime",
           "hosts_claude", "browser_cold", "browser_warm", "boot_reaping", "spawn_rpc", "work_worktree_ready")


def _in_processes(names: list[str], size: Size, jobs: int):
    """Each case's rows, in `names`' order, the cases run `jobs` at a time, each in its own
    `bench.py --json` process (its own sandboxes, runners and ports, as run alone)."""
    from concurrent.futures import ThreadPoolExecutor

    flag = {Size.SMOKE: ["--smoke"], Size.QUICK: ["--quick"], Size.FULL: []}[size]

    def one(name: str) -> list[Row]:
        began = time.monotonic()
        done = subprocess.run([PY, __file__, *flag, "--json", "--report-only", name], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"case {name} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        # where a run's time goes, case by case (stderr: --json's stdout stays one document)
        print(f"bench: {name} took {time.monotonic() - began:.1f} s", file=sys.stderr, flush=True)
        return [Row(**{k: v for k, v in row.items() if k != "group"}) for row in json.loads(done.stdout)]

    order = sorted(names, key=lambda n: SLOWEST.index(n) if n in SLOWEST else len(SLOWEST))
    with ThreadPoolExecutor(jobs) as pool:
        futures = {name: pool.submit(one, name) for name in order}
        for name in names:
            yield name, futures[name].result()


def main() -> int:
    cases = all_cases()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--smoke", action="store_true", help="one sample a row, tiny inputs: every row produced and "
                        "well-formed, its numbers meaningless (the test suite's run)")
    parser.add_argument("--json", action="store_true", help="print rows as JSON")
    parser.add_argument("--report-only", action="store_true",
                        help="exit 0 even when a target is missed (the test suite's smoke run)")
    parser.add_argument("--peers", action="store_true", help="the same cases against SWE-ReX, a Jupyter kernel and "
                        "pm2, installed into a cache of its own (scripts/bench_peers.py; --no-install: cache only)")
    if "--peers" in sys.argv[1:]:
        return __import__("bench_peers").main(sys.argv[1:])
    parser.add_argument("--jobs", type=int, default=1, help="run the cases in this many processes at once, slowest "
                        "first (the smoke run's rows are independent; timings taken side by side mean less)")
    parser.add_argument("cases", nargs="*", help=f"subset of: {', '.join(cases)}")
    args = parser.parse_args()
    unknown = [c for c in args.cases if c not in cases]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(cases)}")
    rows: list[Row] = []
    groups: list[str] = []
    size = Size.SMOKE if args.smoke else Size.QUICK if args.quick else Size.FULL
    names = args.cases or list(cases)
    for name, produced in (_in_processes(names, size, args.jobs) if args.jobs > 1 else
                           ((name, cases[name](size)) for name in names)):
        rows.extend(produced)
        groups.extend([name] * len(produced))
    if args.json:
        print(json.dumps([dict(asdict(r), group=g) for r, g in zip(rows, groups)], indent=1))
    else:
        widths = [max(len(str(getattr(r, f))) for r in rows + [Row("case", "ours", "baseline", "ratio", "target", True)])
                  for f in ("case", "ours", "baseline", "ratio", "target")]
        header = ("case", "ours", "baseline", "ratio", "target")
        print("  ".join(h.ljust(w) for h, w in zip(header, widths)) + "  result")
        for r in rows:
            cells = (r.case, r.ours, r.baseline, r.ratio, r.target)
            print("  ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + ("  pass" if r.ok else "  FAIL"))
    return 0 if args.report_only or all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
