"""TaskManager: creates, supervises, waits on, feeds and kills tasks, per session.

Never imports aiohttp: the RPC layer calls these methods and shapes nothing.
"""

import asyncio
import os
from typing import Optional

from plugkit import errors
from plugkit.config import Limits
from plugkit.patterns import BadPattern, compile_client_pattern
from plugkit.protocol import (Chunk, Output, SessionEnded, TaskExecParams, TaskInfo,
                              TaskList, TaskResult, WaitResult)
from runner.system import logs
from runner.core.tasks.output import OutputBuffer
from runner.core.tasks.records import IdSource, code_hash, rehydrate, to_record
from runner.core.tasks.sessions import SessionRegistry, not_found, session_key
from runner.core.tasks.task import Execution, SessionKey, Task
from runner.executors.base import Executor, Outcome, Prepared
from runner.system.ledger import LedgerWorker

log = logs.get("plugkit.tasks")

# Finished tasks kept per session for status/output; older ones are forgotten first.
KEEP_FINISHED = 256


class TaskManager:
    def __init__(self, executors: list[Executor], limits: Limits, first_id: int = 1,
                 registry: SessionRegistry | None = None, ledger: LedgerWorker | None = None) -> None:
        self.executors = executors  # first claimant wins; the process executor claims the rest
        self.limits = limits
        self.registry = registry if registry is not None else SessionRegistry()
        self.ledger = ledger
        self._ids = IdSource(ledger, first_id)
        self._supervisors: set[asyncio.Task] = set()
        self._pending_end: dict[int, tuple[str, str]] = {}
        self._live: set[Task] = set()  # not yet finished: kept apart so counting is O(1)
        self.finished_counts: dict[str, int] = {}

    # --- queries -------------------------------------------------------------

    def running(self) -> list[Task]:
        return list(self._live)

    def managed_pids(self) -> set[int]:
        return {t.pid for t in self.running() if t.pid}

    def counts(self) -> dict[str, int]:
        return {"sessions": len(self.registry), "tasks": sum(len(s.tasks) for s in self.registry.sessions()),
                "running": len(self._live)}

    def task(self, session_id: str, cwd: str, task_id: int) -> Task:
        return self.registry.task(session_key(session_id, cwd), task_id)

    async def lookup(self, session_id: str, cwd: str, task_id: int) -> Task:
        """A task of this session from memory, else from the ledger (after a restart, or
        trimmed from memory); the same not-found either way for anyone else's id."""
        key = session_key(session_id, cwd)
        try:
            return self.registry.task(key, task_id)
        except errors.RpcError:
            if self.ledger is None or not session_id:
                raise
        rec = await self.ledger.call("get", task_id)
        if rec is None or (rec.session_id, rec.cwd) != (key.session_id, key.cwd):
            raise not_found(task_id)
        task = rehydrate(rec)
        self.registry.open(key).tasks.setdefault(task.id, task)
        return self.registry.task(key, task_id)

    # --- exec ------------------------------------------------------------------

    async def exec(self, p: TaskExecParams) -> TaskResult:
        key = _checked_session(p.session_id, p.cwd)
        if not p.code.strip():
            raise errors.RpcError(errors.INVALID_PARAMS, "code is empty; pass the code to run")
        executor = next(e for e in self.executors if e.claims(p.lang))
        self._check_limits(key)
        task_id = await self._ids.next()
        # No await between prepare returning and the task existing: what prepare opened
        # (a serial port, a browser page) is always owned by a task at once.
        prepared = await executor.prepare(p)
        session = self.registry.open(key)
        task = Task(id=task_id, session=key, lang=prepared.lang,
                    buffer=OutputBuffer(self.limits.output_cap_bytes))
        session.tasks[task.id] = task
        self._live.add(task)
        digest = code_hash(p.code)
        if self.ledger is not None:
            self.ledger.submit("record_start", to_record(task, digest))
        self._trim_finished(session.tasks)
        supervisor = asyncio.create_task(self._supervise(task, executor, prepared, p, digest), name=f"task_{task.id}")
        self._supervisors.add(supervisor)
        supervisor.add_done_callback(self._supervisors.discard)
        log.info("task_started", task_id=task.id, session_id=key.session_id, cwd=key.cwd, lang=task.lang)
        if p.wait_ms:
            try:
                await asyncio.wait_for(task.done.wait(), p.wait_ms / 1000)
            except asyncio.TimeoutError:
                pass
        output = self._read(task, None, p.max_bytes)
        return TaskResult(task=task.info(), output=output)

    def _check_limits(self, key: SessionKey) -> None:
        running = self._live
        mine = sum(1 for t in running if t.session == key)
        if mine >= self.limits.tasks_per_session:
            raise errors.RpcError(errors.LIMIT, f"this session already runs {mine} tasks (limit "
                                  f"{self.limits.tasks_per_session}); close some with plugkit exec:close")
        if len(running) >= self.limits.running_tasks:
            raise errors.RpcError(errors.LIMIT, f"the runner already runs {len(running)} tasks (limit "
                                  f"{self.limits.running_tasks}); wait for some to finish")

    def _trim_finished(self, tasks: dict[int, Task]) -> None:
        finished = [t for t in tasks.values() if t.finished]
        for old in finished[:max(0, len(finished) - KEEP_FINISHED)]:
            tasks.pop(old.id, None)

    async def _supervise(self, task: Task, executor: Executor, prepared: Prepared, p: TaskExecParams,
                         digest: str) -> None:
        loop = asyncio.get_running_loop()
        timer = loop.call_later(p.timeout_ms / 1000, self._request_end, task, "timed_out", "timeout")

        def started(run: Execution) -> None:
            task.execution, task.pid = run, getattr(run, "pid", None)
            if task.state == "pending":
                task.state = "running"
                task.notify()
            if task.id in self._pending_end:  # killed while a step was starting
                asyncio.ensure_future(run.kill())

        try:
            self._finish(task, await executor.run(task, prepared, p, started))
        except asyncio.CancelledError:
            task.finish("killed", "runner_shutdown")
            raise
        except OSError as exc:
            task.finish("failed", "spawn_failed", message=f"task_{task.id} could not start: {exc.strerror or exc}")
        except Exception:
            log.exception("task_supervisor_error", task_id=task.id)
            task.finish("failed", "spawn_failed")
        finally:
            timer.cancel()
            self._live.discard(task)
            self._pending_end.pop(task.id, None)
            task.buffer.flush("stdout")
            task.buffer.flush("stderr")
            self.finished_counts[task.state] = self.finished_counts.get(task.state, 0) + 1
            if self.ledger is not None:
                self.ledger.submit("record_end", to_record(task, digest))
            log.info("task_ended", task_id=task.id, session_id=task.session.session_id, state=task.state,
                     reason=task.reason, exit_code=task.exit_code, signal=task.signal)

    def _finish(self, task: Task, outcome: Outcome) -> None:
        intent = self._pending_end.get(task.id)
        if intent:  # a kill or timeout we asked for wins over how the process happened to end
            state, reason = intent
            task.finish(state, reason, exit_code=outcome.exit_code, signal=outcome.signal)
        else:
            task.finish(outcome.state, outcome.reason, exit_code=outcome.exit_code,
                        signal=outcome.signal, message=outcome.message)

    def _request_end(self, task: Task, state: str, reason: str) -> Optional[asyncio.Future]:
        """Kill a task's tree and record why; the supervisor finishes it when the root is gone."""
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

    def _read(self, task: Task, cursor: Optional[int], max_bytes: int) -> Output:
        keep = cursor is None
        res = task.buffer.read(task.read_cursor if keep else cursor, max_bytes)
        if keep:
            task.read_cursor = res.cursor
        return Output(chunks=[Chunk(stream=s, text=t) for s, t in res.chunks],
                      cursor=res.cursor, dropped=res.dropped, more=res.more)

    def output(self, task: Task, cursor: Optional[int], max_bytes: int) -> Output:
        return self._read(task, cursor, max_bytes)

    async def wait(self, task: Task, timeout_ms: int, until_text: Optional[str],
                   until_regex: Optional[str], cursor: Optional[int]) -> WaitResult:
        if until_text and until_regex:
            raise errors.RpcError(errors.INVALID_PARAMS, "give until_text or until_regex, not both")
        try:
            pattern = compile_client_pattern(until_regex) if until_regex else None
        except BadPattern as exc:
            raise errors.RpcError(errors.INVALID_PARAMS, f"until_regex: {exc}") from None
        start = task.read_cursor if cursor is None else cursor
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        while True:
            wake = task.changed()
            hit = None
            if until_text:
                hit = task.buffer.find(until_text, start)
            elif pattern is not None:
                hit = task.buffer.find_regex(pattern, start)
            if hit is not None or task.finished:
                return WaitResult(task=task.info(), matched=hit is not None, match_cursor=hit, timed_out=False)
            remaining = deadline - loop.time()
            if remaining <= 0:
                return WaitResult(task=task.info(), matched=False, timed_out=True)
            try:
                await asyncio.wait_for(wake.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def write_input(self, task: Task, data: str, eof: bool) -> TaskInfo:
        run = task.execution
        if task.finished or run is None:
            raise errors.RpcError(errors.CONFLICT, f"task_{task.id} is {task.state}; it takes no more input")
        if not run.input_open():
            raise errors.RpcError(errors.CONFLICT, f"task_{task.id}'s stdin is already closed (eof was sent)")
        if data:
            run.write(data.encode())
        if eof:
            run.close_input()
        return task.info()

    # --- ending ------------------------------------------------------------------

    async def kill(self, task: Task, forget: bool) -> TaskInfo:
        # An execution whose kill is its normal ending (closing a serial port) says how
        # that ends, e.g. ("completed", "closed"); timeouts and session ends stay kills.
        await self.end(task, *getattr(task.execution, "kill_ends_as", ("killed", "killed")))
        if forget:
            self.registry.forget_task(task)
            if self.ledger is not None:
                self.ledger.submit("forget", [task.id])
        return task.info()

    def list_tasks(self, session_id: str, cwd: str) -> TaskList:
        session = self.registry.find(session_key(session_id, cwd)) if session_id else None
        return TaskList(tasks=[t.info() for t in (session.tasks.values() if session else ())])

    async def end_session(self, session_id: str, cwd: str) -> SessionEnded:
        key = session_key(session_id, cwd)
        session = self.registry.find(key) if session_id else None
        if session is None:
            return SessionEnded(killed=[])
        live = [t for t in session.tasks.values() if not t.finished]
        await asyncio.gather(*(self.end(t, "killed", "session_end") for t in live))
        for executor in self.executors:
            await executor.end_session(key)
        self.registry.close(key)
        if self.ledger is not None:
            self.ledger.submit("forget", sorted(session.tasks))
        log.info("session_ended", session_id=session_id, cwd=key.cwd, killed=[t.id for t in live])
        return SessionEnded(killed=[t.id for t in live])

    def expire_idle(self) -> list[SessionKey]:
        """End sessions idle past the limit that run nothing (their records go with them)."""
        ended = [s.key for s in self.registry.idle(self.limits.session_idle_s)]
        for key in ended:
            self.registry.close(key)
            log.info("session_expired", session_id=key.session_id, cwd=key.cwd)
        return ended

    async def shutdown(self) -> None:
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


def _checked_session(session_id: str, cwd: str) -> SessionKey:
    key = session_key(session_id, cwd)
    if not os.path.isdir(key.cwd):
        raise errors.RpcError(errors.INVALID_PARAMS, f"cwd {cwd!r} does not exist or is not a directory")
    return key
