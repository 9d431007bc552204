"""plugkit benchmarks: each case measured beside its baseline in the same run.

Prints one table: case, ours, baseline, ratio, target, pass/fail. Not a test:
timings on shared machines are noisy, so targets are checked here, never in pytest.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
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


AIOHTTP_BASELINE = """
import socket, sys
from aiohttp import web
async def health(request):
    return web.json_response({"ok": True})
app = web.Application()
app.router.add_get("/health", health)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
"""


def aiohttp_cold_start(port: int) -> float:
    """Time from spawn until a bare aiohttp app answers: the floor for any aiohttp daemon."""
    began = time.perf_counter()
    proc = subprocess.Popen([PY, "-c", AIOHTTP_BASELINE, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if s.recv(100).startswith(b"HTTP/1.1 200"):
                        return time.perf_counter() - began
            except OSError:
                time.sleep(0.002)
    finally:
        proc.terminate()
        proc.wait()


def case_cold_start(n: int) -> list[Row]:
    ours, base = [], []
    for _ in range(n):
        box = Sandbox()
        try:
            began = time.perf_counter()
            result = box.cli("runner", "start")
            ours.append(time.perf_counter() - began)
            if result.returncode != 0:
                raise SystemExit(f"cold start failed: {result.stderr}")
        finally:
            box.close()
        base.append(aiohttp_cold_start(free_port()))
    p50, p99, b50 = pct(ours, 50), pct(ours, 99), pct(base, 50)
    return [
        Row("cold auto-start -> runner.info p50", ms(p50), f"bare aiohttp app {ms(b50)}",
            f"{p50 / b50:.2f}x", "<= 600 ms", p50 <= 0.6),
        Row("cold auto-start -> runner.info p99", ms(p99), f"bare aiohttp app p99 {ms(pct(base, 99))}",
            f"{p99 / pct(base, 99):.2f}x", "(reported)", True),
    ]


def case_concurrent_cold(clients: int = 16) -> list[Row]:
    box = Sandbox()
    try:
        began = time.perf_counter()
        procs = [subprocess.Popen([PLUGKIT, "runner", "start"], env=box.env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(clients)]
        outs = [p.communicate() for p in procs]
        wall = time.perf_counter() - began
        pids = {line.split("pid ")[1].split(",")[0] for out, _ in outs for line in out.splitlines() if "pid " in line}
        ok = all(p.returncode == 0 for p in procs) and len(pids) == 1
        return [Row(f"{clients} concurrent cold starts", f"{len(pids)} runner, all answered in {ms(wall)}",
                    "pm2: one daemon per racer", "-", "1 runner, <= 5 s", ok and wall <= 5)]
    finally:
        box.close()


def case_warm_status(n: int) -> list[Row]:
    box = Sandbox()
    try:
        box.cli("runner", "start")
        ours = [timed([PLUGKIT, "runner", "status"], box.env) for _ in range(n)]
        base = [timed([PY, "-S", "-c", "pass"]) for _ in range(n)]
    finally:
        box.close()
    o, b = pct(ours, 50), pct(base, 50)
    return [Row("warm `plugkit runner status` p50", ms(o), f"python -S -c pass {ms(b)}",
                f"{o / b:.2f}x", "(reported)", True)]


CASES = {
    "cold_start": lambda q: case_cold_start(5 if q else 15),
    "concurrent_cold": lambda q: case_concurrent_cold(16),
    "warm_status": lambda q: case_warm_status(20 if q else 200),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--json", action="store_true", help="print rows as JSON")
    parser.add_argument("cases", nargs="*", help=f"subset of: {', '.join(CASES)}")
    args = parser.parse_args()
    rows: list[Row] = []
    for name in args.cases or CASES:
        rows.extend(CASES[name](args.quick))
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
    else:
        widths = [max(len(str(getattr(r, f))) for r in rows + [Row("case", "ours", "baseline", "ratio", "target", True)])
                  for f in ("case", "ours", "baseline", "ratio", "target")]
        header = ("case", "ours", "baseline", "ratio", "target")
        print("  ".join(h.ljust(w) for h, w in zip(header, widths)) + "  result")
        for r in rows:
            cells = (r.case, r.ours, r.baseline, r.ratio, r.target)
            print("  ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + ("  pass" if r.ok else "  FAIL"))
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
