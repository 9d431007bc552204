"""Single instance per PLUGKIT_HOME: an exclusive file lock held for the runner's whole life."""

import os
from typing import Any

from plugkit import locks, paths


class AlreadyRunning(Exception):
    def __init__(self, pid: int | None, home: str) -> None:
        self.pid = pid
        who = f"pid {pid}" if pid else "another process"
        super().__init__(
            f"a plugkit runner ({who}) already serves PLUGKIT_HOME={home}; "
            "see `plugkit runner status`, or stop it with `plugkit runner stop`"
        )


def read_pid(home: str) -> int | None:
    try:
        with open(paths.pid_file(home)) as fh:
            return int(fh.read().strip() or 0) or None
    except (OSError, ValueError):
        return None


def acquire(home: str) -> Any:
    """Take the instance lock of `home` (plugkit/locks.py, flock(2)) or raise AlreadyRunning
    naming the holder's pid. The caller release()s it."""
    try:
        lock = locks.hold_instance(paths.instance_lock(home))
    except locks.Busy:
        raise AlreadyRunning(read_pid(home), home) from None
    paths.write_private(paths.pid_file(home), f"{os.getpid()}\n")
    return lock


def adopt(home: str, fd: int) -> Any:
    """The lock this runner's previous image held across its in-place exec (plugkit/locks.py
    checks it is that file's held lock); else taken afresh, or AlreadyRunning."""
    try:
        lock = locks.adopt_instance(paths.instance_lock(home), fd)
    except locks.Busy:
        return acquire(home)
    paths.write_private(paths.pid_file(home), f"{os.getpid()}\n")
    return lock
