"""One item's worker, trigger to cleanup: worktree, hooks, spawn, boot, loop (heartbeats and
the stall watchdog), terminate, then the runner's own evidence: commits on the branch, the
verify command run as a witnessed task on a fresh checkout of the branch's commit, landing,
receipt, completion.

Once the worker has started, nothing of its worktree is trusted: the branch is read from the
repository's refs, the check runs in a runner-owned checkout of that commit (.check-<item> beside
the worktrees; an uncommitted or ignored file the worker left cannot reach it) with the worker's
credential scope, and a rebase or merge to land is made in that checkout too, then checked again.

What follows an attempt's end is plugkit/work/retry.py's policy, applied here: a failed pass
(worker failure, no commits, verify red, stalled) is tried once more from a fresh worktree; a
second ends the item `blocked/replan` and takes the workspace back to PLAN (the two-pass rule);
a kill by `work stop` or the budget is not a failure of the item and is not retried.
"""

import asyncio
import os
from dataclasses import dataclass
from typing import Callable, Optional

from plugkit.lifecycle import item_ops, prd
from plugkit.lifecycle.workspace import Workspace
from plugkit.refusals import Refused
from plugkit.work import prompt as prompt_mod, retry, scopes, workers
from runner.core.gates.manager import GateManager
from runner.core.tasks.manager import TaskManager
from runner.core.tasks.task import Task
from runner.core.work import budget, ci_wait, containers, git, held, objects, quota, ready, resume, teardown
from runner.core.work.install import install_hooks
from runner.core.work.landing import Landing
from runner.core.work.model import END, Failed, ItemRun, Run
from runner.core.work.placement import for_run as placement_for
from runner.core.work.placement.ray_gateway import Gateways
from runner.core.work.queue import LandingQueue
from runner.core.work.refs import RefGuard
from runner.core.work.train import Train
from runner.executors.base import ExecSpec
from plugkit.vocab import WORK_REJECTED as REJECTED
from runner.system import logs
from runner.system.docker_proxy import DockerProxy

log = logs.get("plugkit.work")
WORKER_TIMEOUT_S = 7 * 24 * 3600.0  # the stall watchdog and the budget end workers, not this


@dataclass
class Plumbing:
    tasks: TaskManager
    gates: GateManager
    ws: Workspace
    env: dict[str, str]  # the caller's environment plus how to reach this runner
    register: Callable[[str, ItemRun], None]
    unregister: Callable[[str], None]
    clock: Callable[[], float]
    home: Optional[str] = None  # the runner's home (a placement keeps its own files there)
    keep_refs: Callable[[dict], None] = lambda snaps: None  # the ref snapshots, kept for a resume
    kept_refs: Optional[dict] = None  # a dead runner's snapshots, read back at a resume
    # A worker attempt's telemetry variables (runner/core/work/budget.py), its secret registered.
    telemetry: Callable[[ItemRun], dict[str, str]] = lambda it: {}
    gateways: Optional[Gateways] = None  # the runner's Ray gateways (placement/ray_gateway.py), kept for its life


class Attempts(Landing):
    def __init__(self, run: Run, p: Plumbing) -> None:
        self.run, self.p = run, p
        self.row = workers.row(run.worker)
        self.stopping: Optional[str] = None  # "stopped" | "budget": every worker is being ended
        self.woken = asyncio.Event()  # set with stopping or halting: an item waiting out a usage limit ends too
        self.halting: Optional[str] = None  # an unattended run halts (retry.py's rule): nothing new starts
        self.policy = retry.POLICY  # what follows each attempt's end
        # Set on each change to save at once (the driver saves it: drive.py); an item's end is not
        # signalled: the driver awaits run_item.
        self.changed = asyncio.Event()
        self.land_lock = asyncio.Lock()  # one landing at a time: each lands on the tip the last one left
        # Green branches wait their turn to land, oldest green first (queue.py); saved with the run.
        self.queue = LandingQueue(run, p.clock, self.changed.set)
        self.train = Train()  # each queued branch's guess of what it lands as, checked beside the others
        self.live: dict[str, Task] = {}
        self.docker: dict[str, DockerProxy] = {}  # work_docker: each live attempt's proxy (containers.py)
        self.pausing: set[str] = set()  # items whose worker a spent budget is ending (its tool call refused)
        self.checked_at: dict[int, str] = {}  # a check task's id -> the commit it checked
        self.refs = RefGuard(p.ws.root, run.id, p.keep_refs, p.kept_refs)
        self.placement = placement_for(run, p.home, p.gateways)  # where each worker runs; the rest is the same
        # Set by a runner restart in place: a cancelled attempt leaves its worktree, branch and ref
        # snapshot as a crash would, for the next runner's resume (resume.py).
        self.kept_live = False

    async def listing(self) -> item_ops.Listing:
        return await self.p.gates.read(self.p.ws, item_ops.prd_list)

    async def stop_all(self, why: str) -> None:
        self.stopping = self.stopping or why
        self.woken.set()
        state, reason = ("timed_out", "budget") if why == "budget" else ("killed", "stopped")
        await asyncio.gather(*(self.p.tasks.end(t, state, reason) for t in list(self.live.values())),
                             return_exceptions=True)

    def beat(self, it: ItemRun) -> None:
        now = self.p.clock()
        if "boot" in it.phases:
            it.phase("loop", now)
        elif it.state == "running":
            it.phase("boot", now)
        it.last_beat_at = now

    # --- the item ----------------------------------------------------------------------

    async def run_item(self, it: ItemRun) -> None:
        """The item's attempts until it ends, pauses or is held; the driver awaits this (drive.py)."""
        now = self.p.clock
        try:
            while True:
                try:
                    if self.run.state == "paused":  # a retry, or a crash's resume, waits for the raised cap too
                        raise Failed("paused", "budget_spent", f"not started: {self.run.halt}")
                    if it.state == "waiting_quota":  # parked when the last runner died: its wait goes on
                        raise quota.Parked(it.message or "parked on a usage limit")
                    await self._attempt(it)
                    break
                except Failed as f:
                    nxt = self._next(it, f)
                    if nxt.action == retry.WAIT:  # parked on a usage limit, its worktree kept (quota.py)
                        if (ended := await quota.wait_out(self, it)) is None:
                            continue
                        f, nxt = ended, self._next(it, ended)
                    it.failures += nxt.counted
                    if nxt.action == retry.PAUSE:  # branch kept; .prd keeps it in progress
                        it.pauses += 1
                        it.enter("paused", now(), f.reason, f.message)
                    elif nxt.action == retry.AGAIN:  # the cluster's fault, not the item's
                        it.node_losses += 1
                        it.enter("spawning", now(), f.reason, f"attempt {it.attempt} {f.state}/{f.reason}: "
                                                              f"{f.message}")
                        continue
                    elif nxt.action == retry.RETRY:
                        it.last_failure = f"attempt {it.attempt} {f.state}/{f.reason}: {f.message}" + (
                            f"\nthe last lines of its output:\n{f.detail}" if f.detail else "")
                        if f.reason == "evicted":  # not the worker's failure: said as what changed under it
                            it.evicted, it.last_failure = f"{f.message}\n{f.detail}".strip(), None
                        it.enter("spawning", now(), f.reason, f"attempt {it.attempt} {f.state}/{f.reason}: "
                                                              f"{f.message}; trying once more")
                        continue
                    elif nxt.action == retry.REPLAN:
                        await self._replan(it, f)
                    else:  # held for a person, or ended as it ended (a stop, the budget, a refusal)
                        it.enter(f.state, now(), f.reason, f.message)
                        await self.prd_status(it, nxt.prd)
                    if nxt.halts:
                        self._halt(it)
                    break
        except asyncio.CancelledError:
            if it.live and not self.kept_live:  # what already ended (landed, say) stays as it ended
                it.enter("killed", now(), "runner_restarted", "the runner stopped while the worker ran")
            raise
        except Exception as exc:  # a bug must end the item visibly, never hang the run
            log.exception("work_item_error", item=it.id)
            if it.live:  # an item that already ended (landed, say) keeps its end; the log has the bug
                it.enter("failed", now(), "internal",
                         f"plugkit work failed on this item ({exc.__class__.__name__}); see the runner log")
        finally:
            log.info("work_item_ended", run=self.run.id, item=it.id, state=it.state, reason=it.reason)

    def _next(self, it: ItemRun, f: Failed) -> retry.Next:
        return self.policy.after(f.state, f.reason, failures=it.failures, node_losses=it.node_losses,
                                 stopping=bool(self.stopping), afk=self.run.afk)

    def _halt(self, it: ItemRun) -> None:
        """An unattended run halts on this item's end: no new worker starts (the driver's loop), and
        an item waiting out a usage limit is held, not resumed (quota.py)."""
        if self.halting is None:
            first = (it.message or END.get(it.reason or "", "")).split("\n", 1)[0]  # touches_check: its diff follows
            self.halting = f"{it.id} {it.state}/{it.reason}: {first}"
            self.woken.set()

    async def _replan(self, it: ItemRun, last: Failed) -> None:
        it.enter("blocked", self.p.clock(), "replan", f"failed twice (last: {last.state}/{last.reason}: "
                                                      f"{last.message}); back to PLAN: rethink the item")
        await self.prd_status(it, "blocked")
        try:
            await self.p.gates.retreat(self.p.ws, "replan", f"plugkit work: {it.id} failed twice")
        except Refused:
            pass  # already in PLAN, or the gates not in use here: the item's status says it

    async def prd_status(self, it: ItemRun, status: Optional[str]) -> None:
        if status is None:
            return
        try:
            await self.p.gates.set_status(self.p.ws, it.id, status)
        except Refused as exc:
            log.warning("work_prd_status_failed", item=it.id, status=status, error=exc.message)

    async def _attempt(self, it: ItemRun) -> None:
        p, run, now = self.p, self.run, self.p.clock
        it.attempt += 1
        it.started_at = it.started_at or now()
        it.phase("spawn", now())
        item = prd.get((await self.listing()).items, it.id)
        if item.status != "in_progress":  # on the state, not the attempt: a resumed item may never have got here
            try:  # the gates' own rules: blockers completed, a person's approval for critical items
                await p.gates.set_status(p.ws, it.id, "in_progress")
            except Refused as exc:
                raise Failed(REJECTED, "refused", exc.message) from None
        cfg = p.gates.config(p.ws)
        check = item.verify or cfg.verify
        if not check:
            raise Failed(REJECTED, "refused", "no verify command: `plugkit prd update "
                                                f"{it.id} --verify CMD` or verify in .plugkit/config.toml")
        kept = (await resume.recover(self, it) if it.interrupted is not None  # after a crash
                else await quota.reenter(p.ws.root, it))  # after a usage limit: its worktree as it left it
        prep, lease = await ready.plan(p.ws.root, cfg, run, it), None  # refused before any worktree exists
        try:
            base = kept[0] if kept else await git.tip(p.ws.root, run.branch)
            it.base = base  # what this attempt's changes are judged against, kept for a resume
            it.branch, it.worktree = f"plugkit/{it.id}", os.path.join(p.ws.root, ".plugkit", "worktrees", it.id)
            await asyncio.to_thread(p.ws.ensure_dir)  # .plugkit/.gitignore keeps worktrees/ out of git
            # The file and whatever its host keeps beside it (Qwen leaves settings.json.orig).
            excludes = ([f"/{self.row.hooks_file}*"] if self.row.hooks_file else []) + prep.excludes
            if kept is None or kept[1]:
                await git.add_worktree(p.ws.root, it.worktree, it.branch, kept[1] if kept else base, excludes)
            await objects.fresh(p.ws.root, it.worktree, it.branch)  # gitstore: the worker's own object dir
        except git.GitError as exc:
            raise Failed("failed", "spawn_failed", str(exc)) from None
        try:
            try:
                await install_hooks(self.row, it.worktree, self.p.env)
            except git.GitError as exc:
                raise Failed("failed", "spawn_failed", f"hooks for the worker: {exc}") from None
            lease = await ready.fill(p.ws.root, it.worktree, prep, it)  # its files, shared dirs, ports
            async with self.land_lock:  # not mid-landing: the snapshot must hold the runner's last move
                await self.refs.watch(it.id)
            task = await self._spawn(it, item, check, lease.env() if lease else {})
            await self._watch(it, task)
            failure = self.placement.ended(it, task)
            if failure is not None and not self.stopping:  # a stop is a stop, wherever it ran
                raise failure
            it.phase("terminate", now())
            # gitstore (issue 40 #2): the worker's objects enter the repository only once checked,
            # before any ref is judged (a ref it moved must name objects the store has) or checked.
            bad_objects = await objects.take(p.ws.root, it)
            await held.refs_moved(run, it, self.refs, self.land_lock)
            if bad_objects is not None:
                raise bad_objects
            await self._judge_worker(it, task)
            it.phase("cleanup", now())
            it.enter("verifying", now())
            if await git.commits_ahead(p.ws.root, base, it.branch) == 0:
                await quota.judge(self, it, task)  # exited 0 on a usage limit, say
                raise Failed(REJECTED, "no_commits", f"nothing committed on {it.branch}: the worker must "
                                                       "commit its work before it stops")
            await held.control_files(p.ws.root, it, base)
            await held.changes_its_check(p.ws.root, run, it, base, check, cfg)
            sha = await git.tip(p.ws.root, f"refs/heads/{it.branch}")
            await held.weakens_its_check(p, run, it, base, sha, check, cfg)
            verified = await self._verify(it, check, cfg, sha)
            await ci_wait.confirm(p, it, cfg, sha)  # work_ci: CI green on this commit, or no landing
            it.enter("landing", now())
            await self._land(it, item, check, cfg, verified)
        except git.MergeConflict as exc:
            files = f" ({', '.join(exc.files[:5])})" if exc.files else ""
            raise Failed("blocked", "merge_conflict", f"{exc}{files}; branch {it.branch} is kept") from None
        except git.GitError as exc:
            raise Failed("blocked", "land_failed", f"{exc}; branch {it.branch} is kept") from None
        finally:
            self.live.pop(it.id, None)
            # its exec: tasks, its containers (work_docker), its ports' listeners, its lease
            await teardown.end(p.tasks, p.home, it, lease, self.docker.pop(it.id, None))
            p.unregister(it.worktree)
            if not self.kept_live:
                await self._tidy(it)

    async def _tidy(self, it: ItemRun) -> None:
        p = self.p
        async with self.land_lock:  # its branch (rebased by a landing) is recorded before another worker is judged
            await self.refs.settle(it.id, it.branch)
        # A worker parked on a usage limit (quota.py) or paused by a spent budget (budget.py) keeps its
        # worktree, uncommitted work and all, for its next attempt: only the check's checkout goes.
        for path in (it.worktree, self.check_dir(it))[0 if it.quota_note is None else 1:]:
            try:
                await git.remove_worktree(p.ws.root, path)
            except git.GitError as exc:  # the branch holds the work; a stale worktree is pruned next time
                log.warning("work_worktree_left", item=it.id, error=str(exc))
        if it.landed is not None:
            await self._drop_branch(it)

    async def _drop_branch(self, it: ItemRun) -> None:
        """A landed item's branch is on the run's branch now: it goes (its pre-landing tag stays),
        so `git branch` lists only what still waits for a person."""
        ref = f"refs/heads/{it.branch}"
        async with self.land_lock:  # a ref the runner moves, moved where no worker's snapshot is being read
            try:
                # --no-deref: a worker can write this ref, and a symbolic one would delete its target
                await git.run(self.p.ws.root, "update-ref", "--no-deref", "-d", ref)
            except git.GitError as exc:
                log.warning("work_branch_left", item=it.id, error=str(exc))
                return
            self.refs.ours(ref, None)

    def check_dir(self, it: ItemRun) -> str:
        """The runner's own checkout for this item's check and landing: beside the worktrees (never
        an item's: ids start with a letter or digit), hidden from every sandbox with the repository."""
        return os.path.join(self.p.ws.root, ".plugkit", "worktrees", f".check-{it.id}")

    async def _spawn(self, it: ItemRun, item: prd.Item, check: str, ports: dict[str, str]) -> Task:
        p, run = self.p, self.run
        assert it.worktree is not None and it.branch is not None
        text = prompt_mod.build(item, check, it.branch, it.worktree, it.last_failure if it.attempt > 1 else None,
                                it.interrupted or it.quota_note, it.evicted, self.run.branch)
        it.interrupted = it.quota_note = it.evicted = None  # said once: a later retry starts from its own failure
        try:
            argv, stdin = workers.command_line(self.row, text, it.worktree, run.command)
        except ValueError as exc:
            raise Failed(REJECTED, "refused", str(exc)) from None
        it.session_id = f"plugkit-work-{run.id}-{it.id}-{it.attempt}"
        p.register(it.worktree, it)
        granted = p.gates.config(p.ws).work_credentials
        # environ: the worker starts from its scopes' variables only, not the runner's or the caller's
        environ = scopes.worker_env(self.row.name, workers.environment(
            self.row, p.env if "PATH" in p.env else {**os.environ, **p.env}), granted)
        # What the item is, for a program that is not an agent reading the prompt (a `command`
        # worker): the runner's own facts, set after the scopes so the caller's cannot stand in.
        environ.update({"PLUGKIT_ITEM": it.id, "PLUGKIT_ITEM_SUBJECT": item.subject, "PLUGKIT_VERIFY": check,
                        "PLUGKIT_BRANCH": it.branch, **ports, **p.telemetry(it)})
        environ.update(await containers.open_for(p, run, it, p.gates.config(p.ws), self.docker))  # work_docker
        await ready.setup(p, run, it, p.gates.config(p.ws), environ)  # in its sandbox, before the worker
        code, environ, stdin = await self.placement.launch(it, argv, stdin, environ)
        try:
            task = await p.tasks.exec(ExecSpec(
                session_id=it.session_id, cwd=it.worktree, lang="worker", code=code,
                timeout_s=WORKER_TIMEOUT_S, stdin=stdin, environ=environ))
        except Refused as exc:
            raise Failed("failed", "spawn_failed", exc.message) from None
        self.live[it.id] = task
        it.task_id, it.verify_task_id, it.verify, it.node, it.placement = task.id, None, None, None, None
        it.enter("running", p.clock())
        it.last_beat_at = p.clock()
        log.info("work_worker_started", run=run.id, item=it.id, task_id=task.id, attempt=it.attempt)
        return task

    async def _watch(self, it: ItemRun, task: Task) -> None:
        """Until the worker ends; output counts as a heartbeat, and so do the hook calls a
        placement relays (local hook calls beat through beat())."""
        stall_s, seen, relayed = self.run.stall_min * 60, task.bytes_out, 0
        while not task.finished:
            left = (it.last_beat_at or 0) + stall_s - self.p.clock()
            if left <= 0:
                log.warning("work_worker_stalled", item=it.id, task_id=task.id)
                await self.p.tasks.end(task, "timed_out", "stalled")
                break
            await self.p.tasks.wait_done(task, min(1.0, left))
            placed, refused = it.node, list(it.refused)
            beats = self.placement.seen(it)  # a remote worker's hook calls (and refusals), relayed by its placement
            if (placed is None and it.node is not None) or it.refused != refused:
                self.changed.set()  # in the store at once: a restarted runner names the remote attempt
            if task.bytes_out != seen or beats != relayed:
                seen, relayed = task.bytes_out, beats
                self.beat(it)
        await task.done.wait()
        it.worker_s += task.duration_ms / 1000

    async def _judge_worker(self, it: ItemRun, task: Task) -> None:
        logs_hint = f"`plugkit work logs {it.id}`"
        if task.reason == "stalled":
            raise Failed("timed_out", "stalled", f"no hook call and no output for {self.run.stall_min:g} min "
                                                 f"(task_{task.id} ended); {logs_hint}")
        if task.reason == "budget":
            raise Failed("timed_out", "budget", f"the run's budget ran out (task_{task.id} ended)")
        if task.reason == "paused" and not self.stopping:
            self.pausing.discard(it.id)
            it.quota_note = budget.KEPT  # its worktree kept as the worker left it (uncommitted work too)
            raise Failed("paused", "budget_spent", f"{(self.run.halt or 'budget').split(';')[0]}; task_{task.id} "
                                                   f"ended at its next tool call; branch {it.branch} kept")
        if self.stopping or task.reason in ("killed", "runner_shutdown", "session_end"):
            raise Failed("killed", "stopped", f"task_{task.id} {task.message}")
        if task.state != "completed":
            await quota.judge(self, it, task)
            raise Failed("failed", "spawn_failed" if task.reason == "spawn_failed" else "worker_exit",
                         f"{task.message}; {logs_hint}")
