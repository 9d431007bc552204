"""What /proc says about processes: is a task blocked reading its stdin, and which terminal
(and session) a process belongs to.

A read on an empty pipe whose write end the runner holds never returns until
someone types or closes it, so a thread asleep (state S) in read/readv/pread on
that pipe, or in poll/select/epoll with that pipe among what it waits for, is
waiting for input; nothing else needs guessing. /proc/PID/syscall names the
syscall and its arguments (it needs ptrace read access, which the runner has
over its own descendants); poll and select arrays are read through /proc/PID/mem.
Linux only: elsewhere, and for anything unreadable, the answer is "not waiting".
"""

import os
import platform
import struct
from dataclasses import dataclass
from typing import Optional

# Syscall numbers per machine: (reads on arg0 fd, poll-likes, select-likes, epoll waits).
_SYSCALLS = {
    "x86_64": ({0, 17, 19, 295, 327}, {7, 271}, {23, 270}, {232, 281, 441}),
    "aarch64": ({63, 65, 67, 69, 286}, {73}, {72}, {22, 441}),
}
_READS, _POLLS, _SELECTS, _EPOLLS = _SYSCALLS.get(platform.machine(), (set(), set(), set(), set()))
MAX_PROCS = 64  # a tree wider than this is not a shell waiting at a prompt: look no further
MAX_FDS = 1024  # poll/select entries read per call
EPOLLIN = 0x1
POLLIN = 0x1


def pipe_inode(fd: int) -> Optional[int]:
    """The inode of the pipe behind one of our fds (the task's stdin write end), or None."""
    try:
        return os.fstat(fd).st_ino
    except OSError:
        return None


def waiting_for_input(root: int, inode: int) -> Optional[int]:
    """The pid of a process in root's tree blocked reading the pipe `inode`, or None."""
    if not _READS:
        return None
    target = f"pipe:[{inode}]"
    for pid in _tree(root):
        for tid in _threads(pid):
            if _blocked_on(pid, tid, target):
                return pid
    return None


def _tree(root: int) -> list[int]:
    """root and its descendants, breadth first, via the kernel's per-thread children lists."""
    found, queue = [], [root]
    while queue and len(found) < MAX_PROCS:
        pid = queue.pop(0)
        found.append(pid)
        for tid in _threads(pid):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as fh:
                    queue += [int(c) for c in fh.read().split()]
            except OSError:
                continue
    return found


def _threads(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def _blocked_on(pid: int, tid: str, target: str) -> bool:
    base = f"/proc/{pid}/task/{tid}"
    try:
        with open(f"{base}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
        if state != b"S":
            return False
        with open(f"{base}/syscall") as fh:
            words = fh.read().split()
    except (OSError, IndexError):
        return False
    if len(words) < 4 or not words[0].isdigit():
        return False  # "running", or -1 (not in a syscall)
    nr, args = int(words[0]), [int(w, 16) for w in words[1:7]]
    if nr in _READS:
        return _fd_is(pid, args[0], target)
    if nr in _POLLS:
        return any(fd >= 0 and events & POLLIN and _fd_is(pid, fd, target)
                   for fd, events in _pollfds(pid, args[0], args[1]))
    if nr in _SELECTS:
        return any(_fd_is(pid, fd, target) for fd in _selected(pid, args[1], args[0]))
    if nr in _EPOLLS:
        return any(_fd_is(pid, fd, target) for fd in _epoll_targets(pid, args[0]))
    return False


def _fd_is(pid: int, fd: int, target: str) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}") == target
    except OSError:
        return False


def _mem(pid: int, address: int, size: int) -> bytes:
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as fh:
            return os.pread(fh.fileno(), size, address)
    except (OSError, OverflowError, ValueError):
        return b""


def _pollfds(pid: int, address: int, count: int) -> list[tuple[int, int]]:
    raw = _mem(pid, address, min(count, MAX_FDS) * 8)  # struct pollfd {int fd; short events, revents}
    return [(fd, events) for fd, events, _ in struct.iter_unpack("ihh", raw[: len(raw) // 8 * 8])]


def _selected(pid: int, readfds: int, nfds: int) -> list[int]:
    if not readfds:
        return []
    raw = _mem(pid, readfds, (min(nfds, MAX_FDS) + 7) // 8)
    return [i * 8 + bit for i, byte in enumerate(raw) for bit in range(8) if byte >> bit & 1]


def _epoll_targets(pid: int, epfd: int) -> list[int]:
    """fds registered for input in an epoll instance (fdinfo lists `tfd: N events: HEX`)."""
    try:
        with open(f"/proc/{pid}/fdinfo/{epfd}") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        words = line.split()
        if len(words) >= 4 and words[0] == "tfd:" and words[2] == "events:" and int(words[3], 16) & EPOLLIN:
            found.append(int(words[1]))
    return found


# --- controlling terminals: who holds the terminal a process was started on --------------------

@dataclass(frozen=True)
class Stat:
    ppid: int
    session: int
    tty_nr: int  # the controlling terminal's device number; 0: the process has none


def stat(pid: int) -> Optional[Stat]:
    """Fields of /proc/PID/stat after the command name (which may hold spaces and parentheses)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return Stat(ppid=int(fields[1]), session=int(fields[3]), tty_nr=int(fields[4]))
    except (OSError, IndexError, ValueError):
        return None


def on_terminal(tty_nr: int) -> list[int]:
    """Every process whose controlling terminal is `tty_nr`: the session that holds it (a
    terminal is the controlling terminal of one session at most) and nothing else."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = stat(int(name))
            if st is not None and st.tty_nr == tty_nr:
                found.append(int(name))
    return found
