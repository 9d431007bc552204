"""Issue 31.1 and 31.3: the exec path with tasks cloned into their cgroup against the shell shim
that joins after the fork (PLUGKIT_CLONE3=0), both in the same run; runner RSS after many sessions.

Calls are spaced out as an agent's are: joining a cgroup after the fork is slow only when no
migration happened in the last few milliseconds, which back-to-back calls would hide.
CASES plugs into scripts/bench.py; `scripts/bench spawn_cli spawn_rpc memory_sessions` runs them alone.
Set PLUGKIT_BENCH_BASELINE to another install's `plugkit` to measure memory_sessions against it too.
"""

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import PLUGKIT, PY, Row, Sandbox, ms, pct, timed, sized  # noqa: E402
from bench_runner import _client, _exec, _runner_rss  # noqa: E402

GAP_S = 0.05  # an agent's calls are at least this far apart
CLI_TARGET_X = 3.5  # exec p50 minus bash p50, in units of `python -S -c pass` p50
RSS_TARGET = 48 << 20


class _Box(Sandbox):
    def __init__(self, plugkit: str = PLUGKIT, **env: str) -> None:
        super().__init__()
        self.plugkit = plugkit
        self.env.update(env)

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([self.plugkit, *args], env=self.env, capture_output=True, text=True)

    def start(self) -> "_Box":
        started = self.cli("runner", "start")
        if started.returncode != 0:
            self.close()
            raise SystemExit(f"runner did not start: {started.stderr}")
        return self


def _pair() -> tuple[_Box, _Box]:
    after = _Box().start()
    try:
        before = _Box(PLUGKIT_CLONE3="0").start()
    except BaseException:
        after.close()
        raise
    for box in (after, before):
        for _ in range(5):
            box.cli("exec:bash", "true")
    return after, before


def case_cli(n: int) -> list[Row]:
    after, before = _pair()
    new, old, py, sh = [], [], [], []
    try:
        for _ in range(n):
            # Interleaved, so drift in machine load hits every series alike.
            new.append(timed([PLUGKIT, "exec:bash", "true"], after.env))
            old.append(timed([PLUGKIT, "exec:bash", "true"], before.env))
            py.append(timed([PY, "-S", "-c", "pass"]))
            sh.append(timed(["bash", "-c", "true"]))
            time.sleep(GAP_S)
    finally:
        after.close()
        before.close()
    n50, o50, p50, b50 = pct(new, 50), pct(old, 50), pct(py, 50), pct(sh, 50)
    rn, ro = (n50 - b50) / p50, (o50 - b50) / p50
    return [
        Row("spaced `plugkit exec:bash true` p50, clone3", ms(n50),
            f"python -S {ms(p50)}, bash {ms(b50)}", f"{rn:.2f}x (minus bash, over python -S)",
            f"<= {CLI_TARGET_X:g}x", rn <= CLI_TARGET_X),
        Row("spaced `plugkit exec:bash true` p50, shim (before)", ms(o50), "same run",
            f"{ro:.2f}x; clone3 saves {ms(o50 - n50)}", "(reported)", True),
    ]


def case_rpc(n: int) -> list[Row]:
    after, before = _pair()
    new, old, bare, sh, noop = [], [], [], [], []
    clients = {}
    try:
        clients = {"new": _client(after), "old": _client(before)}
        for _ in range(n):
            for name, box, out in (("new", after, new), ("old", before, old)):
                began = time.perf_counter()
                _exec(clients[name], "bench", "true", box.dir)
                out.append(time.perf_counter() - began)
                time.sleep(GAP_S)
            for argv, out in ((["true"], bare), (["bash", "-c", "true"], sh)):
                began = time.perf_counter()
                subprocess.run(argv)
                out.append(time.perf_counter() - began)
                time.sleep(GAP_S)
            began = time.perf_counter()  # what any call costs this far apart, no task at all
            clients["new"].call("runner.info", {})
            noop.append(time.perf_counter() - began)
            time.sleep(GAP_S)
    finally:
        for c in clients.values():
            c.close()
        after.close()
        before.close()
    n50, o50, b50, s50, i50 = pct(new, 50), pct(old, 50), pct(bare, 50), pct(sh, 50), pct(noop, 50)
    # The task is bash running `true`: plugkit's own cost is the round trip over spawning that
    # bash yourself (case_cli subtracts the same spawn). Over `true` is shown beside it: the gap
    # between the two is bash's own start, ~0.6 ms on a VM that traps CPUID.
    # Reported, not a target: issue 31's "+2 ms over a bare spawn" is the back-to-back row
    # (bench_runner.case_exec_overhead, where its +3.3 ms was measured). Spaced 50 ms apart, each
    # of the ~30 steps a task needs (the ledger, the session, the code file, the cgroup, the
    # pipes, the answer) runs with cold caches; on the 2-core Firecracker VM this was measured
    # on the row moves between +1.8 and +2.3 ms with the host's load (README, Benchmarks).
    return [
        Row("spaced task.exec `true` round trip p50, clone3", ms(n50),
            f"spawn bash -c true {ms(s50)}, true {ms(b50)}", f"+{ms(n50 - s50)} (+{ms(n50 - b50)} over true)",
            "(reported)", True),
        Row("spaced task.exec `true` round trip p50, shim (before)", ms(o50), f"spawn bash -c true {ms(s50)}",
            f"+{ms(o50 - s50)}", "(reported)", True),
        Row("spaced no-op runner.info round trip p50 (the same runner)", ms(i50), "same run",
            f"task.exec is bash spawn + no-op + {ms(n50 - s50 - i50)}", "(reported)", True),
    ]


def _rss_growth(box: _Box, sessions: int, per: int) -> int:
    client = _client(box)
    try:
        _exec(client, "warm", "true", box.dir)
    finally:
        client.close()
    rss0 = _runner_rss(box)
    clients = [_client(box) for _ in range(4)]
    try:
        def one_session(i: int) -> None:
            for _ in range(per):
                _exec(clients[i % len(clients)], f"s{i}", "true", box.dir)

        with ThreadPoolExecutor(len(clients)) as pool:
            list(pool.map(one_session, range(sessions)))
    finally:
        for c in clients:
            c.close()
    return _runner_rss(box) - rss0


def case_memory(quick: bool) -> list[Row]:
    sessions, per = sized(quick, (100, 100), (20, 50), (4, 5))
    baseline = os.environ.get("PLUGKIT_BENCH_BASELINE")
    boxes = [_Box().start()] + ([_Box(baseline).start()] if baseline else [])
    try:
        # One after the other: two runners filling at once would share the CPU unevenly.
        growth = [_rss_growth(box, sessions, per) for box in boxes]
    finally:
        for box in boxes:
            box.close()
    base = f"{baseline}: {growth[1] / 2**20:.1f} MiB" if baseline else "no cap: ~11 KB a task"
    return [Row(f"runner RSS growth after {sessions} sessions x {per} tasks", f"{growth[0] / 2**20:.1f} MiB",
                base, f"{growth[0] / (sessions * per) / 1024:.1f} KB a task", f"<= {RSS_TARGET >> 20} MiB",
                growth[0] <= RSS_TARGET)]


CASES = {
    "spawn_cli": lambda quick: case_cli(sized(quick, 150, 30)),
    "spawn_rpc": lambda quick: case_rpc(sized(quick, 150, 30)),
    "memory_sessions": case_memory,
}
