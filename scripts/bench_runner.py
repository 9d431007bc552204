"""The runner's own cases: cold start, warm status, task.exec overhead, runner.info latency and
throughput, streaming, concurrent tasks, boot with processes to reap.

CASES plugs into scripts/bench.py's table; `scripts/bench cold_start exec_overhead` runs some alone.
"""

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import PLUGKIT, PY, ROOT, Row, Sandbox, free_port, ms, pct, timed, sized  # noqa: E402


AIOHTTP_BASELINE = """
import socket, sys
from aiohttp import web
async def health(request):
    return web.json_response({"ok": True})
async def rpc(request):  # a trivial JSON-RPC handler: what the runner's own handling is measured against
    call = await request.json()
    return web.json_response({"jsonrpc": "2.0", "result": {"ok": True}, "id": call.get("id")})
app = web.Application()
app.router.add_get("/health", health)
app.router.add_post("/rpc", rpc)
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


def _client(box: Sandbox):
    sys.path.insert(0, str(ROOT))
    from client.wire.rpc import Client, Connection

    port = int(box.env["PLUGKIT_PORT"])
    token = Path(box.env["PLUGKIT_HOME"], "token").read_text().strip()
    return Client(Connection(port, timeout=120), token=token)


def _runner_rss(box: Sandbox) -> int:
    pid = json.loads(Path(box.env["PLUGKIT_HOME"], "port").read_text())["pid"]
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _exec(client, session: str, code: str, cwd: str, wait_ms: int = 60_000, lang: str = "bash") -> dict:
    return client.call("task.exec", {"session_id": session, "cwd": cwd, "lang": lang, "code": code,
                                     "wait_ms": wait_ms, "max_bytes": 0}, timeout=120)


def case_exec_overhead(n: int) -> list[Row]:
    box = Sandbox()
    try:
        box.cli("runner", "start")
        client = _client(box)
        for _ in range(5):
            _exec(client, "bench", "true", box.dir)
        ours = []
        for _ in range(n):
            began = time.perf_counter()
            _exec(client, "bench", "true", box.dir)
            ours.append(time.perf_counter() - began)
        bare = []
        for _ in range(n):
            began = time.perf_counter()
            subprocess.run(["true"])
            bare.append(time.perf_counter() - began)
        bash = []
        for _ in range(n):
            began = time.perf_counter()
            subprocess.run(["bash", "-c", "true"])
            bash.append(time.perf_counter() - began)
        client.close()
    finally:
        box.close()
    o50, b50, h50 = pct(ours, 50), pct(bare, 50), pct(bash, 50)
    return [
        Row("task.exec `true` (bash) round trip p50", ms(o50), f"spawn true {ms(b50)}",
            f"+{ms(o50 - b50)}", "<= +2 ms over spawn", o50 - b50 <= 0.002),
        Row("task.exec `true` (bash) round trip p99", ms(pct(ours, 99)), f"spawn bash -c true {ms(h50)} p50",
            f"+{ms(o50 - h50)} over bash p50", "(reported)", True),
    ]


def _info_latency(client, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        began = time.perf_counter()
        client.call("runner.info")
        samples.append(time.perf_counter() - began)
    return samples


def case_info_latency(n: int) -> list[Row]:
    box = Sandbox()
    try:
        box.cli("runner", "start")
        client = _client(box)
        idle = _info_latency(client, n)
        for i in range(50):
            _exec(client, f"load{i % 5}", "import time\nwhile True:\n    print('tick', flush=True)\n"
                  "    time.sleep(0.1)", box.dir, wait_ms=0, lang="python")
        busy = _info_latency(client, n)
        for i in range(5):
            client.call("session.end", {"session_id": f"load{i}", "cwd": box.dir})
        client.close()
    finally:
        box.close()
    i99, b99 = pct(idle, 99), pct(busy, 99)
    return [
        Row("runner.info p99 idle", ms(i99), f"p50 {ms(pct(idle, 50))}", "-", "<= 2 ms", i99 <= 0.002),
        Row("runner.info p99 with 50 tasks running", ms(b99), f"idle p99 {ms(i99)}", f"{b99 / i99:.2f}x",
            "<= 5 ms", b99 <= 0.005),
    ]


def case_streaming(quick: bool) -> list[Row]:
    megabytes = sized(quick, 100, 100, 5)
    spew = ROOT / "tests" / "fixtures" / "spew.py"
    box = Sandbox()
    try:
        box.cli("runner", "start")
        client = _client(box)
        _exec(client, "bench", "true", box.dir)
        rss_before = _runner_rss(box)
        began = time.perf_counter()
        res = _exec(client, "bench", f"exec {PY} {spew} {megabytes}", box.dir, wait_ms=120_000)
        wall = time.perf_counter() - began
        growth = _runner_rss(box) - rss_before
        client.close()
    finally:
        box.close()
    direct = time.perf_counter()
    subprocess.run([PY, str(spew), str(megabytes)], stdout=subprocess.DEVNULL)
    direct = time.perf_counter() - direct
    ours_rate = res["task"]["bytes_out"] / wall / 1e6
    return [
        Row(f"stream {megabytes} MB stdout through a task", f"{ours_rate:.0f} MB/s",
            f"to /dev/null {megabytes * 1.048576 / direct:.0f} MB/s", f"{wall / direct:.2f}x time",
            ">= 300 MB/s", ours_rate >= 300),
        Row("runner RSS growth while streaming", f"{growth / 2**20:.1f} MiB", "SWE-ReX: 570 MiB on 200 MB",
            "-", "<= 32 MiB", growth <= 32 << 20),
    ]


def _concurrent(box: Sandbox, count: int, sessions: int, code: str) -> float:
    from concurrent.futures import ThreadPoolExecutor

    clients = [_client(box) for _ in range(count)]
    try:
        began = time.perf_counter()
        with ThreadPoolExecutor(count) as pool:
            results = list(pool.map(lambda i: _exec(clients[i], f"s{i % sessions}", code, box.dir),
                                    range(count)))
        wall = time.perf_counter() - began
    finally:
        for c in clients:
            c.close()
    bad = [r for r in results if r["task"]["state"] != "completed"]
    if bad:
        raise SystemExit(f"{len(bad)} tasks did not complete: {bad[0]['task']}")
    return wall


def case_concurrent_tasks(quick: bool) -> list[Row]:
    box = Sandbox()
    try:
        box.cli("runner", "start")
        rss0 = _runner_rss(box)
        w50 = _concurrent(box, 50, 5, "sleep 0.2")
        w200 = _concurrent(box, 200, 20, "sleep 1")
        rss = _runner_rss(box) - rss0
    finally:
        box.close()
    return [
        Row("50 concurrent `sleep 0.2` tasks", ms(w50), "ideal 200 ms; SWE-ReX 10.2 s", f"{w50 / 0.2:.2f}x ideal",
            "<= 0.5 s wall", w50 <= 0.5),
        Row("200 concurrent `sleep 1` tasks, 20 sessions", ms(w200), "ideal 1000 ms", f"{w200:.2f}x ideal",
            "<= 2 s wall", w200 <= 2.0),
        Row("runner RSS growth after 250 tasks", f"{rss / 2**20:.1f} MiB", "-", "-", "(reported)", True),
    ]


def _hammer_rate(make_client, clients: int, seconds: float) -> float:
    """runner.info calls a second from `clients` threads, each on its own keep-alive connection."""
    from concurrent.futures import ThreadPoolExecutor

    conns = [make_client() for _ in range(clients)]

    def hammer(c) -> int:
        n, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            c.call("runner.info")
            n += 1
        return n

    began = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        total = sum(pool.map(hammer, conns))
    rate = total / (time.perf_counter() - began)
    for c in conns:
        c.close()
    return rate


def case_info_throughput(quick: bool) -> list[Row]:
    """The runner against a trivial aiohttp JSON-RPC handler (AIOHTTP_BASELINE) driven by the same
    client, side by side: the ratio is what the runner's own handling costs behind HTTP."""
    sys.path.insert(0, str(ROOT))
    from client.wire.rpc import Client, Connection

    seconds = sized(quick, 2.0, 0.5, 0.05)
    box = Sandbox()
    base_port = free_port()
    base = subprocess.Popen([PY, "-c", AIOHTTP_BASELINE, str(base_port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    rows = []
    try:
        box.cli("runner", "start")
        while True:  # the baseline is up once it answers
            try:
                Client(Connection(base_port, timeout=1), token="-").call("runner.info")
                break
            except Exception:
                time.sleep(0.01)
        for clients in (1, 8, 64):
            rate = _hammer_rate(lambda: _client(box), clients, seconds)
            floor = _hammer_rate(lambda: Client(Connection(base_port, timeout=120), token="-"), clients, seconds)
            ratio = rate / floor
            rows.append(Row(f"runner.info throughput, {clients} client(s)", f"{rate:.0f} req/s",
                            f"trivial aiohttp handler {floor:.0f} req/s", f"{ratio:.2f}x",
                            ">= 0.8x" if clients == 8 else "(reported)", ratio >= 0.8 or clients != 8))
    finally:
        base.terminate()
        base.wait()
        box.close()
    return rows


def _pid_count() -> int:
    return sum(1 for name in os.listdir("/proc") if name.isdigit())


def _boot_ms(box: Sandbox) -> float:
    began = time.perf_counter()
    result = box.cli("runner", "start")
    if result.returncode != 0:
        raise SystemExit(f"runner did not start: {result.stderr}")
    elapsed = time.perf_counter() - began
    box.stop()
    return elapsed


def _spawn_crowd(count: int) -> subprocess.Popen:
    before = _pid_count()
    crowd = subprocess.Popen(["bash", "-c", f"for i in $(seq {count}); do sleep 300 & done; wait"],
                             start_new_session=True)
    deadline = time.monotonic() + 60
    while _pid_count() < before + count and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # let the spawning shell go quiet before timing
    return crowd


def _kill_crowd(crowd: subprocess.Popen) -> None:
    os.killpg(crowd.pid, signal.SIGKILL)
    crowd.wait()
    deadline = time.monotonic() + 10  # the next plain boot must not scan the dying crowd
    while time.monotonic() < deadline:
        try:
            os.killpg(crowd.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)


def case_boot_with_reaping(quick: bool) -> list[Row]:
    """Plain and crowded boots interleave in pairs (ABBA: P C, C P, ...), so each difference is taken
    between two boots seconds apart and load drift on a shared machine cancels instead of landing in
    the result; the crowd is spawned and killed once per two pairs."""
    pairs, size = sized(quick, 8, 4), sized(quick, 2000, 2000, 200)
    box = Sandbox()
    crowd = None
    diffs, plain, crowded = [], [], []
    try:
        for i in range(pairs):
            order = ("plain", "crowded") if i % 2 == 0 else ("crowded", "plain")
            got = {}
            for kind in order:
                if kind == "crowded" and crowd is None:
                    crowd = _spawn_crowd(size)
                elif kind == "plain" and crowd is not None:
                    _kill_crowd(crowd)
                    crowd = None
                got[kind] = _boot_ms(box)
            plain.append(got["plain"])
            crowded.append(got["crowded"])
            diffs.append(got["crowded"] - got["plain"])
    finally:
        if crowd is not None:
            _kill_crowd(crowd)
        box.close()
    d = statistics.median(diffs)
    return [Row(f"boot (auto-start) with ~{size} processes to scan", ms(statistics.median(crowded)),
                f"no extra processes {ms(statistics.median(plain))}", f"{d * 1000:+.1f} ms (median of {pairs} pairs)",
                "<= +300 ms", d <= 0.3)]


CASES = {
    "cold_start": lambda q: case_cold_start(sized(q, 15, 5)),
    "concurrent_cold": lambda q: case_concurrent_cold(16),
    "warm_status": lambda q: case_warm_status(sized(q, 200, 20)),
    "exec_overhead": lambda q: case_exec_overhead(sized(q, 300, 30)),
    "info_latency": lambda q: case_info_latency(sized(q, 1000, 100)),
    "streaming": case_streaming,
    "concurrent_tasks": case_concurrent_tasks,
    "info_throughput": case_info_throughput,
    "boot_reaping": case_boot_with_reaping,
}
