"""A process task across the runner's in-place restart: handed over by the old image, adopted by the new.

The task's root stays our child through execve (same pid), so the new image waits for it
on a pidfd of its own and reaps it; what the task writes while no image reads waits in its
pipes, whose fds were made inheritable just before the exec (runner/boot/handover.py).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from typing import Optional

from runner.executors import task_files
from runner.executors.base import TaskIO
from runner.system import handover as handover_file
from runner.system import kill as kill_mod
from runner.system import subreaper
from runner.system.cloned_process import LOST_STATUS, ClonedProcess
from runner.system.handover import HandedProcess
from runner.system.pipe_ends import ReadEnd, WriteEnd

STREAMS = {1: "stdout", 2: "stderr"}
DRAIN_S = 0.25  # as process.DRAIN_S: a grandchild holding the pipes does not keep the task alive


def _raw(end) -> Optional[int]:
    """The fd under one of our pipe ends (ours or asyncio's), None when that end is closed."""
    if end is None or end.is_closing():
        return None
    pipe = end.get_extra_info("pipe")
    return pipe.fileno() if pipe is not None else None


def hand_over(run) -> Optional[HandedProcess]:
    """run (a ProcessRun) as the next image needs it, its pipe fds made inheritable; None when
    it cannot be handed over (not the task's last step, or input the pipe has not taken yet that
    asyncio's transport keeps out of reach). Nothing awaits: called just before the exec."""
    if run.final is None:
        return None
    transport = run.transport
    stdin = transport.get_pipe_transport(0)
    pending = b""
    if isinstance(stdin, WriteEnd):
        pending = stdin.pending()
    elif stdin is not None and not stdin.is_closing() and stdin.get_write_buffer_size():
        return None
    fds = {n: _raw(transport.get_pipe_transport(n)) for n in (0, 1, 2)}
    ticks = handover_file.start_ticks(run.pid)
    if ticks is None:
        return None
    for fd in fds.values():
        if fd is not None:
            os.set_inheritable(fd, True)
    returncode = transport.get_returncode()
    if isinstance(transport, ClonedProcess) and returncode is None:
        subreaper.SPAWNED.discard(run.pid)  # the next image adds it back (a new set)
    return HandedProcess(pid=run.pid, start_ticks=ticks, create_time=run.create_time, stdin_fd=fds[0],
                         stdin_pending=pending.hex(), stdout_fd=fds[1], stderr_fd=fds[2], returncode=returncode,
                         cgroup=run.cgroup, cleanup=list(run.final.cleanup), leftovers=list(run.final.leftovers))


def take_back(handed: HandedProcess) -> None:
    """The exec failed: the fds are ours alone again."""
    for fd in (handed.stdin_fd, handed.stdout_fd, handed.stderr_fd):
        if fd is not None:
            try:
                os.set_inheritable(fd, False)
            except OSError:
                pass


class AdoptedRun:
    """The Execution of a handed-over task's root in the new image: input, kill, its end."""

    def __init__(self, io: TaskIO, spec, handed: HandedProcess) -> None:
        loop = asyncio.get_running_loop()
        self.task_id, self.spec, self.loop = io.id, spec, loop
        self.pid, self.create_time, self.cgroup = handed.pid, handed.create_time, handed.cgroup
        self.returncode = handed.returncode
        self._exited: asyncio.Future = loop.create_future()
        self._drained = asyncio.Event()
        self._open: set[int] = set()
        self.ends: dict[int, ReadEnd | WriteEnd] = {}
        if handed.stdin_fd is not None:
            self.ends[0] = WriteEnd(loop, open(handed.stdin_fd, "wb", buffering=0), lambda exc: None)
            self.ends[0].write(bytes.fromhex(handed.stdin_pending))
        for n, fd in ((1, handed.stdout_fd), (2, handed.stderr_fd)):
            if fd is not None:
                self._open.add(n)
                self.ends[n] = ReadEnd(loop, open(fd, "rb", buffering=0),
                                       lambda data, n=n: io.write(STREAMS[n], data),
                                       lambda exc, n=n: self._closed(io, n))
        if not self._open:
            self._drained.set()
        self.pidfd: Optional[int] = None
        if self.returncode is None:
            subreaper.SPAWNED.add(self.pid)  # its status is ours to take, not the orphan sweeper's
            self.pidfd = os.pidfd_open(self.pid)
            loop.add_reader(self.pidfd, self._on_exit)
            self._on_exit()  # it may have ended while no image watched
        else:
            self._exited.set_result(None)

    def _closed(self, io: TaskIO, n: int) -> None:
        io.flush(STREAMS[n])
        self._open.discard(n)
        if not self._open:
            self._drained.set()

    def _on_exit(self) -> None:
        if self._exited.done():
            return
        try:
            got, status = os.waitpid(self.pid, os.WNOHANG)
            if got == 0:
                return
            self.returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            self.returncode = LOST_STATUS
        self.loop.remove_reader(self.pidfd)
        os.close(self.pidfd)
        self.pidfd = None
        subreaper.SPAWNED.discard(self.pid)
        for n in (1, 2):
            end = self.ends.get(n)
            if isinstance(end, ReadEnd):
                end.drain()
        self._exited.set_result(None)

    async def finished(self) -> int:
        """Its return code once it has ended and its pipes are read (as process._step)."""
        await asyncio.shield(self._exited)
        try:
            async with asyncio.timeout(DRAIN_S):
                await self._drained.wait()
        except TimeoutError:
            pass
        try:
            os.killpg(self.pid, 9)  # what it left in its group goes too (process._end_group)
        except (ProcessLookupError, PermissionError):
            pass
        return self.returncode if self.returncode is not None else LOST_STATUS

    def close(self) -> None:
        for end in self.ends.values():
            end.close()
        if self.pidfd is not None:  # cancelled before it ended (runner shutdown): killed by the manager
            self.loop.remove_reader(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = None

    def input_open(self) -> bool:
        stdin = self.ends.get(0)
        return stdin is not None and not stdin.is_closing()

    def write(self, data: bytes) -> None:
        stdin = self.ends.get(0)
        if stdin is not None:
            stdin.write(data)

    def close_input(self) -> None:
        stdin = self.ends.get(0)
        if stdin is not None:
            stdin.close()

    async def kill(self) -> None:
        await asyncio.to_thread(
            kill_mod.kill_tree, pgid=self.pid, root=(self.pid, self.create_time),
            runner_id=self.spec.runner_id, task_id=str(self.task_id), grace_s=self.spec.kill_grace_s)
        if self.cgroup is not None:
            from runner.system import cgroups

            await asyncio.to_thread(cgroups.kill_cgroup, self.cgroup)


async def run_adopted(executor, io: TaskIO, handed: HandedProcess) -> int:
    """ProcessExecutor.adopt: the handed-over root watched to its end (its return code), then
    what it leaves goes (its cgroup, its code file or dir, its sandbox dir: only paths inside
    the executor's task dirs)."""
    spec = executor.spec
    run = AdoptedRun(io, spec, handed)
    io.started(run)
    cg = spec.cgroup_set if run.cgroup is not None else None
    if cg is not None:
        path = run.cgroup
        io.measured_by(lambda: cg.usage(path))
    try:
        rc = await run.finished()
    finally:
        run.close()
        if cg is not None:
            await executor.end_cgroup(io, run.cgroup)
        folders = executor.task_dirs()
        for path in handed.cleanup:
            if not any(path.startswith(folder + os.sep) for folder in folders):
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass
        task_files.remove_leftovers(tuple(handed.leftovers))
    return rc
