"""WorkManager: `plugkit work` runs, one live run per workspace, driven inside the runner.

Start checks what would make a run fail later (a git repo on a branch, a verify command
for every item, the worker known), then hands the run to a RunDriver task owned here; the
client may exit at once. Hook calls from inside a worker's worktree find their worker here
(`worker_at`): they are its heartbeat, and the hook path applies the worker policy to them.
"""

import asyncio
import importlib.util
import os
import secrets
import time
from typing import Callable, Optional

from plugkit.lifecycle import item_ops
from plugkit.refusals import Conflict, Forbidden, Invalid, NotFound
from plugkit.work import cluster, scopes, workers
from runner.core.gates.manager import GateManager
from runner.core.tasks.manager import TaskManager
from runner.core.work import budget, ci_wait, git, person, resume
from runner.core.work.attempt import Attempts, Plumbing
from runner.core.work.drive import RunDriver
from runner.core.work.journal import RunJournal
from runner.core.work.past import PastRuns
from runner.core.work.model import ItemRun, Run, RunRequest
from runner.core.work.placement.ray_gateway import Gateways
from runner.core.work.store import RunStore
from runner.executors.worker import caller_task, check_sandbox, program_path
from runner.system import logs

log = logs.get("plugkit.work")


class WorkManager:
    def __init__(self, tasks: TaskManager, gates: GateManager, home: Optional[str], port: int,
                 clock: Callable[[], float] = time.time) -> None:
        self.tasks, self.gates, self.port, self.clock = tasks, gates, port, clock
        self.home = home
        self.store = RunStore(home)
        self.runs: dict[str, Run] = {}  # workspace root -> its latest run
        self.past = PastRuns(self.store, clock)  # kept runs and their journals
        self.drivers: dict[str, RunDriver] = {}  # workspace root -> the live run's driver
        # Every run's driver is a child of one TaskGroup, held open by a task of its own from the
        # first start until close(): leaving it cancels the live runs and waits for their tidy-up.
        self._group: Optional[asyncio.TaskGroup] = None
        self._owner: Optional[asyncio.Task] = None
        self._group_ready = asyncio.Event()
        self._worktrees: dict[str, tuple[Run, ItemRun, Attempts]] = {}  # realpath -> its worker
        self._resuming: dict[str, list[ItemRun]] = {}  # root -> the items a dead runner's run resumes
        self.meters: dict[str, tuple] = {}  # a worker attempt's telemetry secret -> (run, item, Meter): budget.py
        self.days = budget.days.DaySpend(home)  # each workspace's spend per local day (budget.py's day caps)
        # Per Ray cluster, the one driver every remote attempt relays through: kept across runs.
        self.gateways = Gateways(tasks, home or os.path.expanduser("~/.plugkit"))

    # --- runs ------------------------------------------------------------------------------

    def latest(self, root: str) -> Optional[Run]:
        if root not in self.runs:
            run = self.store.load(root)
            if run is not None:
                self.runs[root] = run  # first: its journal is then the live one, written to
            if run is not None and run.ended_at is None:  # live when the last runner stopped
                journal = self.journal(run)  # first: it reads the items as the dead runner left them
                why = self._no_resume(run)
                if why is None:  # resumed by settle_dead, which the boot started: say so from the first answer
                    self._resuming[root] = resume.mark(run, self.clock())
                else:
                    self._halt_dead(run, why)
                journal.observe(run)
                self.store.save(run)
        return self.runs.get(root)

    def _no_resume(self, run: Run) -> Optional[str]:
        try:
            on = self.gates.config(self.gates.workspace("plugkit-work", run.workspace)).work_resume
        except Exception as exc:  # the workspace gone or unreadable: nothing to resume into
            return f"its workspace cannot be read ({str(exc)[:120]})"
        return resume.refusal(run, on, self.store.read_side(run, "env"))

    def _halt_dead(self, run: Run, why: str) -> None:
        now = self.clock()
        for it in run.items.values():
            if it.live:
                it.enter("killed", now, "runner_restarted", "the runner stopped while the run was live")
        run.enter("halted", f"the runner stopped during this run and it was not resumed ({why}); "
                            "`plugkit work` starts a new one (landed items stay)", now)

    def journal(self, run: Run) -> RunJournal:
        """The run's journal: the live one, or a past run's read back from its file."""
        return self.past.journal(run, (r.id for r in self.runs.values()))

    def find_run(self, root: str, run_id: Optional[str]) -> Run:
        return self.past.find(root, run_id, self.latest(root))

    async def start(self, session_id: str, cwd: str, p: RunRequest) -> Run:
        if self._worker_of(cwd) is not None:  # a worker starting workers of its own: never
            raise Forbidden("plugkit work is started by a person in the project, not from inside a worker's "
                            "worktree; finish this item and stop")
        ws = self.gates.workspace(session_id, cwd)
        root = ws.root
        old = self.latest(root)
        if old is not None and root in self.drivers:
            raise Conflict(f"run {old.id} is live in this workspace: `plugkit work status`, or "
                           "`plugkit work stop` first")
        try:
            row = workers.row(p.worker)
            argv, _stdin = workers.command_line(row, "", root, list(p.command) if p.command else None)
        except ValueError as exc:
            raise Invalid(str(exc)) from None
        if program_path(argv[0], workers.environment(row, dict(p.env))) is None:  # every item would fail twice on it and send the run to PLAN
            raise Invalid(f"worker program {argv[0]!r} is not on PATH: install it, pick another "
                          "with --worker, or --worker command --run PROGRAM")
        if p.sandbox:  # fails closed: no worker starts unconfined unless a person said so
            await check_sandbox(self.home)
        branch, base = await self._start_point(root)
        listing = await self.gates.read(ws, item_ops.prd_list)
        known = {i.id for i in listing.items}
        missing = [i for i in p.items if i not in known]
        if missing:
            raise NotFound(f"no work item {', '.join(missing)} in .prd (`plugkit prd list`)")
        chosen = [i for i in listing.items if i.status != "completed" and (not p.items or i.id in p.items)]
        if not chosen:
            raise Conflict("no open work item to run (`plugkit prd add SUBJECT` adds one)")
        cfg = self.gates.config(ws)
        network = p.network or cfg.work_network
        if network != "host" and not p.sandbox:
            raise Invalid(f"--network {network} is a network namespace of the sandbox: drop --no-sandbox, "
                          "or run with --network host")
        runtime, address = p.runtime or cfg.work_runtime, p.cluster or cfg.work_cluster
        if runtime == "ray":  # the trust boundary: checked before anything is sent anywhere
            why = cluster.refusal(address, {**os.environ, **p.env}, p.allow_remote_cluster)
            if why:
                raise Forbidden(why)
            if importlib.util.find_spec("ray") is None:  # found, not imported: only the drivers import it
                raise Invalid("--runtime ray needs Ray beside plugkit: pip install 'plugkit[ray]'")
            if why := await self.gateways.refusal(address, root):  # a cluster without token authentication
                raise Forbidden(why)
        caps = budget.days.at_start(dict(p.caps), cfg)  # with the workspace's day caps (the lower of the two)
        if why := budget.refusal(p.worker, caps, runtime):
            raise Invalid(why)
        if cfg.work_ci and cfg.ci == "local":  # the branch's own CI script would run outside the sandbox
            raise Invalid(ci_wait.LOCAL_REFUSED)
        unverifiable = [i.id for i in chosen if not (i.verify or cfg.verify)]
        if unverifiable:
            raise Invalid(f"no verify command for {', '.join(unverifiable[:5])}: set verify in "
                          ".plugkit/config.toml or `plugkit prd update ID --verify CMD`; an item closes only "
                          "on a check the runner runs")
        await self._release_stale(ws, old, listing)
        run = Run(id=secrets.token_hex(4), workspace=root, worker=p.worker, parallel=p.parallel, afk=p.afk,
                  merge=p.merge or cfg.work_merge, branch=branch, base=base, started_at=self.clock(),
                  stall_min=p.stall_min, budget_min=p.budget_min, command=list(p.command) if p.command else None,
                  selected=list(p.items), sandbox=p.sandbox, network=network, runtime=runtime,
                  cluster=address if runtime == "ray" else None, quota_wait=p.quota_wait, caps=caps,
                  day_spend=self.days.for_run(root, self.clock(), caps),  # the workspace's earlier spend today
                  scopes=scopes.shown(p.worker, workers.environment(row, dict(p.env)), cfg.work_credentials),
                  check_allowed=dict(old.check_allowed) if old is not None else {})
        if old is not None:
            self.past.journals.pop(old.id, None)
        self.runs[root] = run
        await asyncio.to_thread(self.store.write_side, run, "env", dict(p.env))  # for a resume after a crash
        await self._launch(ws, run, dict(p.env), dict(old.items) if old is not None else None)
        await asyncio.to_thread(self.store.prune, root)
        log.info("work_run_started", run=run.id, workspace=root, worker=p.worker, parallel=p.parallel, afk=p.afk)
        return run

    async def _launch(self, ws, run: Run, env: dict[str, str], earlier: Optional[dict] = None,
                      kept_refs: Optional[dict] = None, adopt: Optional[list[ItemRun]] = None) -> None:
        """The run's driver, started in the group: a new run, or one resumed after a crash."""
        # The worker's hooks reach this runner, and fail closed: a worker runs with its host's own
        # permission prompts off, so a hook that cannot answer must deny, not wave the call through.
        env.update(PLUGKIT_PORT=str(self.port), PLUGKIT_HOOKS_FAIL="closed")
        attempts = Attempts(run, Plumbing(self.tasks, self.gates, ws, env, self._register, self._unregister,
                                          self.clock, self.home,
                                          lambda snaps: self.store.write_side(run, "refs", snaps), kept_refs,
                                          lambda it: budget.meter_env(self, run, it), self.gateways))
        driver = RunDriver(run, attempts, self.store.save, self.clock, earlier, self.journal(run), adopt)
        self.drivers[run.workspace] = driver
        driver.save()
        group = await self._the_group()
        group.create_task(self._drive(run.workspace, driver), name=f"work-run-{run.id}")

    async def _start_point(self, root: str) -> tuple[str, str]:
        try:
            return await git.start_point(root)
        except git.GitError as exc:
            raise Conflict(f"plugkit work needs a git repository on a branch: {exc}") from None

    async def settle_dead(self) -> list[str]:
        """At boot: each run that was live when the last runner died is resumed (runner/core/work/
        resume.py), or, where it cannot be, ended as it ended (killed/runner_restarted) with its
        items in_progress in .prd back to pending: `prd list`, `work status` and the page say
        the same from the first moment."""
        settled = []
        for root in await asyncio.to_thread(self.store.live_roots):
            run = self.latest(root)
            if run is None or root in self.drivers:
                continue
            try:
                ws = self.gates.workspace("plugkit-work", root)
                if root in self._resuming:
                    await self._resume(ws, run, self._resuming.pop(root))
                else:
                    await self._release_stale(ws, run, await self.gates.read(ws, item_ops.prd_list))
            except Exception as exc:  # a workspace gone or unreadable: its run file says what happened
                log.warning("work_dead_run_not_settled", workspace=root, error=str(exc)[:200])
                if run.ended_at is None:
                    self._halt_dead(run, f"resuming failed: {str(exc)[:200]}")
                    self.store.save(run)
                continue
            settled.append(root)
            log.warning("work_dead_run_settled", run=run.id, workspace=root, resumed=root in self.drivers)
        return settled

    async def _resume(self, ws, run: Run, cut: list[ItemRun]) -> None:
        if run.sandbox:  # fails closed, as at start
            await check_sandbox(self.home)
        env = self.store.read_side(run, "env")
        refs = self.store.read_side(run, "refs")
        await self._launch(ws, run, dict(env) if isinstance(env, dict) else {}, None,
                           refs if isinstance(refs, dict) else None, cut)

    async def _release_stale(self, ws, old: Optional[Run], listing) -> None:
        """Items a dead run left in_progress go back to pending: nobody works on them now."""
        if old is None:
            return
        ours = {i for i, it in old.items.items() if it.state != "completed"}
        for item in listing.items:
            if item.id in ours and item.status == "in_progress":
                await self.gates.set_status(ws, item.id, "pending")

    async def _the_group(self) -> asyncio.TaskGroup:
        if self._owner is None:
            self._owner = asyncio.create_task(self._own(), name="work-runs")
        await self._group_ready.wait()
        assert self._group is not None
        return self._group

    async def _own(self) -> None:
        async with asyncio.TaskGroup() as group:
            self._group = group
            self._group_ready.set()
            await asyncio.Event().wait()  # until close() cancels it: the group then ends every run

    async def _drive(self, root: str, driver: RunDriver) -> None:
        """One run, as a child of the group: its bug is logged, never a sibling run's end."""
        try:
            await driver.drive()
        except Exception:
            log.exception("work_run_error", workspace=root)
        finally:
            self.drivers.pop(root, None)
            run = self.runs.get(root)
            if run is not None:
                log.info("work_run_ended", run=run.id, state=run.state, halt=run.halt)
            driver.ended.set()

    def root_of(self, session_id: str, cwd: str) -> str:
        """The workspace whose runs cwd sees: inside a worker's worktree, the run's own."""
        worker = self._worker_of(cwd)
        return worker[0].workspace if worker is not None else self.gates.workspace(session_id, cwd).root

    def run_of(self, session_id: str, cwd: str) -> Run:
        root = self.root_of(session_id, cwd)
        run = self.latest(root)
        if run is None:
            raise NotFound("no plugkit work run in this workspace yet; `plugkit work` starts one")
        return run

    async def wait(self, run: Run, timeout_s: float) -> None:
        """Until the run halts, waits for a person, or ends (or the timeout)."""
        driver = self.drivers.get(run.workspace)
        deadline = self.clock() + timeout_s
        if driver is not None and run.state != "running":
            # Waiting for a person who may just have answered (`plugkit approve`): the driver looks
            # again now, so the wait follows the resumed run instead of the stale line.
            await driver.look_again(min(2.0, timeout_s))
        if driver is None:
            return
        try:
            async with asyncio.timeout(max(0.0, deadline - self.clock())):
                await driver.until(lambda r: r.ended_at is not None or r.state != "running")
        except TimeoutError:
            pass

    async def stop(self, session_id: str, cwd: str) -> Run:
        run = self.run_of(session_id, cwd)
        driver = self.drivers.get(run.workspace)
        if driver is None:
            raise Conflict(f"no live run to stop: run {run.id} is already {run.state} (`plugkit work status`)")
        await driver.attempts.stop_all("stopped")
        driver.wake.set()
        await driver.ended.wait()
        return run

    def item(self, run: Run, item_id: str) -> ItemRun:
        it = run.items.get(item_id)
        if it is None:
            earlier = self.past.holding(run.workspace, item_id, run.id)
            where = (f"; it was in run {earlier.id}: add --run {earlier.id}" if earlier is not None
                     else " (`plugkit work status` lists them)")
            raise NotFound(f"no item {item_id} in run {run.id}{where}")
        return it

    rollback = person.rollback  # a person's moves on a run (runner/core/work/person.py)
    allow_check = person.allow_check
    resume_budget = budget.resume  # a person raises a spent budget (runner/core/work/budget.py)
    metering = budget.meter_of  # a worker attempt by its telemetry secret (runner/http/otlp.py)
    telemetry = budget.record  # what that attempt's OTLP export says it spent
    budget_stop = budget.stop_line  # the hook's answer to a worker of a paused run

    # --- workers, as the hooks see them ---------------------------------------------------------

    def _register(self, worktree: str, it: ItemRun) -> None:
        run = next(r for r in self.runs.values() if it in r.items.values())
        self._worktrees[os.path.realpath(worktree)] = (run, it, self.drivers[run.workspace].attempts)

    def _unregister(self, worktree: Optional[str]) -> None:
        if worktree is not None:
            found = self._worktrees.pop(os.path.realpath(worktree), None)
            if found is not None:  # its telemetry secret dies with the attempt
                budget.drop_meters(self, found[1])

    def _worker_of(self, cwd: str) -> Optional[tuple[Run, ItemRun, Attempts]]:
        if not self._worktrees:
            return None
        real = os.path.realpath(cwd)
        for root, found in self._worktrees.items():
            if real == root or real.startswith(root + os.sep):
                return found
        return None

    def owner_of(self, cwd: str) -> Optional[ItemRun]:
        """The live worker whose worktree holds cwd (no heartbeat counted)."""
        found = self._worker_of(cwd)
        return found[1] if found is not None else None

    @property
    def has_workers(self) -> bool:
        return bool(self._worktrees)

    async def worker_calling(self, peer: tuple, port: int, home: str) -> Optional[tuple[Run, ItemRun]]:
        """The live worker whose process (or a task it ran) holds the connection from `peer`, else None."""
        task_id, session_id = await asyncio.to_thread(caller_task, peer, port, home)
        return self.worker_of_task(task_id, session_id)

    def worker_of_task(self, task_id: Optional[int], session_id: Optional[str]) -> Optional[tuple[Run, ItemRun]]:
        """The live worker whose task this is: the worker itself (its task id), or a task it ran
        through the runner (the worker's own session)."""
        for run, it, _attempts in self._worktrees.values():
            if (task_id is not None and task_id == it.task_id) or (session_id and session_id == it.session_id):
                return run, it
        return None

    def refused(self, run: Run, it: ItemRun, what: str) -> None:
        """A worker's call on what is not its own, refused: kept on its item for a person to read."""
        it.note_refused(what)
        self.journal(run).refused(it, what)
        self.store.save(run)
        log.warning("work_worker_refused", run=run.id, item=it.id, call=what[:300])

    def worker_at(self, cwd: str, beat: bool = True) -> Optional[tuple[Run, ItemRun]]:
        """The live worker whose worktree holds cwd, its heartbeat counted (unless `beat` is
        False: a call from another session there is not the worker's sign of life); None elsewhere."""
        found = self._worker_of(cwd)
        if found is None:
            return None
        run, it, attempts = found
        if beat:
            attempts.beat(it)
            self.journal(run).boot(it)
        return run, it

    def traced(self, it: ItemRun) -> Optional[RunJournal]:
        """The journal of the live run `it` belongs to (a worker's tool call or exec: is recorded there)."""
        for run, other, _attempts in self._worktrees.values():
            if other is it:
                return self.journal(run)
        return None

    async def close(self, keep_live: bool = False) -> None:
        """Every live run ended here and recorded halted; with keep_live (a runner restart in
        place) left live on disk as a crash would leave it, so the next runner resumes it."""
        for driver in self.drivers.values():
            driver.attempts.kept_live = keep_live
        if self._owner is not None:
            self._owner.cancel()
            await asyncio.gather(self._owner, return_exceptions=True)
        if keep_live:
            return
        for run in self.runs.values():
            if run.ended_at is None or run.state in ("running", "waiting"):
                run.enter("halted", "the runner stopped during this run; `plugkit work` starts a new one "
                                    "(landed items stay)", run.ended_at or self.clock())
                self.store.save(run)

    def snapshot(self) -> dict:
        return {"runs": [r.snapshot() for r in self.runs.values()], "workers": len(self._worktrees)}
