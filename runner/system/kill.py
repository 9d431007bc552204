"""Finding a runner's tagged processes and killing a task's whole tree: group, root, and every tagged escapee."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

import psutil

from runner.system import tags
from runner.system.subreaper import start_ticks

_POLL_S = 0.02
_SWEEP_S = 2.0
# psutil's epoch create_time is starttime + the kernel's btime, and btime is
# whole seconds that shift when the wall clock is stepped (NTP, resume): an
# exact comparison would make the guard refuse our own root after such a step.
_CREATE_TIME_TOLERANCE_S = 1.0


@dataclass(frozen=True)
class KillReport:
    """What a kill did: pids sent TERM by pid, pids still alive after the grace and sent KILL,
    pids alive when the sweep gave up. Members reached only through killpg are not listed."""

    terminated: tuple[int, ...]
    killed: tuple[int, ...]
    survivors: tuple[int, ...]
    elapsed_s: float


def find_tagged(
    runner_id: str, task_id: str | None = None, *, home: str | None = None
) -> list[psutil.Process]:
    """Live processes of the current user tagged with runner_id (and task_id, home when given)."""
    if not runner_id:
        raise ValueError("runner_id must not be empty")
    needles = _needles(runner_id, task_id, home)
    # Cheap first filter: most environments do not mention the runner at all,
    # so a substring test on the raw bytes skips framing and parsing for them.
    quick = needles[0][1:-1]
    me = os.getpid()
    found = []
    for pid in _pids():
        if pid == me:
            continue
        raw = tags.read_environ(pid)
        if not raw or quick not in raw or not _matches(raw, needles):
            continue
        proc = _confirm(pid, needles)
        if proc is not None:
            found.append(proc)
    return found


def kill_tree(
    *,
    pgid: int | None,
    root: tuple[int, float] | None,
    runner_id: str,
    task_id: str,
    grace_s: float = 0.5,
) -> KillReport:
    """TERM the group, the root and every process tagged with the task; after grace_s, KILL and sweep."""
    if not task_id:
        raise ValueError("task_id must not be empty")
    return _kill(runner_id, task_id, pgid, root, grace_s)


def kill_runner_tasks(runner_id: str, *, grace_s: float = 0.5) -> KillReport:
    """Kill every process tagged with runner_id (shutdown: all tasks, browsers, helpers)."""
    return _kill(runner_id, None, None, None, grace_s)


def kill_adopted(pid: int, ticks: int, *, grace_s: float = 0.2) -> KillReport:
    """Kill an orphan the subreaper adopted (it may carry no tag), its descendants and its group
    when it leads one: TERM, then after grace_s KILL. ticks is its start time
    (runner/system/subreaper.start_ticks): a recycled pid is never signalled."""
    start = time.monotonic()
    try:
        proc = psutil.Process(pid)  # pinned first, then checked: a pid recycled after this fails is_running()
        if start_ticks(pid) != ticks or not _signalable(pid):
            return KillReport((), (), (), 0.0)
        group = pid if os.getpgid(pid) == pid and _group_is_ours(pid, (pid, proc.create_time())) else None
    except (psutil.Error, OSError):
        return KillReport((), (), (), 0.0)

    def targets() -> list[psutil.Process]:
        try:
            found = proc.children(recursive=True)
        except psutil.Error:
            found = []
        return [proc, *found]

    watched = targets()
    # Group first: a member forked after the scan still gets the TERM.
    _killpg(group, signal.SIGTERM)
    terminated = {p.pid for p in watched if _signal(p, signal.SIGTERM)}
    deadline = start + grace_s
    while time.monotonic() < deadline and any(_alive(p) for p in watched):
        time.sleep(_POLL_S)
    killed: set[int] = set()
    sweep_deadline = time.monotonic() + _SWEEP_S
    while True:
        living = [p for p in {p.pid: p for p in [*watched, *targets()]}.values() if _alive(p)]
        if group is not None and _alive(proc):
            _killpg(group, signal.SIGKILL)  # only while the leader lives is the group id surely its
        if not living or time.monotonic() > sweep_deadline:
            break
        killed.update(p.pid for p in living if _signal(p, signal.SIGKILL))
        time.sleep(_POLL_S)
    return KillReport(terminated=tuple(sorted(terminated)), killed=tuple(sorted(killed)),
                      survivors=tuple(sorted(p.pid for p in living)), elapsed_s=time.monotonic() - start)


def _kill(
    runner_id: str,
    task_id: str | None,
    pgid: int | None,
    root: tuple[int, float] | None,
    grace_s: float,
) -> KillReport:
    start = time.monotonic()
    group = pgid if pgid is not None and _group_is_ours(pgid, root) else None
    root_proc = _root_process(root)
    terminated: set[int] = set()
    killed: set[int] = set()

    def targets() -> list[psutil.Process]:
        procs = {p.pid: p for p in find_tagged(runner_id, task_id)}
        if root_proc is not None and root_proc.pid not in procs and _alive(root_proc):
            procs[root_proc.pid] = root_proc
        return list(procs.values())

    watched = targets()
    _killpg(group, signal.SIGTERM)
    for proc in watched:
        if _signal(proc, signal.SIGTERM):
            terminated.add(proc.pid)

    deadline = start + grace_s
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in watched) and not _group_exists(group):
            break
        time.sleep(_POLL_S)

    # Re-scan on every pass: a process that forked while we were signalling has
    # a child we have never seen. Its tags came with it, so the scan finds it.
    # Scan before the group KILL so that whatever outlived the grace period is
    # reported as killed, even when killpg is what actually ends it.
    sweep_deadline = time.monotonic() + _SWEEP_S
    while True:
        living = [p for p in targets() if _alive(p)]
        _killpg(group, signal.SIGKILL)
        if not living or time.monotonic() > sweep_deadline:
            break
        for proc in living:
            if _signal(proc, signal.SIGKILL):
                killed.add(proc.pid)
        time.sleep(_POLL_S)

    return KillReport(
        terminated=tuple(sorted(terminated)),
        killed=tuple(sorted(killed)),
        survivors=tuple(sorted({p.pid for p in living})),
        elapsed_s=time.monotonic() - start,
    )


def _needles(runner_id: str, task_id: str | None, home: str | None) -> list[bytes]:
    pairs = [(tags.RUNNER_ID, runner_id), (tags.TASK_ID, task_id), (tags.HOME, home)]
    # Framed by NULs so runner "r1" does not match "r10" and a value cannot be
    # matched as a suffix of some other variable's value.
    return [b"\0" + os.fsencode(f"{k}={v}") + b"\0" for k, v in pairs if v is not None]


def _matches(raw: bytes, needles: list[bytes]) -> bool:
    framed = b"\0" + raw if raw.endswith(b"\0") else b"\0" + raw + b"\0"
    return all(n in framed for n in needles)


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        # No procfs (not Linux): psutil knows the platform's way to list pids.
        return psutil.pids()


def _confirm(pid: int, needles: list[bytes]) -> psutil.Process | None:
    """Pin pid to a psutil.Process (its create_time), then check the tags again against that process."""
    try:
        proc = psutil.Process(pid)
        # The pid may have been recycled between our read and Process(): read
        # the environment again now that create_time is fixed; a stranger fails.
        raw = tags.read_environ(pid)
        if not raw or not _matches(raw, needles):
            return None
        if proc.uids().real != os.getuid() or proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc
    except psutil.Error:
        return None


def _root_process(root: tuple[int, float] | None) -> psutil.Process | None:
    if root is None or not _signalable(root[0]):
        return None
    try:
        proc = psutil.Process(root[0])
        if abs(proc.create_time() - root[1]) > _CREATE_TIME_TOLERANCE_S:
            return None
        return proc
    except psutil.Error:
        return None


def _group_is_ours(pgid: int, root: tuple[int, float] | None) -> bool:
    if pgid <= 1 or pgid == os.getpgrp() or pgid == os.getpid():
        return False
    if root is None or root[0] != pgid:
        return True
    # A group id is the leader's pid and the kernel keeps that number allocated
    # while any member lives, so the id can only be recycled once the group is
    # empty, and then only by a new process with pid == pgid. If such a process
    # exists and is not our root, the group is someone else's now.
    try:
        holder = psutil.Process(pgid)
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False
    try:
        return abs(holder.create_time() - root[1]) <= _CREATE_TIME_TOLERANCE_S
    except psutil.Error:
        return True


def _killpg(pgid: int | None, sig: int) -> None:
    if pgid is None:
        return
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_exists(pgid: int | None) -> bool:
    if pgid is None:
        return False
    try:
        # Zombie members still count until reaped; that only costs the grace wait.
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _signalable(pid: int) -> bool:
    return pid > 1 and pid != os.getpid()


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _signal(proc: psutil.Process, sig: int) -> bool:
    """Signal proc only if its pid still names the same process (create_time), race-free where pidfds exist."""
    if not _signalable(proc.pid):
        return False
    pidfd = _pidfd_open(proc.pid)
    try:
        # With a pidfd open, the check below and the signal refer to one
        # process: the fd pins it, so a recycled pid cannot slip in between.
        # Without one (old kernel, seccomp), a tiny check-then-kill window remains.
        if not proc.is_running():
            return False
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, sig)
        else:
            os.kill(proc.pid, sig)
        return True
    except (ProcessLookupError, PermissionError, psutil.Error):
        return False
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _pidfd_open(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None or not hasattr(signal, "pidfd_send_signal"):
        return None
    try:
        return opener(pid)
    except OSError:
        return None
