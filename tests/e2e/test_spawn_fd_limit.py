"""A task start that fails at the descriptor limit (EMFILE) gives back every descriptor it
opened: the real runner started with RLIMIT_NOFILE at 64, held a few descriptors short of it by
idle connections, so each start meets the limit at another of its opens (one pipe, two, the
cgroup, ...); after each, the runner's open descriptors are back where they were, and a task
still starts at the end. Before, a start that failed at its second or third pipe kept the first
one's ends: every burst at the limit left the runner with fewer, until no task could start."""

import os
import resource
import socket
import subprocess
import sys
import time

import pytest

from tests.support.runner_home import rpc

pytestmark = pytest.mark.e2e
LIMIT = 64


def _low_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _exec(home, results: list, code: str = "sleep 0.5") -> None:
    try:
        done = rpc(home, "task.exec", {"session_id": "burst", "cwd": str(home.path.parent), "lang": "bash",
                                        "code": code, "wait_ms": 20000}, timeout=60)
        t = done["task"]
        results.append(t["state"] if t["state"] == "completed" else f"{t['state']}:{t.get('reason')}:{t.get('message')}")
    except Exception as exc:  # noqa: BLE001 - a refusal at the limit is what the burst is for
        results.append(type(exc).__name__)


def _until(pid: int, check) -> int:
    """The runner's descriptor count once check(count) holds (accepting a connection and closing
    a finished task's ends take a loop pass or two): polled, with a deadline far past that."""
    deadline = time.monotonic() + 30
    while not check(_fds(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _fds(pid)


def _steady(pid: int) -> int:
    """The count once the last task's ends are closed: the same over five reads in a row."""
    seen = [_fds(pid)]
    while len(seen) < 5 or len(set(seen[-5:])) > 1:
        time.sleep(0.1)
        seen.append(_fds(pid))
    return seen[-1]


@pytest.mark.parametrize("spawn", ["clone3", "shim"])
def test_a_failed_start_at_the_descriptor_limit_leaks_nothing(home, spawn):
    env = dict(home.env, PLUGKIT_CLONE3="1" if spawn == "clone3" else "0")
    proc = subprocess.Popen([sys.executable, "-m", "runner"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=_low_limit)
    fillers: list[socket.socket] = []
    try:
        home.wait_healthy(proc)
        warm: list = []
        _exec(home, warm, "true")  # what a first task opens for good (the ledger, the helper) is open now
        assert warm == ["completed"], warm
        before = _steady(proc.pid)
        outcomes = {}
        # Each start meets the limit at another of its opens: free descriptors from 1 up, held
        # down by idle connections the runner has accepted (each one costs it a descriptor).
        for free in range(1, 16):
            hold = LIMIT - before - 1 - free  # -1: the call's own connection
            fillers = [socket.create_connection(("127.0.0.1", home.port)) for _ in range(hold)]
            _until(proc.pid, lambda n, hold=hold: n >= before + hold)
            got: list = []
            _exec(home, got, "true")
            outcomes[free] = got[0]
            for s in fillers:
                s.close()
            fillers = []
            after = _until(proc.pid, lambda n: n <= before)
            assert after <= before, f"{after - before} descriptors kept by a start with {free} free: {outcomes}"
        assert any(o != "completed" for o in outcomes.values()), f"no start met the limit: {outcomes}"
        last: list = []
        _exec(home, last, "echo still-starts")
        assert last == ["completed"], last
    finally:
        for s in fillers:
            s.close()
        home.stop_all()
        proc.wait(30)
