"""Which process is our runner, found without talking to it: the instance lock's holder.

The port and token files say how to reach a runner; they do not say whether one exists.
Garbage in either made `runner stop` answer "not running" (or 401) while the runner ran,
and a SIGSTOPped runner looked absent (issue 17.5, 17.6). The runner holds an exclusive
flock on runner.lock for its whole life, and the kernel lists every flock in /proc/locks
with the holder's pid (plugkit/locks.py reads it): that is the truth `stop`, `status` and
`restart` start from.
Standard library only: status and stop run this, and a failing connect consults it.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

from plugkit import locks, paths

# /proc/<pid>/stat state letter -> what we tell the user.
STATES = {
    "R": "running", "S": "running", "D": "in uninterruptible I/O", "I": "running",
    "T": "stopped", "t": "stopped by a debugger", "Z": "a zombie", "X": "dead",
}


@dataclass(frozen=True)
class Holder:
    pid: int
    state: str  # a letter from /proc/<pid>/stat

    @property
    def stopped(self) -> bool:
        return self.state in ("T", "t")

    def describe(self) -> str:
        return STATES.get(self.state, f"in state {self.state}")


def proc_state(pid: int) -> str | None:
    """The state letter of pid, or None when it does not exist (or is not ours to see)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # comm may hold spaces and parentheses: the state follows the last ')'.
    return data[data.rfind(b")") + 2:][:1].decode() or None


def _pid_file() -> int | None:
    try:
        with open(paths.pid_file()) as fh:
            return int(fh.read().strip() or 0) or None
    except (OSError, ValueError):
        return None


def lock_holder() -> Holder | None:
    """The live process holding this PLUGKIT_HOME's instance lock, or None if nobody does."""
    lock = paths.instance_lock()
    pid = locks.holder(lock)
    if pid is None:
        if not os.path.exists("/proc/locks") and locks.is_held(lock):
            pid = _pid_file()
        if pid is None:
            return None
    state = proc_state(pid)
    if state is None or state in ("Z", "X"):
        return None
    return Holder(pid, state)


def wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc_state(pid) in (None, "Z", "X"):
            return True
        time.sleep(0.02)
    return proc_state(pid) in (None, "Z", "X")


def terminate(holder: Holder, grace_s: float = 5.0) -> str:
    """Stop a runner we cannot talk to: TERM (and CONT, so a stopped one gets to handle it),
    then KILL after grace_s. Returns how it ended: "stopped" or "killed"."""
    for sig in (signal.SIGTERM, signal.SIGCONT):
        try:
            os.kill(holder.pid, sig)
        except ProcessLookupError:
            return "stopped"
    if wait_gone(holder.pid, grace_s):
        return "stopped"
    try:
        os.kill(holder.pid, signal.SIGKILL)
    except ProcessLookupError:
        return "stopped"
    wait_gone(holder.pid, 2.0)
    return "killed"
