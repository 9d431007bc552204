"""restart-with-tasks downtime (issue 47): the window in which /health does not answer while
`plugkit runner restart` re-executes the runner in place with tasks running, measured from
outside by a prober; its baseline is the same prober across `runner restart --force` (stop,
then start: what a restart was before it kept tasks).

CASES plugs into scripts/bench.py's table; `scripts/bench restart_downtime` runs it alone.
"""

import http.client
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import Row, Sandbox, ms, sized  # noqa: E402

TASKS = 5


def _answers(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _gap(box: Sandbox, *restart: str) -> float:
    """The longest time between two answered /health probes across one restart, in seconds."""
    port = int(box.env["PLUGKIT_PORT"])
    for _ in range(TASKS):
        box.cli("exec:bash", "--session", "bench", "--wait", "0", "sleep 300")
    answered: list[float] = []
    stop = threading.Event()

    def probe() -> None:
        while not stop.is_set():
            if _answers(port):
                answered.append(time.monotonic())
            else:
                time.sleep(0.002)  # refused at once (nobody listens): do not spin

    thread = threading.Thread(target=probe)
    thread.start()
    try:
        time.sleep(0.1)
        result = box.cli("runner", "restart", *restart)
        if result.returncode != 0:
            raise SystemExit(f"runner restart {' '.join(restart)} failed: {result.stderr}")
        time.sleep(0.1)
    finally:
        stop.set()
        thread.join()
    return max(b - a for a, b in zip(answered, answered[1:]))


def case_restart_downtime(samples: int) -> list[Row]:
    box = Sandbox()
    try:
        if box.cli("runner", "start").returncode != 0:
            raise SystemExit("runner did not start")
        ours, base = [], []
        for _ in range(samples):  # interleaved: a load spike hits both alike
            ours.append(_gap(box))
            base.append(_gap(box, "--force"))
        box.cli("runner", "stop")
    finally:
        box.close()
    o, b = statistics.median(ours), statistics.median(base)
    return [Row(f"restart-with-tasks downtime ({TASKS} tasks kept; /health gap, median of {samples})",
                ms(o), f"{ms(b)} (stop+start, tasks killed)", f"{o / b:.2f}x", "<= 1.0x", o <= b)]


CASES = {"restart_downtime": lambda q: case_restart_downtime(sized(q, 5, 2))}
