"""exec:serial benchmarks, each beside a bare pyserial read loop on the same pty pair.

Throughput: bytes written at the far end of a socat pty pair until the whole burst
is in the task's output (MB/s). Latency: a short line written at the far end until
task.output returns it (p50/p99). The baseline opens the same near pty with plain
pyserial in this process, after the task has closed it. Not a test: timings are noisy.

  scripts/bench serial_throughput serial_latency
"""

import http.client
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import Row, Sandbox, ms, pct, sized  # noqa: E402

import serial  # noqa: E402  (pyserial: the baseline)

SESSION = "bench-serial"


class Rpc:
    """JSON-RPC to the sandbox's runner over one keep-alive connection (stdlib only,
    so this script does not depend on the client package's internals)."""

    def __init__(self, box: Sandbox) -> None:
        self.port = int(box.env["PLUGKIT_PORT"])
        self.token = Path(box.env["PLUGKIT_HOME"], "token").read_text().strip()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=180)
        self.ids = 0

    def __call__(self, method: str, **params):
        self.ids += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        self.conn.request("POST", "/rpc", body, {"Authorization": f"Bearer {self.token}",
                                                 "Content-Type": "application/json",
                                                 "Host": f"127.0.0.1:{self.port}"})
        reply = json.loads(self.conn.getresponse().read())
        if "error" in reply:
            raise SystemExit(f"{method} failed: {reply['error']}")
        return reply["result"]

    def close(self) -> None:
        self.conn.close()


@contextmanager
def pty_pair():
    """A socat pty pair: yields (near, far) paths; socat keeps both alive until the end,
    so the task and then the baseline can open the same near end in turn."""
    if shutil.which("socat") is None:
        raise SystemExit("socat is missing: apt-get install -y socat")
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        proc = subprocess.Popen(["socat", "-d", "-d", "pty,raw,echo=0", "pty,raw,echo=0"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + 10
            while len(paths := re.findall(r"PTY is (\S+)", Path(log.name).read_text())) < 2:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("socat did not start its ptys")
                time.sleep(0.01)
            yield paths[1], paths[0]
        finally:
            proc.kill()
            proc.wait()


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def burst(size: int) -> bytes:
    line = b"0123456789abcdef" * 4 + b"\n"
    return line * (size // len(line)) + b"END-OF-BURST\n"


@contextmanager
def serial_task(box: Sandbox, near: str):
    rpc = Rpc(box)
    res = rpc("task.exec", session_id=SESSION, cwd=box.dir, lang="serial", timeout_ms=3_600_000,
              code=json.dumps({"port": near}), wait_ms=50)
    task_id = res["task"]["task_id"]
    try:
        yield rpc, task_id
    finally:
        rpc("task.kill", session_id=SESSION, cwd=box.dir, task_id=task_id)
        rpc.close()


def ours_throughput(box: Sandbox, near: str, far: int, data: bytes) -> float:
    with serial_task(box, near) as (rpc, task_id):
        ref = dict(session_id=SESSION, cwd=box.dir, task_id=task_id)
        writer = threading.Thread(target=write_all, args=(far, data))
        began = time.perf_counter()
        writer.start()
        got = rpc("task.wait", **ref, until_text="END-OF-BURST", timeout_ms=600_000)
        wall = time.perf_counter() - began
        writer.join()
        if not got["matched"]:
            raise SystemExit(f"the burst never arrived: {got['task']}")
    return len(data) / wall / 1e6


def bare_throughput(near: str, far: int, data: bytes) -> float:
    with serial.Serial(near, 115200, exclusive=True, timeout=1) as port:
        writer = threading.Thread(target=write_all, args=(far, data))
        began = time.perf_counter()
        writer.start()
        got = 0
        while got < len(data):
            got += len(port.read(max(1, port.in_waiting)))
        wall = time.perf_counter() - began
        writer.join()
    return len(data) / wall / 1e6


def case_throughput(quick: bool) -> list[Row]:
    data = burst((1 if quick else 8) << 20)
    box = Sandbox()
    try:
        box.cli("runner", "start")
        with pty_pair() as (near, far_path):
            far = os.open(far_path, os.O_RDWR | os.O_NOCTTY)
            try:
                ours = max(ours_throughput(box, near, far, data) for _ in range(2))
                drain(far)
                bare = max(bare_throughput(near, far, data) for _ in range(2))
            finally:
                os.close(far)
    finally:
        box.close()
    size = f"{len(data) / 2**20:.0f} MiB"
    # The target is set by real lines, not by the pty: 12 Mbaud, the fastest UART
    # adapters, moves about 1.2 MB/s. The ratio to bare pyserial is what to watch.
    return [Row(f"serial: {size} burst from a pty into a task", f"{ours:.2f} MB/s",
                f"bare pyserial read loop {bare:.2f} MB/s", f"{ours / bare:.2f}x",
                ">= 10 MB/s (12 Mbaud = 1.2)", ours >= 10)]


def drain(fd: int) -> None:
    while select.select([fd], [], [], 0.05)[0]:
        os.read(fd, 65536)


def ours_latency(box: Sandbox, near: str, far: int, n: int) -> list[float]:
    samples = []
    with serial_task(box, near) as (rpc, task_id):
        ref = dict(session_id=SESSION, cwd=box.dir, task_id=task_id)
        cursor = rpc("task.output", **ref, max_bytes=1 << 20)["cursor"]
        for i in range(n):
            marker = f"ping {i}\n"
            began = time.perf_counter()
            os.write(far, marker.encode())
            # Long-poll until it is in the buffer, then read it as a client would.
            rpc("task.wait", **ref, until_text=marker, cursor=cursor, timeout_ms=10_000)
            out = rpc("task.output", **ref, cursor=cursor, max_bytes=1 << 16)
            samples.append(time.perf_counter() - began)
            text = "".join(c["text"] for c in out["chunks"] if c["stream"] == "stdout")
            if marker not in text:
                raise SystemExit(f"ping {i} was not readable: {text!r}")
            cursor = out["cursor"]
    return samples


def bare_latency(near: str, far: int, n: int) -> list[float]:
    samples = []
    with serial.Serial(near, 115200, exclusive=True, timeout=10) as port:
        for i in range(n):
            marker = f"ping {i}\n".encode()
            began = time.perf_counter()
            os.write(far, marker)
            if port.read_until(marker) [-len(marker):] != marker:
                raise SystemExit(f"ping {i} never came back")
            samples.append(time.perf_counter() - began)
    return samples


def case_latency(quick: bool) -> list[Row]:
    n = sized(quick, 500, 50, 5)
    box = Sandbox()
    try:
        box.cli("runner", "start")
        with pty_pair() as (near, far_path):
            far = os.open(far_path, os.O_RDWR | os.O_NOCTTY)
            try:
                ours = ours_latency(box, near, far, n)
                drain(far)
                bare = bare_latency(near, far, n)
            finally:
                os.close(far)
    finally:
        box.close()
    o50, o99, b50, b99 = pct(ours, 50), pct(ours, 99), pct(bare, 50), pct(bare, 99)
    return [
        Row("serial: far-end write -> task.output p50", ms(o50), f"bare pyserial read {ms(b50)}",
            f"+{ms(o50 - b50)}", "<= +5 ms over bare", o50 - b50 <= 0.005),
        Row("serial: far-end write -> task.output p99", ms(o99), f"bare pyserial read p99 {ms(b99)}",
            f"+{ms(o99 - b99)}", "(reported)", True),
    ]


CASES = {
    "serial_throughput": case_throughput,
    "serial_latency": case_latency,
}
