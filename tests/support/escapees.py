"""An escapee: a `sleep N` that left its task's group and dropped every tag (`setsid env -i`),
found by an N no other process on the machine uses, since it carries none of our marks."""

import os
import random
import signal
import time

import psutil

from tests.support.load import stretched


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
    """Until no escapee of that tag is left: `within` s on a quiet machine, stretched by the load
    (the sweep that ends them, a scan of every process, runs on a CPU it shares with the hogs)."""
    deadline = time.monotonic() + stretched(within)
    while escapees(seconds):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def kill_all(seconds: str) -> None:
    """Teardown of a failed test: the escapee must not outlive it."""
    for pid in escapees(seconds):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # it ended between the scan and the kill
            continue
