"""Single instance per PLUGKIT_HOME: an exclusive file lock held for the runner's whole life."""

import os

from filelock import FileLock, Timeout

from plugkit import paths


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


def acquire(home: str) -> FileLock:
    """Take the instance lock of `home` or raise AlreadyRunning naming the holder's pid."""
    lock = FileLock(paths.instance_lock(home), timeout=0, mode=0o600)
    try:
        lock.acquire()
    except Timeout:
        raise AlreadyRunning(read_pid(home), home) from None
    paths.write_private(paths.pid_file(home), f"{os.getpid()}\n")
    return lock
