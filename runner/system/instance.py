"""Single instance per PLUGKIT_HOME: an exclusive file lock held for the runner's whole life."""

import os

from filelock import FileLock, Timeout

from plugkit import paths


class AlreadyRunning(Exception):
    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        who = f"pid {pid}" if pid else "another process"
        super().__init__(
            f"a plugkit runner ({who}) already serves PLUGKIT_HOME={paths.home()}; "
            "see `plugkit runner status`, or stop it with `plugkit runner stop`"
        )


def read_pid() -> int | None:
    try:
        with open(paths.pid_file()) as fh:
            return int(fh.read().strip() or 0) or None
    except (OSError, ValueError):
        return None


def acquire() -> FileLock:
    """Take the instance lock or raise AlreadyRunning naming the holder's pid."""
    lock = FileLock(paths.instance_lock(), timeout=0, mode=0o600)
    try:
        lock.acquire()
    except Timeout:
        raise AlreadyRunning(read_pid()) from None
    paths.write_private(paths.pid_file(), f"{os.getpid()}\n")
    return lock
