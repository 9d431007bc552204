"""Every file lock plugkit takes, in one place, all on one mechanism: flock(2).

- The instance lock (runner.lock): held by the runner for its whole life, through filelock
  (its UnixFileLock is flock(2), mode 0600). The runner pays filelock's import once, at boot.
- The start lock (start.lock): taken by a client that found no runner, while it starts one.
  That is the client's cold path, where filelock's import (asyncio, typing: 50-150 ms) would
  be most of what the client costs; it takes the same flock(2) raw.
- Who holds a lock: the kernel lists every flock in /proc/locks with its holder's pid, read
  without taking anything (status, stop and a failing connect ask it); where /proc/locks is
  missing, a non-blocking probe.
flock(2) locks exclude each other whichever of the two took them, per open file description:
two opens of one file conflict even within one process.
"""

from __future__ import annotations

import fcntl
import os
import time


class Busy(Exception):
    """Another process holds the lock."""


def hold_instance(path: str) -> "FileLock":  # noqa: F821  (imported here, not at module top)
    """The instance lock, taken now or Busy; held until its release() (or the process's exit)."""
    from filelock import FileLock, Timeout

    lock = FileLock(path, timeout=0, mode=0o600)
    try:
        lock.acquire()
    except Timeout:
        raise Busy(path) from None
    return lock


def take(path: str, deadline: float, poll_s: float = 0.01) -> int:
    """flock(2) on path, waiting until the monotonic deadline (then Busy). Returns the fd: give it
    to release()."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise Busy(path) from None
            time.sleep(poll_s)


def release(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def holder(path: str) -> int | None:
    """The pid holding an flock on path, from /proc/locks (no lock taken by us)."""
    try:
        st = os.stat(path)
        # The kernel prints the device as hex major:minor, then the inode.
        key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        with open("/proc/locks") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:02:5678 0 EOF"; blocked waiters have "->" first.
        if len(fields) < 6 or fields[1] == "->" or fields[1] != "FLOCK":
            continue
        if fields[5] == key:
            try:
                return int(fields[4])
            except ValueError:
                continue
    return None


def is_held(path: str) -> bool:
    """Fallback without /proc/locks: probe with a non-blocking flock (released at once)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)
