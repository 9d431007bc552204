"""Every file lock plugkit takes, in one place, all on one mechanism: flock(2).

- The instance lock (runner.lock): held by the runner for its whole life, flock(2) on a 0600
  file. Raw, not through filelock: an in-place restart (runner/boot/handover.py) hands the
  locked fd across its exec, so the lock is never free for a racing start; filelock keeps
  its fd private.
- The start lock (start.lock): taken by a client that found no runner, while it starts one.
  That is the client's cold path, where filelock's import (asyncio, typing: 50-150 ms) would
  be most of what the client costs; it takes the same flock(2) raw.
- A file's lock around a read-modify-write (exclusive()): the workspace's state files and the
  memory store, taken by the client (a hook, a verb) and the runner alike, so raw for the
  client's sake; try_exclusive() for a lock held as long as a reservation (a worker's ports).
- The Ray node side's locks (file_lock(): the node's clone, the driver's claims): filelock's,
  in processes that load asyncio anyway, blocking until the other attempt is done.
- Who holds a lock: the kernel lists every flock in /proc/locks with its holder's pid, read
  without taking anything (status, stop and a failing connect ask it); where /proc/locks is
  missing, a non-blocking probe.
flock(2) locks exclude each other whichever of the two took them, per open file description:
two opens of one file conflict even within one process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from typing import Iterator


class Busy(Exception):
    """Another process holds the lock."""


class InstanceLock:
    """A held flock(2) on the instance lock file: the fd is the lock (per open file description)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def release(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            release(fd)


def hold_instance(path: str) -> InstanceLock:
    """The instance lock, taken now or Busy; held until its release() (or the process's exit)."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise Busy(path) from None
    return InstanceLock(fd)


def adopt_instance(path: str, fd: int) -> InstanceLock:
    """The instance lock a runner's previous image held across its exec, checked: fd must be
    open on path's very file and hold its flock (re-taking a lock this open file description
    holds succeeds; one on another description would not). Busy otherwise, fd closed."""
    try:
        held, named = os.fstat(fd), os.stat(path, follow_symlinks=False)
        if (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino):
            raise OSError("not the lock file")
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        try:
            os.close(fd)
        except OSError:
            pass
        raise Busy(path) from None
    os.set_inheritable(fd, False)
    return InstanceLock(fd)


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


@contextlib.contextmanager
def exclusive(path: str) -> Iterator[None]:
    """An exclusive flock(2) on path (a 0600 file, made if missing, never through a link: one
    planted there would have us create and lock a file elsewhere), held for the block. Across
    threads and processes: each holder opens the file anew, and the lock is per open file."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases it


def try_exclusive(path: str) -> int | None:
    """An exclusive flock(2) on path taken now, its fd (give it to release()), or None when
    another holds it."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        raise


def file_lock(path: str):
    """filelock's lock on path (flock(2) underneath, so it excludes the raw ones above), 0600:
    for processes that load asyncio anyway (filelock's import cost is asyncio's)."""
    from filelock import UnixFileLock

    return UnixFileLock(path, mode=0o600)


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
