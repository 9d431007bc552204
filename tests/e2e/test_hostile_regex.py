"""A client-supplied regex cannot wedge the runner: RE2 runs it in linear time (issue 17.1)."""

import threading
import time
import urllib.request

import pytest

from client.wire.rpc import RpcFailure
from tests.support.runner_home import Home, rpc

pytestmark = pytest.mark.e2e
CATASTROPHIC = r"^(a+)+$"  # 2^N backtracking paths under Python's re when the input ends in '!'


def health_times(home: Home, stop: threading.Event, seen: list[float]) -> None:
    """/health round trips while the attack runs; one that never answers shows as a gap."""
    url = f"http://127.0.0.1:{home.port}/health"
    while not stop.is_set():
        started = time.monotonic()
        try:
            urllib.request.urlopen(url, timeout=10).read()
            seen.append(time.monotonic() - started)
        except OSError:
            seen.append(float("inf"))
        time.sleep(0.05)


def test_a_catastrophic_until_regex_neither_wedges_health_nor_ignores_timeout(home: Home, tmp_path):
    runner = home.start_runner()
    try:
        task = rpc(home, "task.exec", {
            "session_id": "s", "cwd": str(tmp_path), "lang": "bash", "wait_ms": 10_000,
            "code": "printf 'a%.0s' $(seq 1 5000); printf '!'"})["task"]
        assert task["state"] == "completed"
        stop, seen = threading.Event(), []
        prober = threading.Thread(target=health_times, args=(home, stop, seen))
        prober.start()
        try:
            waited = rpc(home, "task.wait", {"session_id": "s", "cwd": str(tmp_path),
                                             "task_id": task["task_id"], "until_regex": CATASTROPHIC,
                                             "cursor": 0, "timeout_ms": 500}, timeout=20)
            time.sleep(0.3)  # a few more probes after the match attempt
        finally:
            stop.set()
            prober.join()
        assert waited["matched"] is False
        assert seen and max(seen) < 5, f"/health stalled: {max(seen):.1f}s"
        # mutable resolve runs the same engine: a catastrophic --regex is just no match.
        rpc(home, "mutable.add", {"session_id": "s", "cwd": str(tmp_path), "name": "m"})
        resolved = rpc(home, "mutable.resolve", {"session_id": "s", "cwd": str(tmp_path), "name": "m",
                                                 "task_id": task["task_id"], "regex": CATASTROPHIC},
                       timeout=20)
        assert resolved["mutable"]["status"] != "KNOWN"
    finally:
        runner.terminate()
        runner.communicate(timeout=10)


@pytest.mark.parametrize("pattern,construct", [
    (r"(a)\1", r"\1"), (r"a(?=b)", "(?="), (r"(?<!x)y", "(?<"), (r"a++", "++"),
])
def test_a_pattern_re2_cannot_run_is_refused_naming_the_construct(home: Home, tmp_path, pattern, construct):
    runner = home.start_runner()
    try:
        task = rpc(home, "task.exec", {"session_id": "s", "cwd": str(tmp_path), "lang": "bash",
                                       "code": "echo hi", "wait_ms": 10_000})["task"]
        with pytest.raises(RpcFailure) as err:
            rpc(home, "task.wait", {"session_id": "s", "cwd": str(tmp_path), "task_id": task["task_id"],
                                    "until_regex": pattern, "timeout_ms": 100})
        assert err.value.code == -32602
        assert "until_regex" in err.value.message and construct in err.value.message
    finally:
        runner.terminate()
        runner.communicate(timeout=10)
