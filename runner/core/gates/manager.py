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
from dataclasses import replace
from typing import Any, Callable, Mapping, Optional, TypeVar

from plugkit.lifecycle import config_pin, gating, hooks, state as state_mod
from plugkit.lifecycle.config import GateConfig
from plugkit.lifecycle.errors import GateError
from plugkit.refusals import Conflict, Forbidden, Invalid, NotFound
from plugkit.lifecycle import authority, evidence as ev, item_ops, item_states, signing
from plugkit.lifecycle.evidence import Receipt, sha256_bytes
from plugkit.lifecycle.gating import External
from plugkit.lifecycle.phases import GitFacts
from plugkit.lifecycle.hook_policy import Verdict, approved_item, view
from plugkit.lifecycle.state import Approval, State, VerifyRun
from plugkit.lifecycle.workspace import Workspace
from plugkit.workspace import NotAWorkspace, find_root, root_or_none
from plugkit.protocol.lifecycle import EmitFile
from runner.system import logs
from runner.core.tasks.manager import TaskManager
from runner.core.tasks.task import Task
from runner.executors.base import ExecSpec
from runner.core.gates import checks, pins
from runner.core.gates.approvals import ApprovalDesk
from runner.core.gates.keys import load_key
from runner.system.stores.gates import GateStore
from runner.system import peers
from runner.core.gates.witness import find_task, git_facts, witness

log = logs.get("plugkit.gates")
T = TypeVar("T")

class GateManager:
    def __init__(self, tasks: TaskManager, clock: Callable[[], float] = time.time,
                 home: Optional[str] = None) -> None:
        self.tasks = tasks
        self.clock = clock
        self.home = home
        self._key: Optional[bytes] = None
        self._signer: Optional[Any] = None
        self._store: Optional[GateStore] = None
        self.desk = ApprovalDesk()
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
            return Workspace(find_root(real), seal=self.key(), ledger=self.ledger(), signer=self.signer())
        except NotAWorkspace as exc:  # /, $HOME, $PLUGKIT_HOME: never a workspace (no /.prd)
            raise Invalid(str(exc)) from None

    def ledger(self) -> Optional[GateStore]:
        """The gates' ledger (the source of truth of every workspace's state), opened on first use."""
        if self._store is None and self.home is not None:
            self._store = GateStore(self.home)
        return self._store

    def key(self) -> Optional[bytes]:
        """The receipts' sealing key, read (or made) on first use; None without a home (unit tests)."""
        if self._key is None and self.home is not None:
            self._key = load_key(self.home)
        return self._key

    def signer(self) -> Optional[Any]:
        """The receipts' Ed25519 signing key, read (or made) on first use; None without a home."""
        if self._signer is None and self.home is not None:
            self._signer = signing.load_private(self.home)
        return self._signer

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
        """The settings the runner holds for the workspace (a weaker file is only a finding)."""
        return config_pin.effective(ws)

    async def confirm_config(self, ws: Workspace, peer: Optional[tuple], port: int,
                             runner_pid: int) -> pins.Confirmed:
        """gate.confirm_config: the file's settings taken, if a person asks (judged as approvals are)."""
        return await pins.confirm(self, ws, peer, port, runner_pid)

    def running_in(self, ws: Workspace) -> tuple[int, ...]:
        return tuple(sorted(t.id for t in self.tasks.running() if root_or_none(t.cwd) == ws.root))

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
        seen = await witness(self.tasks, task, self.config(ws).verify) if task is not None else None
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

    async def verify(self, session_id: str, ws: Workspace, wait_ms: int,
                     environ: Optional[Mapping[str, str]] = None) -> tuple[Task, VerifyRun]:
        """Start the configured verify command as a task of the caller's session, in the workspace."""
        st = await self.settle_verify(ws)
        cfg = self.config(ws)
        if cfg.verify and st.item_bases:  # held to the commit the earliest item under way started from
            under_way = {i.id for i in await self.read(ws, gating.load_items) if i.status == "in_progress"}
            bases = [sha for item_id, sha in st.item_bases.items() if item_id in under_way]
            if bases:
                await checks.held_to_base(self, session_id, ws, bases[0], cfg.verify, environ,
                                          "the work under way started from")
        async with self._lock(ws):  # two verify calls at once must not both start a run
            await self._thread(gating.check_verify_start, ws, cfg)
            head = (await git_facts(ws.root)).head
            started = await self.tasks.exec(ExecSpec(
                session_id=session_id, cwd=ws.root, lang=cfg.verify_lang, code=cfg.verify or "",
                timeout_s=cfg.verify_timeout_s, environ=environ))
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

    async def check(self, ws: Workspace, event: str, tool_name: str, tool_input: dict,
                    platform: str = "") -> tuple[Verdict, str]:
        cfg = self.config(ws)
        verdict = await self.read(ws, hooks.check, cfg, event, tool_name, tool_input)
        self.counters[f"check_{verdict.decision}"] += 1
        if verdict.decision == "ask" and verdict.rule == "approval_is_for_humans":
            command = view("", [], tool_name, tool_input).command or ""
            self.desk.asked(ws.root, platform, command, approved_item(command))
            log.warning("gate_approval_attempt", workspace=ws.root, platform=platform)
        return verdict, cfg.mode

    async def grant(self, ws: Workspace, item_id: str, via: str, peer: Optional[tuple], port: int,
                    runner_pid: int) -> Approval:
        """approval.grant, judged by the caller's process ancestry (never by what it claims)."""
        await self._thread(item_ops.check_grant_channel, via)
        who = await asyncio.to_thread(peers.caller, peer, port, runner_pid)
        verdict = self.desk.judge(ws.root, item_id, who)
        if not verdict.ok:
            self.counters["approval_refused"] += 1
            log.warning("gate_approval_refused", workspace=ws.root, item=item_id, why=verdict.reason,
                        chain=list(who.chain) if who else None)
            raise Forbidden(f"approval refused: {verdict.reason}. A person approves "
                            f"from their own terminal: `plugkit approve {item_id}`")
        assert who is not None
        approval = await self.call(ws, item_ops.approval_grant, item_id, who.user, via, self.clock(),
                                   verdict.channel, who.tty, who.pid)
        log.info("gate_approved", workspace=ws.root, item=item_id, user=who.user, tty=who.tty,
                 channel=verdict.channel)
        return approval

    async def stop(self, ws: Workspace, stop_hook_active: bool) -> tuple[hooks.StopVerdict, str]:
        await self.settle_verify(ws)
        cfg = self.config(ws)
        ext = await self.external(ws, with_git=cfg.mode != "off")
        verdict = await self.call(ws, hooks.stop, cfg, ext, stop_hook_active)
        self.counters["stop_blocked" if verdict.block else "stop_allowed"] += 1
        return verdict, cfg.mode

    async def context(self, ws: Workspace) -> list[str]:
        return await self.read(ws, hooks.context_lines)

    async def tampered(self, ws: Workspace) -> list[str]:
        found = await self.read(ws, authority.findings)
        if found:
            self.counters["tampered_seen"] += 1
            log.warning("gate_views_tampered", workspace=ws.root, fields=[f.field for f in found][:10])
        return [f.text() for f in found]

    async def restore(self, ws: Workspace) -> list[str]:
        dropped = await self.call(ws, gating.restore_views)
        log.warning("gate_views_restored", workspace=ws.root, dropped=len(dropped))
        return dropped

    # --- mutable.resolve, evidence.add --------------------------------------

    async def witnessed(self, ws: Workspace, task_id: int, by_session: Optional[str] = None) -> gating.Witnessed:
        """A finished task of a session working in this workspace, as the runner saw it.
        Unknown ids and other workspaces' ids get the same answer (no oracle). A task of
        another session counts only when that session works in this same workspace; the
        receipt then records both sessions (`by_session` is the one asking)."""
        task = await find_task(self.tasks, task_id)
        if task is None or root_or_none(task.cwd) != ws.root:
            raise NotFound(f"no task_{task_id} ran in this workspace ({ws.root})",
                           {"next": "plugkit exec:tasks lists this session's tasks"})
        if not task.finished:
            raise Conflict(f"task_{task_id} is still {task.state}; only a finished "
                           f"task is a witness (plugkit exec:sleep task_{task_id}, then again)")
        seen = await witness(self.tasks, task, with_git=False)  # evidence.add, mutable.resolve: no HEAD pinned
        if by_session is not None and by_session != seen.task.session_id:
            seen = replace(seen, task=seen.task.model_copy(update={"by_session": by_session}))
        return seen

    async def resolve(self, ws: Workspace, name: str, task_id: int, line: Optional[int],
                      regex: Optional[str], by_session: Optional[str] = None) -> gating.Resolution:
        seen = await self.witnessed(ws, task_id, by_session)
        result = await self.call(ws, gating.resolve_mutable, name, seen, line, regex, self.clock())
        self.counters["resolved" if result.outcome.known else "resolve_failed"] += 1
        if result.transition is not None:
            log.warning("gate_back_to_plan", workspace=ws.root, mutable=name, trigger=result.transition.trigger)
        return result

    # --- evidence.verify, prd.update: the receipts' tasks against the runner's ledger --------

    async def ledger_problems(self, ws: Workspace, receipt: Receipt) -> list[str]:
        """A sealed receipt's task must be one the runner's ledger holds, as the receipt says
        (or, once the task aged out of the task ledger, a receipt the gates' ledger lists)."""
        t = receipt.task
        if t is None or not self.tasks.durable:
            return []
        rec = await self.tasks.record(t.task_id)
        if rec is None and ws.ledger is not None and await asyncio.to_thread(ws.ledger.has_receipt, ws.root,
                                                                             receipt.id):
            return []
        if rec is None:
            return [f"task_{t.task_id} is not in the runner's ledger: no such task ran under this runner"]
        if rec.session_id != t.session_id or rec.exit_code != t.exit_code or (
                t.code_sha256 is not None and rec.code_sha256 != t.code_sha256):
            return [f"task_{t.task_id} in the runner's ledger is not the task this receipt describes"]
        return []

    async def verify_evidence(self, ws: Workspace, refs: list[str]) -> list[tuple[str, list[str]]]:
        found = await self.read(ws, ev.verify_all, refs)
        out = []
        for rid, receipt, problems in found:
            if receipt is not None and not problems:
                problems = await self.ledger_problems(ws, receipt)
            out.append((rid, problems))
        return out

    async def set_status(self, ws: Workspace, item_id: str, status: str) -> Any:
        """The runner's own move of an item (plugkit work: started, released, held), under every
        rule a person's `prd update --status` meets."""
        return await self.prd_update(ws, item_id, {}, status, [])

    async def complete_with(self, ws: Workspace, item_id: str, receipt_id: str) -> Any:
        """The runner completes an item on its own receipt (plugkit work's landing)."""
        return await self.prd_update(ws, item_id, {}, "completed", [receipt_id])

    async def prd_update(self, ws: Workspace, item_id: str, changes: dict, status: Optional[str],
                         refs: list[str], asker: Optional[checks.Asker] = None) -> Any:
        """Receipts named for an item are checked against the ledger first (async), then the
        update re-checks their seals under the workspace lock, with what the runner sees now
        (git's HEAD, for a completion) and, for a change of the item's check, whether the
        caller is a person (`asker`: the RPC's connection; None for the runner's own calls)."""
        for rid, problems in await self.verify_evidence(ws, refs) if refs else []:
            if problems:
                raise Conflict(f"receipt {rid} does not verify: {'; '.join(problems)}")
        try:  # a start records its HEAD (the base its check is held to); a completion is judged at HEAD
            site = await checks.site(self, ws, with_git=status in ("completed", "in_progress"))
        except Conflict:
            if status == "completed":
                raise
            site = await checks.site(self, ws, with_git=False)  # a start never fails on git
        person = await checks.person(self, ws, item_id, changes.get("verify"), site, asker)
        updated = await self.call(ws, item_ops.prd_update, item_id, changes, status, refs, site,
                                  person or item_states.Person())
        if person is not None and person.ok:
            log.warning("gate_check_changed_by_person", workspace=ws.root, item=item_id,
                        check=changes["verify"][:200])
        return updated

    async def prd_check(self, session_id: str, ws: Workspace, item_id: str,
                        environ: Optional[Mapping[str, str]] = None) -> checks.CheckRun:
        """prd.verify: the item's check run now (in the caller's environ), witnessed, its receipt naming HEAD."""
        return await checks.run_check(self, session_id, ws, item_id, environ)

    async def seal_ledger(self, why: str) -> None:
        """The ledger's head signed (a session ended), over an intact chain, when the ledger is open."""
        store = self._store
        if store is not None and not any(not b.acknowledged for b in (await asyncio.to_thread(store.audit))[0]):
            await asyncio.to_thread(store.seal, why, self.clock())

    def close(self) -> None:
        if self._store is not None:
            try:  # the head signed as the runner stops, over an intact chain only (chain.py says why)
                if not any(not b.acknowledged for b in self._store.audit()[0]):
                    self._store.seal("runner stopped", self.clock())
            except Exception as exc:  # noqa: BLE001 - a stop must finish; the next audit signs again
                log.warning("gate_ledger_seal_failed", error=str(exc)[:200])
            self._store.close()
            self._store = None

    def snapshot(self) -> dict:
        return {"counters": dict(self.counters), "approvals": self.desk.snapshot(), "workspaces_locked": sorted(
            root for root, lock in list(self._locks.items()) if lock.locked())}
