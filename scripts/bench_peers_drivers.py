"""The drivers behind `scripts/bench --peers`: plugkit and SWE-ReX here, the Jupyter kernel and pm2 beside.

Every driver has the same methods (roundtrip, sleep, output, cold, racing) returning bench_peers.Result,
so a case is one call per peer. SWE-ReX is driven over its own HTTP wire (`swerex-remote`'s POST /execute
with the X-API-Key header, as its server.py defines), from this process, so no peer library is imported here.
"""

import http.client
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import PLUGKIT, PY, ROOT, Sandbox, free_port, pct  # noqa: E402
from bench_peers import Result  # noqa: E402
from bench_runner import _client, _concurrent, _exec  # noqa: E402

SPEW = ROOT / "tests" / "fixtures" / "spew.py"
MIB = 1 << 20


def rss(pid: int, field: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def peak_growth(pid: int, before: int) -> float:
    """MiB from the RSS before a case to the high-water mark after it: a server that buffers a whole
    output and frees it on reply shows here, not in the RSS read after the reply."""
    return (rss(pid, "VmHWM") - before) / MIB


def stop_group(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """TERM then KILL the process group a driver started (each server runs in its own session)."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # the group may outlive its leader
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.poll()


class Plugkit:
    name = "plugkit"

    def __init__(self, _cache: Path) -> None:
        self.box = Sandbox()
        if self.box.cli("runner", "start").returncode != 0:
            raise RuntimeError("plugkit runner start failed")

    def roundtrip(self, n: int) -> Result:
        # A connection per case: servers close keep-alives left idle while the other peers run.
        client = _client(self.box)
        try:
            for _ in range(3):
                _exec(client, "bench", "true", self.box.dir)
            samples = []
            for _ in range(n):
                began = time.perf_counter()
                _exec(client, "bench", "true", self.box.dir)
                samples.append(time.perf_counter() - began)
        finally:
            client.close()
        return Result(pct(samples, 50) * 1000)

    def sleep(self, count: int) -> Result:
        return Result(_concurrent(self.box, count, max(1, count // 10), "sleep 0.2"))

    def output(self, mb: int) -> tuple[Result, Result]:
        pid = json.loads(Path(self.box.env["PLUGKIT_HOME"], "port").read_text())["pid"]
        before = rss(pid)
        client = _client(self.box)
        try:
            began = time.perf_counter()
            res = _exec(client, "bench", f"exec {PY} {SPEW} {mb}", self.box.dir, wait_ms=120_000)
            wall = time.perf_counter() - began
        finally:
            client.close()
        return Result(res["task"]["bytes_out"] / wall / 1e6), Result(peak_growth(pid, before), "runner")

    def cold(self, n: int) -> Result:
        samples = []
        for _ in range(n):
            box = Sandbox()
            try:
                began = time.perf_counter()
                if box.cli("runner", "start").returncode != 0:
                    raise RuntimeError("cold start failed")
                samples.append(time.perf_counter() - began)
            finally:
                box.close()
        return Result(pct(samples, 50) * 1000)

    def racing(self, k: int) -> Result:
        box = Sandbox()
        try:
            began = time.perf_counter()
            procs = [subprocess.Popen([PLUGKIT, "runner", "start"], env=box.env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for _ in range(k)]
            outs = [p.communicate(timeout=120) for p in procs]
            wall = time.perf_counter() - began
            pids = {ln.split("pid ")[1].split(",")[0] for out, _ in outs for ln in out.splitlines() if "pid " in ln}
            answered = sum(p.returncode == 0 for p in procs)
            return Result(wall, f"{len(pids)} runner, {answered}/{k} answered")
        finally:
            box.close()

    def close(self) -> None:
        self.box.close()


class SweRex:
    """`swerex-remote` on loopback; its /execute runs subprocess.run inside an async handler."""
    name = "swe-rex"

    def __init__(self, cache: Path) -> None:
        self.exe = str(cache / "venv" / "bin" / "swerex-remote")
        self.token = secrets.token_hex(8)
        self.port = free_port()
        self.server = self._spawn(self.port)
        if not self._wait_alive(self.port, 60):
            stop_group(self.server)
            raise RuntimeError("swerex-remote did not answer /is_alive in 60 s")

    def _conn(self) -> http.client.HTTPConnection:
        # A connection per case: uvicorn closes a keep-alive idle for 5 s while the other peers run.
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)

    def _spawn(self, port: int) -> subprocess.Popen:
        return subprocess.Popen([self.exe, "--host", "127.0.0.1", "--port", str(port), "--auth-token", self.token],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def _wait_alive(self, port: int, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/is_alive", headers={"X-API-Key": self.token})
                ok = conn.getresponse().status == 200
                conn.close()
                if ok:
                    return True
            except OSError:
                pass
            time.sleep(0.005)
        return False

    def _execute(self, conn: http.client.HTTPConnection, argv: list[str]) -> dict:
        conn.request("POST", "/execute", body=json.dumps({"command": argv}),
                     headers={"X-API-Key": self.token, "Content-Type": "application/json"})
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"/execute answered {resp.status}")
        return json.loads(body)

    def roundtrip(self, n: int) -> Result:
        conn = self._conn()
        for _ in range(3):
            self._execute(conn, ["true"])
        samples = []
        for _ in range(n):
            began = time.perf_counter()
            self._execute(conn, ["true"])
            samples.append(time.perf_counter() - began)
        conn.close()
        return Result(pct(samples, 50) * 1000)

    def sleep(self, count: int) -> Result:
        conns = [self._conn() for _ in range(count)]
        began = time.perf_counter()
        with ThreadPoolExecutor(count) as pool:
            list(pool.map(lambda c: self._execute(c, ["sleep", "0.2"]), conns))
        wall = time.perf_counter() - began
        for c in conns:
            c.close()
        return Result(wall)

    def output(self, mb: int) -> tuple[Result, Result]:
        before = rss(self.server.pid)
        began = time.perf_counter()
        conn = self._conn()
        got = self._execute(conn, [PY, str(SPEW), str(mb)])
        wall = time.perf_counter() - began
        conn.close()
        return Result(len(got["stdout"]) / wall / 1e6), Result(peak_growth(self.server.pid, before), "server")

    def cold(self, n: int) -> Result:
        samples = []
        for _ in range(n):
            port = free_port()
            began = time.perf_counter()
            proc = self._spawn(port)
            try:
                if not self._wait_alive(port, 60):
                    raise RuntimeError("no answer in 60 s")
                samples.append(time.perf_counter() - began)
            finally:
                stop_group(proc)
        return Result(pct(samples, 50) * 1000)

    def racing(self, k: int) -> Result:
        """k racers each start a server on one port and wait for an answer (what plugkit's auto-start does)."""
        port = free_port()
        began = time.perf_counter()
        procs = [self._spawn(port) for _ in range(k)]
        try:
            with ThreadPoolExecutor(k) as pool:
                answered = sum(pool.map(lambda _: self._wait_alive(port, 60), range(k)))
            wall = time.perf_counter() - began
            settle = time.monotonic() + 30  # losers of the bind race exit once imported; count who is left
            while sum(p.poll() is None for p in procs) > 1 and time.monotonic() < settle:
                time.sleep(0.1)
            alive = sum(p.poll() is None for p in procs)
            return Result(wall, f"{alive} server, {answered}/{k} answered")
        finally:
            for p in procs:
                stop_group(p)

    def close(self) -> None:
        stop_group(self.server)


def _jupyter(cache: Path):
    from bench_peers_jupyter import Jupyter
    return Jupyter(cache)


def _pm2(cache: Path):
    from bench_peers_pm2 import Pm2
    return Pm2(cache)


DRIVERS = (("plugkit", Plugkit), ("swe-rex", SweRex), ("jupyter", _jupyter), ("pm2", _pm2))
