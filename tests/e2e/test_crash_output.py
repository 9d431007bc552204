"""Output survives a runner killed with -9: each running task's output is spooled to a bounded
file in $PLUGKIT_HOME as it arrives, and the next boot puts it back, so exec:status of a
task lost with the runner shows what it printed up to the crash."""

import os
import signal
import time

import pytest

from tests.support.runner_home import rpc

pytestmark = pytest.mark.e2e

PRINTERS = {
    # a few lines, then silence
    "quiet": "echo first-line; echo second-line >&2; echo ready; sleep 300",
    # a stream far past the spool's bound: only the newest part is kept
    "chatty": "for i in $(seq 30000); do echo chatty-line-$i; done; echo ready; sleep 300",
    # half a line, no newline, in a multi-byte script
    "partial": "printf 'größe: '; echo ready >&2; sleep 300",
}


def spool_bytes(home) -> int:
    directory = home.path / "spool"
    return sum(p.stat().st_size for p in directory.iterdir()) if directory.exists() else 0


def spooled(home, task_id: int) -> bytes:
    directory = home.path / "spool"
    files = sorted(directory.glob(f"{task_id}.*"), key=lambda p: int(p.suffix[1:])) if directory.exists() else []
    return b"".join(p.read_bytes() for p in files)


def test_kill_9_keeps_what_running_tasks_printed(home, tmp_path):
    assert home.cli("runner", "start").returncode == 0
    cwd = str(tmp_path)
    ids = {}
    for name, code in PRINTERS.items():
        ids[name] = rpc(home, "task.exec", {"session_id": "crash", "cwd": cwd, "lang": "bash",
                                            "code": code})["task"]["task_id"]
        waited = rpc(home, "task.wait", {"session_id": "crash", "cwd": cwd, "task_id": ids[name],
                                         "until_text": "ready", "timeout_ms": 60_000})
        assert waited["matched"], name
    # Feeds reach the disk in batches (every 20 ms): wait for the files to hold the marker,
    # as a crash would find them any time after that.
    deadline = time.monotonic() + 30
    while not all(b"ready" in spooled(home, tid) for tid in ids.values()) and time.monotonic() < deadline:
        time.sleep(0.02)
    # Bounded on disk while running: two 64 KiB halves per task at most.
    assert 0 < spool_bytes(home) <= len(PRINTERS) * 2 * (64 << 10)

    os.kill(home.discovery()["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while home.runner_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert home.cli("runner", "start").returncode == 0
    assert spool_bytes(home) == 0  # read back into the ledger, then emptied

    def status(name: str):
        return home.cli("exec:status", f"task_{ids[name]}", "--session", "crash", "--cwd", cwd)

    quiet = status("quiet")
    assert "first-line\n" in quiet.stdout and "second-line" in quiet.stdout + quiet.stderr
    assert f"task_{ids['quiet']} killed: runner_lost" in quiet.stderr, quiet.stderr
    chatty = status("chatty")
    assert "chatty-line-30000\n" in chatty.stdout and "chatty-line-1\n" not in chatty.stdout
    listed = {t["task_id"]: t for t in rpc(home, "task.list", {"session_id": "crash", "cwd": cwd})["tasks"]}
    assert listed == {} or all(t["reason"] == "runner_lost" for t in listed.values())
    info = rpc(home, "task.status", {"session_id": "crash", "cwd": cwd, "task_id": ids["chatty"]})
    assert info["bytes_out"] > 30000 * len("chatty-line-1\n")  # all it printed is counted
    assert "größe: " in status("partial").stdout
