"""Spawning a task's root: cloned into its cgroup (clone_spawn.py), driven like asyncio's subprocess transport.

asyncio can only spawn through subprocess.Popen, which has no way into a cgroup at clone time;
this gives the executor the same surface it uses of asyncio's transport (get_pid,
get_pipe_transport, get_returncode, close) and calls the same SubprocessProtocol methods, so
the output, stdin and exit handling above it are the one code path for both spawns. The exit
is watched on the pidfd clone3 returned; the pid sits in subreaper.SPAWNED until we have its
status, so the runner's orphan sweeper never takes it.
"""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import signal
import time
from typing import Mapping, Optional

from runner.system import cgroups, clone_spawn, subreaper
from runner.system.pipe_ends import ReadEnd, WriteEnd

# What asyncio reports when another waiter took the exit status first.
LOST_STATUS = 255
# A spawn this long after the previous one starts its child on the runner's own CPU: after a
# quiet spell the other CPUs are likely asleep, and waking one (on a virtual machine ~0.2 ms)
# costs a spaced-out call more than the child gains by running beside the runner. Calls that
# come back to back are better served by the scheduler spreading the child.
QUIET_S = 0.01
_last_spawn = [0.0]


class ClonedProcess:
    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: asyncio.SubprocessProtocol) -> None:
        self.loop, self.protocol = loop, protocol
        self.pid: Optional[int] = None
        self.pidfd: Optional[int] = None
        self.returncode: Optional[int] = None
        self.pipes: dict[int, ReadEnd | WriteEnd] = {}
        self._closed = False

    def started(self, pid: int, pidfd: int) -> None:
        self.pid, self.pidfd = pid, pidfd
        self.loop.add_reader(pidfd, self._exited)

    def abandon(self) -> None:
        """The clone failed: the pipes close without telling the task (the shim may run it yet)."""
        self.protocol = asyncio.SubprocessProtocol()
        self.close()

    def get_pid(self) -> int:
        return self.pid

    def get_pipe_transport(self, fd: int):
        return self.pipes.get(fd)

    def get_returncode(self) -> Optional[int]:
        return self.returncode

    def _exited(self) -> None:
        self.loop.remove_reader(self.pidfd)
        try:
            got, status = os.waitpid(self.pid, os.WNOHANG)
            if got == 0:  # readable means exited; a spurious wake-up waits for the next one
                self.loop.add_reader(self.pidfd, self._exited)
                return
            self.returncode = os.waitstatus_to_exitcode(status)  # negative: the signal
        except ChildProcessError:
            self.returncode = LOST_STATUS
        os.close(self.pidfd)
        subreaper.SPAWNED.discard(self.pid)
        # What the child wrote is in the pipes now, and their EOF unless a grandchild holds them:
        # read here, so the exit is answered in this loop pass rather than after the pipes' own.
        for fd in (1, 2):
            pipe = self.pipes.get(fd)
            if isinstance(pipe, ReadEnd):
                pipe.drain()
        self.protocol.process_exited()

    def close(self) -> None:
        """As asyncio's transport: the pipes close, and a child still running is killed (and still reaped)."""
        if self._closed:
            return
        self._closed = True
        for pipe in self.pipes.values():
            pipe.close()
        if self.returncode is None and self.pidfd is not None:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except OSError:
                pass


async def spawn(protocol_factory, found: str, argv: list[str], env: Mapping[str, str], cwd: Optional[str],
                cgroup_dir: str) -> tuple[ClonedProcess, asyncio.SubprocessProtocol]:
    """Start argv (found: argv[0] on the task's PATH) in cgroup_dir with piped stdin/stdout/stderr,
    in a session of its own."""
    loop = asyncio.get_running_loop()
    path = argv[0] if "/" in argv[0] else found  # with a slash: relative to the task's cwd, as exec is
    program = clone_spawn.HELPER.program(path, argv, env, cwd)  # a bad argv or env: before any fd
    # Every descriptor this spawn opens is closed on every way out but success: at the file limit
    # (EMFILE) the second or third pipe fails, and the first one's ends stayed open before, until
    # no task could start at all. raw: ends not yet owned by a file object (closed by fd).
    raw: list[int] = []
    files: dict[int, io.FileIO] = {}
    proc: Optional[ClonedProcess] = None
    try:
        for _ in range(3):
            raw.extend(os.pipe2(os.O_CLOEXEC))
        in_r, in_w, out_r, out_w, err_r, err_w = raw
        for fd, end, mode in ((0, in_w, "wb"), (1, out_r, "rb"), (2, err_r, "rb")):
            files[fd] = open(end, mode, buffering=0)
            raw.remove(end)  # the file object closes it from now on
        protocol = protocol_factory()
        proc = ClonedProcess(loop, protocol)
        protocol.connection_made(proc)  # type: ignore[arg-type]
        # Our ends are watched before the child exists: the parent of a vfork resumes late (often
        # once the child has run its course), and then only the exit is left to see.
        proc.pipes[0] = WriteEnd(loop, files[0], lambda exc: proc.protocol.pipe_connection_lost(0, exc))
        for fd in (1, 2):
            proc.pipes[fd] = ReadEnd(loop, files[fd], lambda data, fd=fd: proc.protocol.pipe_data_received(fd, data),
                                     lambda exc, fd=fd: proc.protocol.pipe_connection_lost(fd, exc))
        now = time.monotonic()
        local, _last_spawn[0] = now - _last_spawn[0] >= QUIET_S, now
        child = clone_spawn.HELPER.clone(program, cgroup_dir, (in_r, out_w, err_w), local=local)
    except BaseException:
        for fd in raw:
            os.close(fd)
        for fd, file in files.items():
            if proc is None or fd not in proc.pipes:
                file.close()
        if proc is not None:
            proc.abandon()  # closes the ends it holds, there and then
        raise
    for fd in raw:  # the child's ends: it has its own copies now
        os.close(fd)
    subreaper.SPAWNED.add(child.pid)
    proc.started(child.pid, child.pidfd)
    return proc, protocol


async def spawn_task(protocol_factory, argv: list[str], env: Mapping[str, str], cwd: str,
                     cgroup: Optional[str], home: str):
    """The task's root in a session of its own with piped stdin/stdout/stderr; with a cgroup, in it
    from its first instruction (clone3), else through the shell shim that joins before exec."""
    found = shutil.which(argv[0], path=env.get("PATH")) if cgroup is not None else None
    if found is not None:
        try:
            if await clone_spawn.HELPER.ready(home):
                return await spawn(protocol_factory, found, argv, env, cwd, cgroup)  # type: ignore[arg-type]
        except clone_spawn.Unsupported:
            pass  # the helper turned itself off (doctor says why): the shim from now on
        # A program that cannot be found is spawned bare, so its OSError still reads spawn_failed.
        argv = [*cgroups.SHIM, cgroups.procs_file(cgroup), *argv]  # type: ignore[arg-type]
    return await asyncio.get_running_loop().subprocess_exec(
        protocol_factory, *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, cwd=cwd, env=env, start_new_session=True)
