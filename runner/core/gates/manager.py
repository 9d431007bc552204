"""GateManager: the lifecycle gates of every workspace, witnessed through the TaskManager.

The model (plugkit.lifecycle) is synchronous file I/O under a file lock; this manager
runs it in worker threads, one operation per workspace at a time in this process (the
file lock covers other processes), and supplies what only the runner can witness:
which tasks run in a workspace, what a finished task printed, git's view, and the
verify command run as a real task. Never imports aiohttp.
"""

import asyncio
import os
import time
import weakref
from collections import Counter
from typing import Any, Callable, Optional, TypeVar

from plugkit.lifecycle import config as config_mod, gating, hooks, state as state_mod
from plugkit.lifecycle.config import GateConfig
from plugkit.lifecycle.errors import GateError
from plugkit.refusals import Conflict, Invalid, NotFound
from plugkit.lifecycle.evidence import sha256_bytes
from plugkit.lifecycle.gating import External
from plugkit.lifecycle.phases import GitFacts
from plugkit.lifecycle.policy import Verdict
from plugkit.lifecycle.state import State, VerifyRun
from plugkit.lifecycle.workspace import Workspace
from plugkit.workspace import NotAWorkspace, find_root, root_or_none
from plugkit.protocol.lifecycle import EmitFile
from runner.system import logs
from runner.core.tasks.manager import TaskManager
from runner.core.tasks.task import Task
from runner.executors.base import ExecSpec
from runner.core.gates.witness import find_task, git_facts, witness

log = logs.get("plugkit.gates")
T = TypeVar("T")

class GateManager:
    def __init__(self, tasks: TaskManager, clock: Callable[[], float] = time.time) -> None:
        self.tasks = tasks
        self.clock = clock
        # One asyncio lock per workspace, alive only while someone holds or waits on it.
        self._locks: "weakref.WeakValueDictionary[str, asyncio.Lock]" = weakref.WeakValueDictionary()
        self.counters: Counter = Counter()

    # --- plumbing ------------------------------------------------------------

    def workspace(self, session_id: str, cwd: str) -> Workspace:
        if not session_id:
            raise Invalid("session_id is empty; name the session")
        # A relative cwd never gets here: plugkit.protocol's Cwd type refuses it for every method.
        real = os.path.realpath(cwd)  # as sessions do: symlinks and `..` resolved first
        if not os.path.isdir(real):
            raise Invalid(f"cwd {cwd!r} does not exist or is not a directory")
        try:
            return Workspace(find_root(real))
        except NotAWorkspace as exc:  # /, $HOME, $PLUGKIT_HOME: never a workspace (no /.prd)
            raise Invalid(str(exc)) from None

    def _lock(self, ws: Workspace) -> asyncio.Lock:
        lock = self._locks.get(ws.root)
        if lock is None:
            lock = self._locks[ws.root] = asyncio.Lock()
        return lock

    async def _thread(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            return await asyncio.to_thread(fn, *args)
        except GateError as exc:  # a refusal by kind: runner/rpc/errors.py gives it its code
            self.counters[f"refused_{exc.kind}"] += 1
            raise
        except OSError as exc:
            raise Conflict(f"cannot use the workspace's lifecycle files: "
                           f"{exc.strerror or exc.__class__.__name__}") from None

    async def call(self, ws: Workspace, fn: Callable[..., T], *args: Any) -> T:
        """A lifecycle operation `fn(ws, *args)` in a worker thread, one per workspace at a time."""
        self.counters[fn.__name__] += 1
        async with self._lock(ws):
            return await self._thread(fn, ws, *args)

    async def read(self, ws: Workspace, fn: Callable[..., T], *args: Any) -> T:
        """A read-only operation: no per-workspace queueing (hooks call these on every tool use)."""
        return await self._thread(fn, ws, *args)

    def config(self, ws: Workspace) -> GateConfig:
        return config_mod.load(ws.config_path)

    def running_in(self, ws: Workspace) -> tuple[int, ...]:
        return tuple(sorted(t.id for t in self.tasks.running() if root_or_none(t.session.cwd) == ws.root))

    async def external(self, ws: Workspace, with_git: bool) -> External:
        git = await git_facts(ws.root) if with_git else GitFacts()
        return External(running_tasks=self.running_in(ws), git=git)

    async def settle_verify(self, ws: Workspace) -> State:
        """Record the outcome of a verify run that ended since we last looked; the state after."""
        st = await self.read(ws, state_mod.load)
        v = st.verify
        if v is None or v.outcome is not None:
            return st
        try:
            task = await self.tasks.lookup(v.session_id, ws.root, v.task_id)
        except NotFound:
            task = None
        if task is not None and not task.finished:
            return st
        seen = await witness(self.tasks, task) if task is not None else None
        await self.call(ws, gating.settle_verify, seen, self.clock())
        self.counters["verify_settled"] += 1
        return await self.read(ws, state_mod.load)

    # --- gate.* --------------------------------------------------------------

    async def status(self, ws: Workspace) -> tuple[State, GateConfig, list]:
        st = await self.settle_verify(ws)
        cfg = self.config(ws)
        ext = await self.external(ws, with_git=st.phase == "VERIFY")
        return st, cfg, await self.read(ws, gating.next_checks, st, cfg, ext)

    async def advance(self, ws: Workspace, to: Optional[str]) -> gating.Advance:
        st = await self.settle_verify(ws)
        cfg = self.config(ws)
        ext = await self.external(ws, with_git=st.phase == "VERIFY")
        result = await self.call(ws, gating.advance, cfg, ext, to, self.clock())
        self.counters["advanced" if result.ok else "advance_refused"] += 1
        if result.transition is not None:
            log.info("gate_advanced", workspace=ws.root, to=result.transition.to_phase)
        return result

    async def retreat(self, ws: Workspace, trigger: str, reason: str):
        moved = await self.call(ws, gating.retreat, trigger, reason, self.clock())
        log.info("gate_retreated", workspace=ws.root, trigger=trigger, to=moved.to_phase)
        return moved

    async def emit(self, ws: Workspace, files: list[EmitFile]) -> State:
        if any((f.sha256 is None) == (f.content is None) for f in files):
            raise Invalid("each emitted file needs its sha256 or its content (one)")
        pairs = [(f.path, f.sha256 or sha256_bytes((f.content or "").encode())) for f in files]
        return await self.call(ws, gating.declare_emission, pairs)

    async def verify(self, session_id: str, ws: Workspace, wait_ms: int) -> tuple[Task, VerifyRun]:
        """Start the configured verify command as a task of the caller's session, in the workspace."""
        await self.settle_verify(ws)
        cfg = self.config(ws)
        async with self._lock(ws):  # two verify calls at once must not both start a run
            await self._thread(gating.check_verify_start, ws, cfg)
            head = (await git_facts(ws.root)).head
            started = await self.tasks.exec(ExecSpec(
                session_id=session_id, cwd=ws.root, lang=cfg.verify_lang, code=cfg.verify or "",
                timeout_s=cfg.verify_timeout_s))
            task_id = started.id
            await self._thread(gating.record_verify_start, ws, VerifyRun(
                task_id=task_id, session_id=session_id, started_at=self.clock(), head=head))
        self.counters["verify_runs"] += 1
        task = await self.tasks.lookup(session_id, ws.root, task_id)
        await self.tasks.wait_done(task, wait_ms / 1000)
        st = await self.settle_verify(ws)
        run = st.verify if st.verify is not None and st.verify.task_id == task_id else VerifyRun(
            task_id=task_id, session_id=session_id, started_at=self.clock(), head=head)
        return task, run

    async def check(self, ws: Workspace, event: str, tool_name: str, tool_input: dict) -> tuple[Verdict, str]:
        cfg = self.config(ws)
        verdict = await self.read(ws, hooks.check, cfg, event, tool_name, tool_input)
        self.counters[f"check_{verdict.decision}"] += 1
        return verdict, cfg.mode

    async def stop(self, ws: Workspace, stop_hook_active: bool) -> tuple[hooks.StopVerdict, str]:
        await self.settle_verify(ws)
        cfg = self.config(ws)
        ext = await self.external(ws, with_git=cfg.mode != "off")
        verdict = await self.call(ws, hooks.stop, cfg, ext, stop_hook_active)
        self.counters["stop_blocked" if verdict.block else "stop_allowed"] += 1
        return verdict, cfg.mode

    async def context(self, ws: Workspace) -> list[str]:
        return await self.read(ws, hooks.context_lines)

    # --- mutable.resolve, evidence.add --------------------------------------

    async def witnessed(self, ws: Workspace, task_id: int) -> gating.Witnessed:
        """A finished task of a session working in this workspace, as the runner saw it.
        Unknown ids and other workspaces' ids get the same answer (no oracle)."""
        task = await find_task(self.tasks, task_id)
        if task is None or root_or_none(task.session.cwd) != ws.root:
            raise NotFound(f"no task_{task_id} ran in this workspace ({ws.root})",
                           {"next": "plugkit exec:tasks lists this session's tasks"})
        if not task.finished:
            raise Conflict(f"task_{task_id} is still {task.state}; only a finished "
                           f"task is a witness (plugkit exec:sleep task_{task_id}, then again)")
        return await witness(self.tasks, task)

    async def resolve(self, ws: Workspace, name: str, task_id: int, line: Optional[int],
                      regex: Optional[str]) -> gating.Resolution:
        seen = await self.witnessed(ws, task_id)
        result = await self.call(ws, gating.resolve_mutable, name, seen, line, regex, self.clock())
        self.counters["resolved" if result.outcome.known else "resolve_failed"] += 1
        if result.transition is not None:
            log.warning("gate_back_to_plan", workspace=ws.root, mutable=name, trigger=result.transition.trigger)
        return result

    def snapshot(self) -> dict:
        return {"counters": dict(self.counters), "workspaces_locked": sorted(
            root for root, lock in list(self._locks.items()) if lock.locked())}
