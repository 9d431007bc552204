"""The page's cost to the runner (issue 45): task.exec latency with the page open and
streaming against the same runner with no page, in the same run.

The page open means what a browser does: the server-sent event stream held open and, on
every version it announces, the five API reads the page makes; a task printing ten lines a
second keeps the version moving in both halves. Blocks alternate (closed, open, closed,
open, ...) so a noisy neighbour lands on both sides.
"""

import http.client
import json
import statistics
import sys
import threading
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import Row, Sandbox, ms, pct, sized  # noqa: E402
from bench_runner import _client, _exec  # noqa: E402

READS = ("runner", "tasks", "work", "gates", "sessions")  # what the page fetches on each version


class OpenPage:
    """A signed-in page in a thread: holds /api/v1/events and refetches on each version."""

    def __init__(self, box: Sandbox) -> None:
        url = json.loads(box.cli("ui", "--json").stdout)["url"]
        parts = urllib.parse.urlsplit(url)
        self.port = parts.port
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", f"{parts.path}?{parts.query}")
        answer = conn.getresponse()
        answer.read()
        self.cookie = answer.getheader("Set-Cookie").split(";", 1)[0]
        conn.close()
        self.versions = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()

    def _get(self, path: str) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", path, headers={"Cookie": self.cookie})
            conn.getresponse().read()
        finally:
            conn.close()

    def _follow(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request("GET", "/api/v1/events", headers={"Cookie": self.cookie, "Accept": "text/event-stream"})
        stream = conn.getresponse()
        try:
            while not self.stop.is_set():
                line = stream.readline()
                if not line:
                    return
                if line.startswith(b"event: version"):
                    self.versions += 1
                    for name in READS:
                        self._get(f"/api/v1/{name}")
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def _block(client, cwd: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        began = time.perf_counter()
        _exec(client, "bench", "true", cwd)
        out.append(time.perf_counter() - began)
    return out


def case_page_open(n: int, rounds: int) -> list[Row]:
    box = Sandbox()
    page = None
    try:
        box.cli("runner", "start")
        client = _client(box)
        _exec(client, "ticker", "import time\nwhile True:\n    print('tick', flush=True)\n    time.sleep(0.1)",
              box.dir, wait_ms=0, lang="python")
        _block(client, box.dir, 5)
        closed, opened = [], []
        for _ in range(rounds):
            closed += _block(client, box.dir, n)
            page = OpenPage(box)
            time.sleep(0.3)  # the stream is up and has pushed its first version
            opened += _block(client, box.dir, n)
            page.close()
            versions, page = page.versions, None
        client.call("session.end", {"session_id": "ticker", "cwd": box.dir})
        client.close()
    finally:
        if page is not None:
            page.close()
        box.close()
    c50, o50 = pct(closed, 50), pct(opened, 50)
    ratio = o50 / c50
    return [Row("task.exec `true` p50, the page open and streaming", ms(o50), f"no page {ms(c50)}",
                f"{ratio:.2f}x (last block: {versions} page refreshes)", "<= 1.10x", ratio <= 1.10),
            Row("task.exec `true` p99, the page open and streaming", ms(pct(opened, 99)),
                f"no page {ms(pct(closed, 99))}", f"{statistics.median(opened) * 1000:.2f} ms median",
                "(reported)", True)]


CASES = {"page_open": lambda q: case_page_open(sized(q, 100, 20, 5), sized(q, 4, 2, 1))}
