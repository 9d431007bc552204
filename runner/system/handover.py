"""The handover file: what a runner re-executing itself in place tells its next image.

Written 0600 into $PLUGKIT_HOME (0700) just before the exec; read once and deleted by the new
image at boot. Who could write it: only this uid can create files in the home, and a task in
the sandbox does not see the home at all. Someone of this uid outside a sandbox could plant
one, so a file is taken only when everything in it checks out against what the kernel says:
a regular file of ours, not a symlink, not hard-linked, not loosened, fresh, naming this very
process and the one-time nonce the old image put in the new one's environment (not its argv,
which any user can read); each fd must be what it claims (a pipe, the listening socket of our
port, the lock file), each pid our own child with the start time recorded. Anything else is
refused: the runner starts clean and says so in its log.
"""

from __future__ import annotations

import hmac
import os
import socket
import stat
import time
from dataclasses import dataclass
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

FILE = "handover.json"
# "<nonce>:<runner_id>:<lock fd>:<listen fd>": set only in the exec'd image's environment and
# popped at once. The fds and the runner id travel here, not only in the file, so an image that
# refuses the file still releases the lock and the socket and ends the tasks it cannot adopt.
ENV = "PLUGKIT_HANDOVER"
STALE_S = 60.0  # a file older than this is not from the exec that just happened
MAX_BYTES = 1 << 30  # buffers are capped per task; anything this big is not ours
VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class HandedProcess(_Model):
    """A task's running root: its pipes' fds (open across the exec), and how to end it."""

    pid: int
    start_ticks: int  # /proc/<pid>/stat field 22: with the pid, names one process
    create_time: float
    stdin_fd: Optional[int] = None  # None: the task's stdin was already closed
    stdin_pending: str = ""  # hex: written to the task's stdin but not yet taken by the pipe
    stdout_fd: Optional[int] = None  # None: that pipe was already at its end
    stderr_fd: Optional[int] = None
    returncode: Optional[int] = None  # already reaped before the exec (asyncio's watcher)
    cgroup: Optional[str] = None
    cleanup: list[str] = []  # its code file or dir, its sandbox dir: removed when it ends
    leftovers: list[str] = []  # the layout's globs (task_files.remove_leftovers)


class HandedOutput(_Model):
    start: int  # the absolute offset of the first byte kept (bytes before it were dropped)
    chunks: list[tuple[str, str]]  # (stream, text) from start to the end, in order
    pending: dict[str, str] = {}  # stream -> hex of half a UTF-8 character still held back
    spooled: bool = False  # its crash copy continues in the same spool files


class HandedTask(_Model):
    id: int
    session_id: str
    root: str
    cwd: str
    lang: str
    name: Optional[str] = None
    command: Optional[str] = None
    detached: bool = False
    started_at: float
    deadline: Optional[float] = None  # wall clock: its timeout still ends it at the same moment
    digest: str
    read_cursor: int = 0
    bytes_out_before: int = 0
    output: HandedOutput
    process: HandedProcess


class Handover(_Model):
    version: int = VERSION
    pid: int
    nonce: str
    written_at: float
    token: str
    port: int
    tasks: list[HandedTask] = []
    task_dirs: list[str] = []  # the process executors' private dirs the tasks' files are in
    cut: list[str] = Field(default_factory=list)  # "task_7 (browser)": what did not survive


@dataclass(frozen=True)
class Inherited:
    """What the environment says this image inherited (before the file is read)."""

    nonce: str
    runner_id: str
    lock_fd: int
    listen_fd: int

    def env(self) -> str:
        return f"{self.nonce}:{self.runner_id}:{self.lock_fd}:{self.listen_fd}"

    @classmethod
    def parse(cls, value: Optional[str]) -> Optional["Inherited"]:
        parts = (value or "").split(":")
        if len(parts) != 4 or not parts[0] or not parts[2].isdigit() or not parts[3].isdigit():
            return None
        return cls(parts[0], parts[1], int(parts[2]), int(parts[3]))


class Refused(Exception):
    """The handover file is not one this process can trust; the message says why (for the log)."""


def path(home: str) -> str:
    return os.path.join(home, FILE)


def write(home: str, handover: Handover) -> str:
    """Atomically, 0600, never through a link someone left at the name (O_EXCL on a fresh name)."""
    final = path(home)
    tmp = f"{final}.{os.getpid()}.{handover.nonce[:8]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, handover.model_dump_json().encode())
    finally:
        os.close(fd)
    os.replace(tmp, final)
    return final


def remove(home: str) -> None:
    try:
        os.unlink(path(home))
    except OSError:
        pass


def read(home: str, nonce: Optional[str], port: int) -> Handover:
    """The handover meant for this process, or Refused. The file is gone afterwards either way."""
    where = path(home)
    try:
        try:
            fd = os.open(where, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except FileNotFoundError:
            raise Refused("no handover file") from None
        except OSError as exc:
            raise Refused(f"cannot open it ({exc.strerror}; a symlink is refused)") from None
        try:
            st = os.fstat(fd)
            _check_file(st)
            data = b""
            while len(data) <= st.st_size:
                piece = os.read(fd, 1 << 20)
                if not piece:
                    break
                data += piece
        finally:
            os.close(fd)
    finally:
        remove(home)
    if not nonce:
        raise Refused("left by an earlier runner (this start was not a handover)")
    try:
        handover = Handover.model_validate_json(data)
    except ValueError:
        raise Refused("malformed") from None
    if handover.version != VERSION or handover.pid != os.getpid():
        raise Refused(f"written for pid {handover.pid}, version {handover.version}")
    if not hmac.compare_digest(handover.nonce, nonce):
        raise Refused("its nonce is not the one this process was given")
    if abs(time.time() - handover.written_at) > STALE_S:
        raise Refused("stale")
    if handover.port != port:
        raise Refused(f"for port {handover.port}, not {port}")
    return handover


def _check_file(st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise Refused("not a regular file")
    if st.st_uid != os.geteuid():
        raise Refused(f"owned by uid {st.st_uid}, not {os.geteuid()}")
    if st.st_mode & 0o077:
        raise Refused(f"mode {stat.S_IMODE(st.st_mode):o}: readable or writable by others")
    if st.st_nlink != 1:
        raise Refused("hard-linked")
    if st.st_size > MAX_BYTES:
        raise Refused("too large")
    if abs(time.time() - st.st_mtime) > STALE_S:
        raise Refused("stale")


def is_pipe(fd: Optional[int]) -> bool:
    try:
        return fd is not None and stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


def listening_socket(fd: int, port: int) -> socket.socket:
    """The inherited listening socket, checked to be TCP, listening, on 127.0.0.1:port; Refused else."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError:
        raise Refused(f"fd {fd} is not a socket") from None
    try:
        ok = (sock.family == socket.AF_INET and sock.type == socket.SOCK_STREAM
              and sock.getsockname() == ("127.0.0.1", port)
              and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1)
    except OSError:
        ok = False
    if not ok:
        sock.detach()
        raise Refused(f"fd {fd} is not our listening socket on 127.0.0.1:{port}")
    sock.set_inheritable(False)
    return sock


def start_ticks(pid: int) -> Optional[int]:
    """pid's start time in clock ticks since boot, a zombie's too (None: no such process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        return int(data[data.rfind(b")") + 2:].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def own_child(pid: int, start_ticks: int) -> bool:
    """pid is a child of this process (alive or a zombie not yet reaped) started at start_ticks."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    fields = data[data.rfind(b")") + 2:].split()
    try:
        return int(fields[1]) == os.getpid() and int(fields[19]) == start_ticks
    except (IndexError, ValueError):
        return False


def close_task_fds(process: HandedProcess) -> None:
    """A refused task's inherited fds (the pipes of a task this image will not adopt)."""
    for fd in (process.stdin_fd, process.stdout_fd, process.stderr_fd):
        if fd is not None and fd > 2:
            try:
                os.close(fd)
            except OSError:
                pass
