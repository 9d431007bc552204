"""The pm2 peer of `scripts/bench --peers`: pm2's daemon (God) in a throwaway PM2_HOME.

Warm cases run a small node program (below) that uses pm2's programmatic API as its lib/API.js and
lib/Event.js define it: connect, launchBus, start an app with `interpreter: 'none'` and `autorestart: false`,
and wait for its `process:event` 'exit'; output arrives as `log:out` bus events. Cold starts time the CLI's
`pm2 ping`, which spawns the daemon when none answers. `pm2 kill` and a kill of every God daemon found
for this PM2_HOME stop everything at the end.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import PY  # noqa: E402
from bench_peers import Result  # noqa: E402
from bench_peers_drivers import SPEW  # noqa: E402

DRIVE_JS = r"""
const pm2 = require('pm2');
const fs = require('fs');
const [method, count, py, spew] = process.argv.slice(2);
const n = parseInt(count, 10);
const p = fn => new Promise((res, rej) => fn((e, v) => e ? rej(e) : res(v)));
const rss = (pid, f = 'VmRSS') =>
  parseInt(fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(f + ':\\s+(\\d+)'))[1], 10) * 1024;
(async () => {
  await p(cb => pm2.connect(cb));
  const bus = await p(cb => pm2.launchBus(cb));
  const waiters = new Map();
  let bytes = 0;
  bus.on('process:event', pk => {
    const w = pk.event === 'exit' && waiters.get(pk.process.name);
    if (w) { waiters.delete(pk.process.name); w(); }
  });
  bus.on('log:out', pk => { bytes += Buffer.byteLength(pk.data); });
  const run = (name, script, args) => new Promise((res, rej) => {
    waiters.set(name, res);
    pm2.start({name, script, args, interpreter: 'none', autorestart: false}, e => e && rej(e));
  });
  const now = () => Number(process.hrtime.bigint()) / 1e9;
  let out;
  if (method === 'roundtrip') {
    const samples = [];
    for (let i = 0; i < n + 3; i++) {
      const t = now();
      await run(`rt${i}`, 'true', []);
      if (i >= 3) samples.push(now() - t);
      await p(cb => pm2.delete(`rt${i}`, cb));
    }
    samples.sort((a, b) => a - b);
    out = {value: samples[Math.floor(samples.length / 2)] * 1000};
  } else if (method === 'sleep') {
    const t = now();
    await Promise.all(Array.from({length: n}, (_, i) => run(`sl${i}`, 'sleep', ['0.2'])));
    out = {value: now() - t};
  } else if (method === 'output') {
    const god = parseInt(fs.readFileSync(`${process.env.PM2_HOME}/pm2.pid`, 'utf8'), 10);
    const before = rss(god);
    const t = now();
    await run('spew', py, [spew, String(n)]);
    const deadline = now() + 60;
    while (bytes < n * 1048576 && now() < deadline) await new Promise(r => setTimeout(r, 5));
    const wall = now() - t;
    out = {rate: {value: bytes / wall / 1e6}, rss: {value: (rss(god, 'VmHWM') - before) / 1048576, note: 'daemon'}};
  }
  await p(cb => pm2.delete('all', cb)).catch(() => {});
  bus.close && bus.close();
  pm2.disconnect();
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch(e => { console.error(String(e && e.message || e)); process.exit(1); });
"""


def gods(home: str) -> list[int]:
    """Every pm2 daemon serving `home`: the daemon titles itself 'PM2 vX: God Daemon (PM2_HOME)'."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if f"God Daemon ({home})".encode() in fh.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


class Pm2:
    name = "pm2"

    def __init__(self, cache: Path) -> None:
        self.prefix = cache / "npm"
        self.pm2 = str(self.prefix / "node_modules" / "pm2" / "bin" / "pm2")
        self.dir = tempfile.mkdtemp(prefix="plugkit-bench-pm2-")
        self.script = os.path.join(self.dir, "drive.js")
        Path(self.script).write_text(DRIVE_JS)
        self.homes: list[str] = []
        self.home = self._home()
        if self._cli(self.home, "ping").returncode != 0:
            raise RuntimeError("pm2 ping did not start a daemon")

    def _home(self) -> str:
        home = tempfile.mkdtemp(prefix="h", dir=self.dir)
        self.homes.append(home)
        return home

    def _env(self, home: str) -> dict:
        return dict(os.environ, PM2_HOME=home, NODE_PATH=str(self.prefix / "node_modules"),
                    PM2_DISABLE_VERSION_CHECK="true")

    def _cli(self, home: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(["node", self.pm2, *args], env=self._env(home), capture_output=True, text=True,
                              timeout=timeout)

    def _racer(self, home: str) -> bool:
        try:
            return self._cli(home, "ping", timeout=30).returncode == 0
        except subprocess.TimeoutExpired:  # a racer wedged behind another's daemon counts as unanswered
            return False

    def _drive(self, method: str, count: int) -> dict:
        proc = subprocess.run(["node", self.script, method, str(count), PY, str(SPEW)], env=self._env(self.home),
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError((proc.stderr.strip().splitlines() or ["no output"])[-1])
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def roundtrip(self, n: int) -> Result:
        return Result(self._drive("roundtrip", n)["value"])

    def sleep(self, count: int) -> Result:
        return Result(self._drive("sleep", count)["value"])

    def output(self, mb: int) -> tuple[Result, Result]:
        got = self._drive("output", mb)
        return Result(got["rate"]["value"]), Result(got["rss"]["value"], got["rss"]["note"])

    def cold(self, n: int) -> Result:
        samples = []
        for _ in range(n):
            home = self._home()
            began = time.perf_counter()
            ok = self._cli(home, "ping").returncode == 0
            samples.append(time.perf_counter() - began)
            self._stop(home)
            if not ok:
                raise RuntimeError("pm2 ping failed")
        return Result(sorted(samples)[len(samples) // 2] * 1000)

    def racing(self, k: int) -> Result:
        home = self._home()
        try:
            began = time.perf_counter()
            with ThreadPoolExecutor(k) as pool:
                answered = sum(pool.map(lambda _: self._racer(home), range(k)))
            wall = time.perf_counter() - began
            return Result(wall, f"{len(gods(home))} daemons, {answered}/{k} answered")
        finally:
            self._stop(home)

    def _stop(self, home: str) -> None:
        try:
            self._cli(home, "kill")
        except subprocess.TimeoutExpired:
            pass
        for pid in gods(home):  # racers may have left daemons `pm2 kill` does not know of
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def close(self) -> None:
        for home in self.homes:
            if gods(home):
                self._stop(home)
        shutil.rmtree(self.dir, ignore_errors=True)
