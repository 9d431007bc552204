"""An escapee: a `sleep N` that left its task's group and dropped every tag (`setsid env -i`),
found by an N no other process on the machine uses, since it carries none of our marks."""

import os
import random
import signal
import time

import psutil


def unique_seconds() -> str:
    return f"{random.randint(100_000, 999_999)}"


def escapees(seconds: str) -> list[int]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if p.info["cmdline"] == ["sleep", seconds] and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p.pid)
        except psutil.Error:
            continue
    return found


def gone(seconds: str, within: float = 5) -> bool:
    deadline = time.monotonic() + within
    while escapees(seconds):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def kill_all(seconds: str) -> None:
    """Teardown of a failed test: the escapee must not outlive it."""
    for pid in escapees(seconds):
        os.kill(pid, signal.SIGKILL)
