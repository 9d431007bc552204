"""The runner as a child subreaper: adopting a task's orphans and reaping them without stealing asyncio's children."""

from __future__ import annotations

import asyncio
import ctypes
import os
import sys
import threading
import time
from collections.abc import Container, Iterator

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
# A zombie this new (seen as one for less than this) may be a child a thread spawned with
# subprocess (a version probe, a git command) and is about to wait for. Children asyncio spawns are known exactly
# (SPAWNED, below) and never need this margin: under load the loop can take seconds
# between fork and the task learning its pid, which once let the sweeper take their
# exit status (asyncio then reports 255). An orphan that dies younger than this is
# simply reaped on a later pass.
MIN_AGE_S = 1.0
# (pid, start) -> when a sweep first saw it a zombie (monotonic); sweeps run one at a time.
_ZOMBIE_SINCE: dict[tuple[int, float], float] = {}


class _Spawned:
    """The pids of children asyncio's watcher is waiting for, readable from the sweeper's thread."""

    def __init__(self) -> None:
        self._pids: set[int] = set()
        self._lock = threading.Lock()

    def add(self, pid: int) -> None:
        with self._lock:
            self._pids.add(pid)

    def discard(self, pid: int) -> None:
        with self._lock:
            self._pids.discard(pid)

    def snapshot(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._pids)


SPAWNED = _Spawned()


def tracking_watcher() -> asyncio.AbstractChildWatcher:
    """asyncio's child watcher (pidfds where the kernel has them), recording each child in
    SPAWNED from the moment it is forked until asyncio has its exit status. Python < 3.12."""
    base = asyncio.PidfdChildWatcher if hasattr(os, "pidfd_open") else asyncio.ThreadedChildWatcher

    class Tracking(base):  # type: ignore[misc, valid-type]
        def add_child_handler(self, pid, callback, *args):
            SPAWNED.add(pid)

            def exited(pid, returncode, *cb_args):
                SPAWNED.discard(pid)
                callback(pid, returncode, *cb_args)

            super().add_child_handler(pid, exited, *args)

    return Tracking()


def _prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int
    return fn


def become_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process instead of init. False if unsupported."""
    prctl = _prctl()
    if prctl is None:
        return False
    zero = ctypes.c_ulong(0)
    try:
        return prctl(ctypes.c_int(_PR_SET_CHILD_SUBREAPER), ctypes.c_ulong(1), zero, zero, zero) == 0
    except (OSError, ctypes.ArgumentError):
        return False


def is_subreaper() -> bool:
    prctl = _prctl()
    if prctl is None:
        return False
    flag = ctypes.c_int(0)
    zero = ctypes.c_ulong(0)
    try:
        ok = prctl(ctypes.c_int(_PR_GET_CHILD_SUBREAPER), ctypes.byref(flag), zero, zero, zero) == 0
    except (OSError, ctypes.ArgumentError):
        return False
    return ok and flag.value != 0


def reap_adopted(managed: Container[int], *, min_age_s: float = MIN_AGE_S) -> list[int]:
    """Reap zombie children not in managed (and seen as zombies for at least min_age_s); return their pids.

    Each zombie is waited for by pid. waitpid(-1) is never used: it would take
    the exit status of a child asyncio's watcher is about to wait for. Only a subreaper
    reaps: in any other process (a runner composed inside a test) every zombie child is one
    it forked itself, and whoever forked it waits for it. The age is how long it has been a
    zombie, not how long it lived: a long-lived child (Chromium, a long git command) whose
    waiter is a moment late is not taken from it.
    """
    if not is_subreaper():
        return []
    reaped = []
    spawned = SPAWNED.snapshot()
    now = time.monotonic()
    seen = {}
    for pid, start in _zombie_children():
        first = seen[pid, start] = _ZOMBIE_SINCE.get((pid, start), now)
        if pid in managed or pid in spawned or now - first < min_age_s:
            continue
        try:
            got, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            # Someone else (asyncio, a Popen.wait) reaped it between scan and wait.
            continue
        if got == pid:
            reaped.append(pid)
            seen.pop((pid, start), None)
    _ZOMBIE_SINCE.clear()
    _ZOMBIE_SINCE.update(seen)  # only zombies still there: a pid reused later starts afresh
    return reaped


def _zombie_children() -> Iterator[tuple[int, float]]:
    """(pid, its start time) for each zombie child of this process: the pair names one process."""
    pids = _linux_children()
    if pids is None:
        yield from _psutil_zombie_children()
        return
    for pid in pids:
        start = _zombie_start(pid)
        if start is not None:
            yield pid, start


def _linux_children() -> list[int] | None:
    """Children from /proc/self/task/*/children; None when the kernel lacks CONFIG_PROC_CHILDREN."""
    if not os.path.exists(f"/proc/self/task/{os.getpid()}/children"):
        return None
    pids: list[int] = []
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    # Every thread has its own list: a child's parent is the thread that forked
    # it, and an adopted orphan goes to whichever of our threads is alive. The
    # lists are not a snapshot; a child missed now is found on the next call.
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/children", "rb") as f:
                pids.extend(int(x) for x in f.read().split())
        except OSError:
            continue
    return pids


def _zombie_start(pid: int) -> float | None:
    """Start time in seconds since boot if pid is a zombie, else None."""
    stat = _stat(pid)
    return None if stat is None or stat[0] != b"Z" else stat[2] / os.sysconf("SC_CLK_TCK")


def _psutil_zombie_children() -> Iterator[tuple[int, float]]:
    import psutil  # only where /proc/<pid>/task/*/children is missing

    for child in psutil.Process().children():
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                yield child.pid, child.create_time()
        except psutil.Error:
            continue


def adopted_children() -> list[tuple[int, int]]:
    """(pid, start time in clock ticks since boot) of each live child we did not spawn ourselves:
    an orphan of a task, re-parented to us as child subreaper. The start time names the process,
    so a recycled pid is a different orphan.

    Not ours to adopt: what asyncio spawned (SPAWNED: task roots, Chromium), and anything in our
    own session (a thread's `prog --version` probe). Every task root starts a session of its
    own and no descendant can rejoin ours, so an orphan of a task is never in our session."""
    pids = _linux_children()
    if pids is None:
        import psutil  # only where /proc/<pid>/task/*/children is missing

        pids = [c.pid for c in psutil.Process().children()]
    spawned = SPAWNED.snapshot()
    mine = os.getsid(0)
    found = []
    for pid in pids:
        if pid in spawned:
            continue
        stat = _stat(pid)
        if stat is None or stat[0] == b"Z" or stat[1] == mine:
            continue
        found.append((pid, stat[2]))
    return found


def start_ticks(pid: int) -> int | None:
    """pid's start time in clock ticks since boot (None: gone, or a zombie)."""
    stat = _stat(pid)
    return None if stat is None or stat[0] == b"Z" else stat[2]


def _stat(pid: int) -> tuple[bytes, int, int] | None:
    """(state, session id, start time in ticks) from /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # comm (field 2) may contain spaces and parentheses; fields resume after the last ')'.
    fields = data[data.rfind(b")") + 2:].split()
    if len(fields) < 20:
        return None
    return fields[0], int(fields[3]), int(fields[19])
