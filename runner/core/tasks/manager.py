"""TaskManager: creates, supervises, waits on, feeds and kills tasks, per session.

Speaks neither HTTP nor the wire: it takes an ExecSpec, hands back Tasks and small
dataclasses, and refuses by kind (plugkit.refusals); runner/rpc shapes every answer.
"""

import asyncio
import os
from dataclasses import replace
from typing import Awaitable, Callable, Optional

from plugkit.config import Limits
from plugkit.refusals import Conflict, Invalid, Unavailable
from plugkit.workspace import root_or_none
from runner.core.tasks.adopted import AdoptedOrphans
from runner.core.tasks.handover import TaskHandover
from runner.core.tasks.hosts import HostFinder, HostTies
from runner.core.tasks.clock import Clock, LoopClock
from runner.core.tasks.output import OutputBuffer, ReadResult
from runner.core.tasks.waiting import Waited, wait_for
from runner.core.tasks.listing import TaskListing, first_line, usage_fields
from runner.core.tasks.records import IdSource, code_hash, to_record
from runner.core.tasks.sessions import Session, SessionRegistry, session_key, session_key_at
from runner.core.tasks.slots import Slots
from runner.core.tasks.task import Execution, SessionKey, Task, TaskPort
# ExecSpec is this manager's input: runner/rpc names it from here, never from the executors.
from runner.executors.base import NOT_LOOKED_UP, ExecSpec, Executor, Outcome
from runner.system import logs
from runner.system.ledger import TaskRecord
from runner.system.ledger_worker import LedgerWorker
from runner.system.spool import Spool

# Executors whose tasks are OS process trees (a worker is an agent host run as a process):
# orphans adopted while they run are held to them in tags mode.
SPAWNS_PROCESSES = frozenset({"process", "worker"})
log = logs.get("plugkit.tasks")

# Finished tasks kept per session for status/output; older ones are forgotten first.
KEEP_FINISHED = 256
# How long task.input waits for a task still starting (a compile step, say) to have its process.
INPUT_START_WAIT_S = 30.0


class TaskManager(TaskListing, TaskHandover):
    def __init__(self, executors: list[Executor], limits: Limits, first_id: int = 1,
                 registry: SessionRegistry | None = None, ledger: LedgerWorker | None = None,
                 clock: Clock | None = None, hosts: HostFinder | None = None) -> None:
        self.executors = executors  # first claimant wins; the process executor claims the rest
        self.limits = limits
        self.clock: Clock = clock or LoopClock()
        self._registry = registry if registry is not None else SessionRegistry(self.clock.monotonic)
        self._ledger = ledger
        self._ids = IdSource(ledger, first_id)
        self._supervisors: set[asyncio.Task] = set()
        self._pending_end: dict[int, tuple[str, str]] = {}
        self._stopping = False  # the runner was told to stop: a task a signal ends now was killed with it
        self._live: set[Task] = set()  # not yet finished: kept apart so counting is O(1)
        self._slots = Slots(limits)  # live tasks plus execs not yet past prepare (see slots.py)
        self.finished_counts: dict[str, int] = {}
        self.spool_dir: Optional[str] = None  # where running tasks' output is also written (crash copy)
        self.adopted = AdoptedOrphans()  # orphans held to the process tasks that ran when they were adopted
        self.hosts = HostTies(hosts)
        self._waits: set = set()  # see handover.py: _waiting

    # --- queries -------------------------------------------------------------

    def running(self) -> list[Task]:
        return list(self._live)

    def managed_pids(self) -> set[int]:
        return {t.pid for t in self.running() if t.pid}

    def counts(self) -> dict[str, int]:
        sessions = self._registry.sessions()
        return {"sessions": len(sessions), "tasks": sum(len(s.tasks) for s in sessions),
                "running": len(self._live)}

    def sessions(self) -> list[Session]:
        return self._registry.sessions()

    def all_tasks(self) -> list[Task]:
        return self._registry.all_tasks()

    def snapshot(self) -> dict:
        """What /debug shows: every session (idle time, task ids) and every task held in memory."""
        now, wall = self.clock.monotonic(), self.clock.time()
        return {
            "sessions": [{"session_id": s.key.session_id, "root": s.key.root,
                          "idle_s": round(now - s.last_activity, 3), "tasks": sorted(s.tasks)}
                         for s in self._registry.sessions()],
            "tasks": [{"task_id": t.id, "session_id": t.session.session_id, "lang": t.lang, "state": t.state,
                       "pid": t.pid, "age_s": round(wall - t.started_at, 3), "bytes_out": t.bytes_out,
                       "duration_ms": t.duration_ms, "exit_code": t.exit_code, "signal": t.signal,
                       "name": t.name, "command": t.command, "detached": t.detached, **usage_fields(t),
                       "dropped": t.buffer.dropped} for t in self._registry.all_tasks()],
            "slots": {"taken": self._slots.taken, "limit": self.limits.running_tasks},
        }

    def open_session(self, session_id: str, cwd: str) -> SessionKey:
        """Register a session before its first task (hook.session_start), so idle expiry sees it."""
        return self._registry.open(session_key(session_id, cwd)).key

    def task(self, session_id: str, cwd: str, task_id: int) -> Task:
        return self._registry.task(session_key(session_id, cwd), task_id)

    @property
    def durable(self) -> bool:
        """Whether tasks are recorded in a ledger (a runner always; unit tests may run without)."""
        return self._ledger is not None

    async def record(self, task_id: int) -> Optional[TaskRecord]:
        """A task's durable record by id, any session (None: unknown, or no ledger)."""
        return await self._ledger.get(task_id) if self._ledger is not None else None

    async def code_sha256(self, task: Task) -> Optional[str]:
        """The hash of the code a task ran (kept in its ledger record, written at start)."""
        rec = await self.record(task.id)
        return rec.code_sha256 if rec is not None else None

    # --- exec ------------------------------------------------------------------

    async def exec(self, spec: ExecSpec) -> Task:
        """Start a task; returns at once (wait_done / wait follow it)."""
        if self.restarting:  # between the restart's answer and the exec: the next image takes it
            raise Unavailable("the runner is restarting in place; run it again in a second", {"restarting": True})
        cwd = os.path.realpath(spec.cwd)
        if not os.path.isdir(cwd):
            raise Invalid(f"cwd {spec.cwd!r} does not exist or is not a directory")
        if not spec.code.strip():
            raise Invalid("code is empty; pass the code to run")
        workspace = root_or_none(cwd) if spec.workspace == NOT_LOOKED_UP else spec.workspace
        key = session_key_at(spec.session_id, cwd, workspace)
        spec = replace(spec, cwd=cwd, root=key.root, workspace=workspace)  # executors run it where the caller is
        host = await self.hosts.find(self._registry.peek(key), spec.peer, spec.caller_pid)
        executor = next(e for e in self.executors if e.claims(spec.lang))
        self._slots.take(key)  # before the first await: see slots.py
        try:
            task_id = await self._ids.next()
            prepared = await executor.prepare(spec)
        except BaseException:
            self._slots.give(key)
            raise
        # No await between prepare returning and the task existing: what prepare opened
        # (a serial port, a browser page) is always owned by a task at once.
        session = self._registry.open(key)
        self.hosts.tie(session, host)
        task = Task(id=task_id, session=key, cwd=cwd, detached=spec.detach, lang=prepared.lang,
                    name=spec.name, command=first_line(spec.code),
                    started_at=self.clock.time(),
                    buffer=OutputBuffer(self.limits.output_cap_bytes,
                                        spool=Spool(self.spool_dir, task_id) if self.spool_dir else None))
        session.tasks[task.id] = task
        self._live.add(task)
        if executor.name in SPAWNS_PROCESSES:
            # Held from before the spawn: an orphan can be adopted before the task learns its pid.
            self.adopted.task_started(task.id)
        task.digest = digest = code_hash(spec.code)
        task.deadline = task.started_at + spec.timeout_s
        if self._ledger is not None:
            self._ledger.record_start(to_record(task, digest))
        self._registry.trim_finished(session, KEEP_FINISHED)
        self._start_supervisor(task, lambda port: executor.run(port, prepared, spec), spec.timeout_s, digest)
        log.info_later("task_started", task_id=task.id, session_id=key.session_id, cwd=cwd, lang=task.lang)
        return task

    def _start_supervisor(self, task: Task, run: Callable[[TaskPort], Awaitable[Outcome]],
                          timeout_s: Optional[float], digest: str) -> None:
        supervisor = asyncio.create_task(self._supervise(task, run, timeout_s, digest), name=f"task_{task.id}")
        self._supervisors.add(supervisor)
        supervisor.add_done_callback(self._supervisors.discard)

    async def _supervise(self, task: Task, run: Callable[[TaskPort], Awaitable[Outcome]],
                         timeout_s: Optional[float], digest: str) -> None:
        """run: the executor's run (or adopt) of this task, to its Outcome."""
        timer = self.clock.call_later(timeout_s, lambda: self._request_end(task, "timed_out", "timeout")) \
            if timeout_s is not None else None
        ending: tuple[str, str, dict] = ("failed", "spawn_failed", {})
        try:
            outcome = await run(TaskPort(task, lambda run: self._started(task, run)))
            ending = self._ending(task, outcome)
        except asyncio.CancelledError:
            ending = ("killed", "runner_shutdown", {})
            raise
        except OSError as exc:
            ending = ("failed", "spawn_failed", {"message": f"task_{task.id} could not start: {exc.strerror or exc}"})
        except Exception:
            log.exception("task_supervisor_error", task_id=task.id)
        finally:
            if timer is not None:
                timer.cancel()
            # Output first, then the end: a waiter woken by the end reads every byte.
            task.buffer.flush("stdout")
            task.buffer.flush("stderr")
            state, reason, extra = ending
            task.finish(state, reason, now=self.clock.time(), **extra)
            self._live.discard(task)
            self.adopted.task_ended(task.id)
            self._slots.give(task.session)
            self._pending_end.pop(task.id, None)
            self.finished_counts[task.state] = self.finished_counts.get(task.state, 0) + 1
            self._registry.finished(task)  # past the global cap, the oldest finished leave memory
            spool = task.buffer.spool
            if spool is not None:
                spool.close()
            if self._ledger is not None:
                # Removed on the ledger's thread after the record: a crash between the two still
                # finds the output in one place or the other.
                self._ledger.record_end(to_record(task, digest), then=spool.remove if spool else None)
            elif spool is not None:
                spool.remove()
            log.info_later("task_ended", task_id=task.id, session_id=task.session.session_id, state=task.state,
                       reason=task.reason, exit_code=task.exit_code, signal=task.signal)

    def _started(self, task: Task, run: Execution) -> None:
        task.execution, task.pid = run, getattr(run, "pid", None)
        if task.state == "pending":
            task.state = "running"
            task.notify()
        if task.id in self._pending_end:  # killed while a step was starting
            asyncio.ensure_future(run.kill())

    def _ending(self, task: Task, outcome: Outcome) -> tuple[str, str, dict]:
        intent = self._pending_end.get(task.id)
        if intent:  # a kill or timeout we asked for wins over how the process happened to end
            return (*intent, {"exit_code": outcome.exit_code, "signal": outcome.signal})
        if self._stopping and outcome.signal is not None:  # `kill-port` signals the runner's tree at once
            return ("killed", "runner_shutdown", {"exit_code": outcome.exit_code, "signal": outcome.signal})
        return (outcome.state, outcome.reason,
                {"exit_code": outcome.exit_code, "signal": outcome.signal, "message": outcome.message})

    def _request_end(self, task: Task, state: str, reason: str) -> Optional[asyncio.Future]:
        """Kill a task's tree and record why; the supervisor finishes it when the root is gone.
        The first intent wins: a kill after a timeout (or a second kill) changes nothing."""
        if task.finished or task.id in self._pending_end:
            return None
        self._pending_end[task.id] = (state, reason)
        if reason == "timeout":
            task.buffer.write_text("info", f"\n[plugkit] task_{task.id} timed out; killing its process tree\n")
            task.notify()
        if task.execution is None:
            return None
        return asyncio.ensure_future(task.execution.kill())

    async def end(self, task: Task, state: str = "killed", reason: str = "killed") -> None:
        kill = self._request_end(task, state, reason)
        if kill is not None:
            await kill
        await task.done.wait()

    # --- reading and waiting -------------------------------------------------

    async def wait_done(self, task: Task, timeout_s: float) -> None:
        """Until the task ends or timeout_s passes, whichever is first (never an error)."""
        if timeout_s > 0 and not task.finished:
            try:
                async with self._waiting(timeout_s):  # not wait_for: no task of its own, no extra loop pass
                    await task.done.wait()
            except TimeoutError:
                pass

    def read(self, task: Task, cursor: Optional[int], max_bytes: int) -> ReadResult:
        """From cursor; without one, what this session has not read yet (and marks it read)."""
        keep = cursor is None
        res = task.buffer.read(task.read_cursor if keep else cursor, max_bytes)
        if keep:
            self.mark_read(task, res.cursor)
        return res

    def mark_read(self, task: Task, cursor: int) -> None:
        """The session has seen the output up to cursor: in memory, and in the ledger, so a
        restarted runner's next "what is new" does not repeat it."""
        if cursor <= task.read_cursor:
            return
        task.read_cursor = cursor
        if self._ledger is not None:
            self._ledger.record_read(task.id, task.bytes_out_before + cursor)

    async def wait(self, task: Task, timeout_s: float, until_text: Optional[str],
                   until_regex: Optional[str], cursor: Optional[int]) -> Waited:
        try:
            async with self._waiting(timeout_s + 1):  # the restart's cut; wait_for keeps its own time
                return await wait_for(task, timeout_s, until_text, until_regex, cursor)
        except TimeoutError:
            return Waited(matched=False, match_cursor=None, timed_out=True)

    async def write_input(self, task: Task, data: str, eof: bool) -> None:
        # A task answered with wait 0 may still be starting (its code file, a compile step): the
        # input is for it all the same, so wait for its process rather than refuse.
        deadline = asyncio.get_running_loop().time() + INPUT_START_WAIT_S
        while task.execution is None and not task.finished:
            wake = task.changed()
            if task.execution is not None or task.finished:
                break
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise Conflict(f"task_{task.id} has not started after {INPUT_START_WAIT_S:.0f} s; "
                               f"`plugkit exec:status task_{task.id}` says where it is")
            try:
                await asyncio.wait_for(wake.wait(), remaining)
            except asyncio.TimeoutError:
                pass
        run = task.execution
        if task.finished or run is None:
            raise Conflict(f"task_{task.id} is {task.state}; it takes no more input")
        if not run.input_open():
            raise Conflict(f"task_{task.id}'s stdin is already closed (eof was sent)")
        if data:
            run.write(data.encode())
        if eof:
            run.close_input()

    # --- ending ------------------------------------------------------------------

    async def kill(self, task: Task, forget: bool) -> None:
        # An execution whose kill is its normal ending (closing a serial port) says how
        # that ends, e.g. ("completed", "closed"); timeouts and session ends stay kills.
        await self.end(task, *getattr(task.execution, "kill_ends_as", ("killed", "killed")))
        if forget:
            self._registry.forget_task(task)
            if self._ledger is not None:
                self._ledger.forget([task.id])

    async def end_session(self, session_id: str, cwd: str) -> list[int]:
        """Kill the session's running tasks, release what executors hold for it, forget it;
        returns the ids killed (an unknown session ends with none)."""
        session = self._registry.find(session_key(session_id, cwd)) if session_id else None
        return await self._end_session(session, "session_end") if session is not None else []

    async def end_gone_hosts(self) -> list[int]:
        """End the sessions whose agent host exited (the sweep calls it), their tasks still listed."""
        killed: list[int] = []
        for session in await self.hosts.gone(self._registry.sessions()):
            killed += await self._end_session(session, "host_gone", forget=False)
        return killed

    async def _end_session(self, session: Session, reason: str, forget: bool = True) -> list[int]:
        """Kill the session's tasks but the detached ones, which keep the session and what its
        executors hold for them; else those go (and with forget, the session and its records)."""
        key = session.key
        live = [t for t in session.tasks.values() if not t.finished and not t.detached]
        await asyncio.gather(*(self.end(t, "killed", reason) for t in live))
        session.host = None  # ended: what still runs is detached
        kept = {i: t for i, t in session.tasks.items() if not t.finished}
        for executor in self.executors if not kept else ():
            await executor.end_session(key)
        if forget:
            if not kept:
                self._registry.close(key)
            gone, session.tasks = sorted(set(session.tasks) - set(kept)), kept
            self._registry.kept.discard(gone)
            if self._ledger is not None:
                self._ledger.forget(gone)
        log.info("session_ended", session_id=key.session_id, root=key.root, reason=reason,
                 killed=[t.id for t in live], kept=sorted(kept))
        return [t.id for t in live]

    def expire_idle(self) -> list[SessionKey]:
        """End sessions idle past the limit that run nothing (their records go with them)."""
        ended = [s.key for s in self._registry.idle(self.limits.session_idle_s)]
        for key in ended:
            session = self._registry.close(key)
            if session is not None and self._ledger is not None:  # else a listing brings them back
                self._ledger.forget(sorted(session.tasks))
            log.info("session_expired", session_id=key.session_id, root=key.root)
        return ended

    def stopping(self) -> None:
        """The runner was told to stop (its signal handler, before any await): a task a signal
        ends from now on was killed with the runner, whoever's signal reached it first."""
        self._stopping = True

    async def shutdown(self) -> None:
        self._stopping = True
        live = self.running()
        await asyncio.gather(*(self.end(t, "killed", "runner_shutdown") for t in live),
                             return_exceptions=True)
        for sup in list(self._supervisors):
            sup.cancel()
        await asyncio.gather(*self._supervisors, return_exceptions=True)
        for executor in self.executors:
            try:
                await executor.close()
            except Exception:  # one executor's failure must not keep the others open
                log.exception("executor_close_failed", executor=executor.name)
        await self._ids.release()

