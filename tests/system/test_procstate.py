"""procstate.waiting_for_input against real readers: each way a program can block on its stdin
is seen, and a process merely sleeping, or blocked on some other pipe, is not."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from runner.system import procstate

READERS = {
    "python read()": [sys.executable, "-c", "import sys; sys.stdin.read()"],
    "python input()": [sys.executable, "-c", "input('name? ')"],
    "python select": [sys.executable, "-c", "import select, sys; select.select([sys.stdin], [], [])"],
    "python poll": [sys.executable, "-c",
                    "import select; p = select.poll(); p.register(0, select.POLLIN); p.poll()"],
    "bash read": ["bash", "-c", "read x"],
    "a grandchild's cat": ["bash", "-c", "cat; echo done"],
    "node (epoll)": ["node", "-e", "process.stdin.on('data', () => {})"],
    "a reader thread": [sys.executable, "-c",
                        "import sys, threading; t = threading.Thread(target=sys.stdin.read); t.start(); t.join()"],
}
IDLE = {
    "sleep": ["sleep", "30"],
    "node timer": ["node", "-e", "setTimeout(() => {}, 30000)"],
    "reading another pipe": [sys.executable, "-c", "import os; r, w = os.pipe(); os.read(r, 1)"],
}


def spawn(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def reap(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait()
    proc.stdin.close()


def seen_waiting(proc: subprocess.Popen, within_s: float) -> int | None:
    inode = procstate.pipe_inode(proc.stdin.fileno())
    deadline = time.monotonic() + within_s
    while True:
        found = procstate.waiting_for_input(proc.pid, inode)
        if found is not None or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@pytest.mark.parametrize("name", READERS)
def test_a_blocked_stdin_reader_is_seen(name):
    proc = spawn(READERS[name])
    try:
        found = seen_waiting(proc, 20)
        assert found is not None, name
        assert found == proc.pid or proc.pid in {p for p in _ancestors(found)}
    finally:
        reap(proc)


@pytest.mark.parametrize("name", IDLE)
def test_a_process_not_reading_its_stdin_is_not_waiting(name):
    proc = spawn(IDLE[name])
    try:
        time.sleep(0.5)  # long enough to be asleep in whatever it blocks on
        assert procstate.waiting_for_input(proc.pid, procstate.pipe_inode(proc.stdin.fileno())) is None
    finally:
        reap(proc)


def test_input_sent_wakes_the_reader_and_eof_ends_it():
    proc = spawn([sys.executable, "-c", "import sys\nfor line in sys.stdin: pass"])
    try:
        assert seen_waiting(proc, 20) == proc.pid
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0
        assert procstate.waiting_for_input(proc.pid, 1) is None  # gone: never an error
    finally:
        reap(proc)


def _ancestors(pid: int) -> list[int]:
    out = []
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
        out.append(pid)
    return out
