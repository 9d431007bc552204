"""The task table across the runner's in-place restart: what the old image hands over, what the new adopts.

A mixin over the TaskManager. prepare_handover (awaits) ends what cannot cross an exec (a
browser page, a serial port, a worker, a task still compiling after a short wait); hand_over
(no await: the exec follows in the same turn of the loop) turns each running process task into
a HandedTask; adopt rebuilds them in the new image with their output, read cursor and deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Optional

from plugkit.config import Limits
from plugkit.vocab import RUNNING
from runner.core.tasks.adopted import AdoptedOrphans
from runner.core.tasks.clock import Clock
from runner.core.tasks.output import OutputBuffer
from runner.core.tasks.sessions import SessionRegistry
from runner.core.tasks.slots import Slots
from runner.core.tasks.task import SessionKey, Task
from runner.system import handover as handover_file
from runner.system.handover import HandedOutput, HandedTask
from runner.system.ledger_worker import LedgerWorker
from runner.system.spool import Spool

# How long a restart waits for a task between steps (compiling, starting) to reach its last
# step, which can be handed over; past it the task is ended and named in the restart's answer.
SETTLE_S = 5.0
REASON = "runner_restart"


@dataclass(frozen=True)
class Cut:
    """A task the restart could not keep: `task_7 (browser)`."""

    task_id: int
    lang: str

    def __str__(self) -> str:
        return f"task_{self.task_id} ({self.lang})"


def _handable(task: Task) -> bool:
    return task.execution is not None and getattr(task.execution, "final", None) is not None


class TaskHandover:
    """Mixed into the TaskManager, whose parts it uses (named here, as recall.py does)."""

    restarting: bool = False  # set from prepare_handover until the exec (or its failure)
    executors: list
    limits: Limits
    clock: Clock
    spool_dir: Optional[str]
    adopted: AdoptedOrphans
    _registry: SessionRegistry
    _ledger: Optional[LedgerWorker]
    _live: set
    _slots: Slots
    running: Callable[[], list]
    end: Callable
    _start_supervisor: Callable
    _waits: set  # the timeouts of waits in progress

    async def prepare_handover(self, settle_s: float = SETTLE_S) -> list[Cut]:
        """Refuse new execs, end every task that cannot be handed over (a process task between
        steps gets settle_s to reach its last one) and close the executors that hold what no
        exec keeps (Chromium, serial ports). Returns what was ended."""
        self.restarting = True
        self.end_waits()
        spawners = {e.name for e in self.executors if getattr(e, "name", "") == "process"}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settle_s
        cut: list[Cut] = []
        while True:
            stuck = [t for t in self.running() if not _handable(t)]
            waiting = [t for t in stuck if self._executor_of(t) in spawners and loop.time() < deadline]
            ending = [t for t in stuck if t not in waiting]
            if ending:
                await asyncio.gather(*(self.end(t, "killed", REASON) for t in ending), return_exceptions=True)
                cut += [Cut(t.id, t.lang) for t in ending]
            if not waiting:
                break
            wakes = [asyncio.ensure_future(t.changed().wait()) for t in waiting]
            await asyncio.wait(wakes, timeout=max(0.0, deadline - loop.time()), return_when=asyncio.FIRST_COMPLETED)
            for wake in wakes:
                wake.cancel()
        for executor in self.executors:
            if executor.name not in ("process", "worker"):
                try:
                    await executor.close()
                except Exception:  # one executor's failure must not stop the restart
                    pass
        return cut

    @contextlib.asynccontextmanager
    async def _waiting(self, seconds: float) -> AsyncIterator[None]:
        """A request's wait on a task (task.wait, exec's wait_ms). A restart in place cuts the
        ones under way short (end_waits), so their answers leave before the exec closes the
        connections; one begun since is left to the exec (the client asks the new image again)."""
        async with asyncio.timeout(seconds) as cut:
            if self.restarting:
                yield
                return
            self._waits.add(cut)
            try:
                yield
            finally:
                self._waits.discard(cut)

    def end_waits(self) -> None:
        now = asyncio.get_running_loop().time()
        for cut in list(self._waits):
            cut.reschedule(now)

    def waits_cut(self) -> int:
        """The waits end_waits cut that have not answered yet."""
        return len(self._waits)

    def _executor_of(self, task: Task) -> str:
        return next((e.name for e in self.executors if e.claims(task.lang)), "")

    def hand_over(self) -> tuple[list[HandedTask], list[Cut]]:
        """Every running task as the next image needs it; one that raced in since
        prepare_handover and cannot be handed over is killed here (the next image records it
        lost). No await: nothing may run between this and the exec."""
        handed: list[HandedTask] = []
        cut: list[Cut] = []
        for task in sorted(self.running(), key=lambda t: t.id):
            run = task.execution
            proc = run.hand_over() if run is not None and hasattr(run, "hand_over") and not task.finished else None
            if proc is None:
                if task.pid:
                    try:
                        os.killpg(task.pid, signal.SIGKILL)
                    except OSError:
                        pass
                cut.append(Cut(task.id, task.lang))
                continue
            spool = task.buffer.spool
            if spool is not None:
                spool.flush()
            start, chunks, pending = task.buffer.dump()
            output = HandedOutput(start=start, chunks=chunks, pending={k: v.hex() for k, v in pending.items()},
                                  spooled=spool is not None and spool.total == task.buffer.end)
            handed.append(HandedTask(
                id=task.id, session_id=task.session.session_id, root=task.session.root, cwd=task.cwd,
                lang=task.lang, name=task.name, command=task.command, detached=task.detached,
                started_at=task.started_at, deadline=task.deadline, digest=task.digest,
                read_cursor=task.read_cursor, bytes_out_before=task.bytes_out_before, output=output, process=proc))
        if self._ledger is not None:
            self._ledger.quiesce()  # every record committed before the exec: the journal's name is the pid's
        return handed, cut

    def adopt(self, handed: list[HandedTask],
              log: Callable[..., None]) -> list[int]:
        """The tasks the previous image handed over, running again here; returns their ids. One
        whose process is not our child as recorded, or whose fds are not pipes, is refused:
        its fds are closed and what is still ours of it is killed (the ledger calls it lost)."""
        executor = next((e for e in self.executors if e.name == "process"), None)
        kept: list[int] = []
        for h in handed:
            p = h.process
            fds_ok = all(handover_file.is_pipe(fd) for fd in (p.stdin_fd, p.stdout_fd, p.stderr_fd) if fd is not None)
            if executor is None or not fds_ok or not handover_file.own_child(p.pid, p.start_ticks):
                log("handover_task_refused", task_id=h.id, pid=p.pid,
                    why="no process executor" if executor is None else
                    ("not a pipe" if not fds_ok else "not our child as recorded"))
                handover_file.close_task_fds(h.process)
                if handover_file.own_child(p.pid, p.start_ticks):
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except OSError:
                        pass
                continue
            self._adopt_one(h, executor)
            kept.append(h.id)
        return kept

    def _adopt_one(self, h: HandedTask, executor) -> None:
        out = h.output
        end = out.start + sum(len(text.encode("utf-8", "replace")) for _, text in out.chunks)
        spool = Spool(self.spool_dir, h.id, total=end) if self.spool_dir and out.spooled else None
        buffer = OutputBuffer.restored(self.limits.output_cap_bytes, out.start, list(out.chunks),
                                       {k: bytes.fromhex(v) for k, v in out.pending.items()}, spool)
        key = SessionKey(h.session_id, h.root)
        task = Task(id=h.id, session=key, cwd=h.cwd, detached=h.detached, lang=h.lang, name=h.name,
                    command=h.command, started_at=h.started_at, buffer=buffer, state=RUNNING, pid=h.process.pid,
                    deadline=h.deadline, digest=h.digest, read_cursor=h.read_cursor,
                    bytes_out_before=h.bytes_out_before)
        session = self._registry.open(key)
        session.tasks[task.id] = task
        self._live.add(task)
        self._slots.hold(key)
        self.adopted.task_started(task.id)
        if self._ledger is not None and task.read_cursor:  # a read the old image had not written yet
            self._ledger.record_read(task.id, task.bytes_out_before + task.read_cursor)
        timeout_s = max(0.0, h.deadline - self.clock.time()) if h.deadline is not None else None
        self._start_supervisor(task, lambda port: executor.adopt(port, h.process), timeout_s, h.digest)

    def restart_failed(self, handed: list[HandedTask]) -> None:
        """The exec did not happen: the fds are ours alone again and execs are taken again."""
        from runner.executors.process_adopt import take_back  # the executor's half of hand_over

        for h in handed:
            take_back(h.process)
        if self._ledger is not None:
            self._ledger.resume()
        self.restarting = False
