"""Token and cost caps on a run and on each of its items, counted from the workers' own
telemetry (OTLP on the runner's HTTP: runner/http/otlp.py; names: plugkit/work/telemetry.py).

A cap spent pauses the run (`paused`, its halt line saying which cap): no attempt starts, and
each running worker is stopped at its next tool call (the hook denies it, then the attempt
ends `paused/budget_spent` with its branch and its worktree kept as the worker left it,
uncommitted changes too; never a failed pass). The run waits for a person to raise the cap
(`plugkit work resume --budget-tokens N`, judged like an approval: an agent or a worker is
refused); each paused item's next attempt then goes on in that worktree, told so (as after a
usage limit: quota.reenter), judged from the same base; what lands is still only the commit
the check passed. A stop ends a paused item and removes its worktree (its branch stays).
WorkManager's methods, bound there.

A per-day cap (--budget-day-tokens, --budget-day-cost, or work_day_tokens / work_day_cost in
.plugkit/config.toml, the lower of the two) counts the workspace's spend on the person's local
day over every run (runner/core/work/days.py, kept in the runner's home across restarts). It
pauses the run as the others do; the run resumes by itself when the day rolls over (the
driver's tick), or sooner when a person raises it (`plugkit work resume --budget-day-tokens N`).
"""

import asyncio
import hmac
import secrets
import time
from typing import Any, Optional

from plugkit.refusals import Conflict, Forbidden, Invalid
from plugkit.work import telemetry
from runner.core.work import days, git
from runner.core.work.model import ItemRun, Run
from runner.core.work.otlp import Meter
from runner.system import logs, peers

# WorkManager and Attempts are named, not imported: manager and drive import this module (no cycle).
WorkManager = Attempts = Any

log = logs.get("plugkit.work")

# cap name -> (whose spend: the run's, each item's or the workspace's today, which spend, how it is shown)
CAPS: dict[str, tuple[str, str, str]] = {
    "tokens": ("run", "tokens", "--budget-tokens"),
    "cost": ("run", "cost", "--budget-cost"),
    "item_tokens": ("item", "tokens", "--item-budget-tokens"),
    "item_cost": ("item", "cost", "--item-budget-cost"),
    "item_min": ("item", "minutes", "--item-budget-min"),  # its workers' wall time, summed over attempts
    "day_tokens": ("day", "tokens", "--budget-day-tokens"),  # the workspace's, every run of the local day
    "day_cost": ("day", "cost", "--budget-day-cost"),
}
DAY_CAPS = days.DAY_CAPS
assert DAY_CAPS == tuple(c for c, (whose, _w, _f) in CAPS.items() if whose == "day")
KEPT = "kept at a budget pause"  # ItemRun.quota_note of a paused attempt: its worktree stays (attempt._tidy)
DAY_SPENT = "the workspace spent "  # how a day cap's line starts (a run paused on it renews at midnight)
TELEMETRY_CAPS = ("tokens", "cost")  # what only the workers' own telemetry can count


def refusal(worker: str, caps: dict[str, float], runtime: str) -> Optional[str]:
    """Why these caps cannot be held for this worker (refused at start, never silently ignored)."""
    why = _refusal(worker, caps, runtime)
    if why and any(c in DAY_CAPS for c in caps):  # it may be the workspace's, not the caller's
        why += " (a day cap also comes from work_day_tokens / work_day_cost in .plugkit/config.toml)"
    return why


def _refusal(worker: str, caps: dict[str, float], runtime: str) -> Optional[str]:
    if not caps:
        return None
    row = telemetry.ROWS.get(worker)
    flags = ", ".join(CAPS[c][2] for c in caps)
    if runtime != "local":
        return f"{flags}: a {runtime} run's workers report to their node's runner; budgets need --runtime local"
    counted = [c for c in caps if CAPS[c][1] in TELEMETRY_CAPS]
    flags = ", ".join(CAPS[c][2] for c in counted)
    if counted and (row is None or not row.reports_tokens):
        return (f"{flags}: the {worker} worker's telemetry cannot be pointed at the runner by its environment, "
                "so nothing it spends would be counted; drop the cap or pick another --worker")
    costs = [c for c in caps if CAPS[c][1] == "cost"]
    if costs and not row.reports_cost:
        return (f"{', '.join(CAPS[c][2] for c in costs)}: no price is known for the {worker} worker's model "
                "(it does not report its cost); cap its tokens instead (--budget-tokens N)")
    return None


def spent(run: Run) -> tuple[int, float]:
    return sum(i.tokens for i in run.items.values()), sum(i.cost for i in run.items.values())


def _amount(what: str, x: float) -> str:
    return f"{int(x)} tokens" if what == "tokens" else f"{x:.2f} min" if what == "minutes" else f"${x:.4f}"


def tripped(run: Run, running_s: Optional[dict[str, float]] = None, now: Optional[float] = None) -> Optional[str]:
    """The first cap spent, in a line; None while every cap holds. `running_s`: item -> how long
    its live worker has run so far (its ended attempts are in worker_s); `now`: whose local day
    the day caps count (a day over counts nothing)."""
    tokens, cost = spent(run)
    running_s = running_s or {}
    now = time.time() if now is None else now
    for name, limit in run.caps.items():
        whose, what, flag = CAPS[name]
        if whose == "day":
            used = days.today(run.day_spend, now)[0 if what == "tokens" else 1]
            if used >= limit:
                return (f"{DAY_SPENT}{_amount(what, used)} today ({days.day_of(now)}) of its {flag} "
                        f"{_amount(what, limit)}; it renews at local midnight "
                        f"({time.strftime('%Y-%m-%d %H:%M %Z', time.localtime(days.next_day(now)))})")
        elif whose == "run":
            used = tokens if what == "tokens" else cost
            if used >= limit:
                return f"the run spent {_amount(what, used)} of its {flag} {_amount(what, limit)}"
        else:
            for it in run.items.values():
                used = (it.tokens if what == "tokens" else it.cost if what == "cost"
                        else (it.worker_s + running_s.get(it.id, 0.0)) / 60)
                if used >= limit:
                    return f"{it.id} spent {_amount(what, used)} of its {flag} {_amount(what, limit)}"
    return None


def halt_line(why: str) -> str:
    if why.startswith(DAY_SPENT):
        flag = next(CAPS[c][2] for c in DAY_CAPS if CAPS[c][2] in why)
        return (f"budget: {why}; paused (worktrees and branches kept): the run resumes by itself then, or a person "
                f"raises the cap with `plugkit work resume {flag} N`")
    return (f"budget: {why}; paused (worktrees and branches kept): a person raises the cap with `plugkit work resume "
            "--budget-tokens N` (or --budget-cost, --item-budget-tokens, --item-budget-cost, --budget-day-tokens, "
            "--budget-day-cost)")


def deny_line(run: Run) -> str:
    return (f"plugkit work: the run's budget is spent ({(run.halt or '').removeprefix('budget: ').split(';')[0]}); "
            "this call is refused and your attempt ends here; your commits and this worktree (uncommitted "
            "changes too) are kept, and the next attempt continues in it once the budget allows")


# --- the driver's (the tasks it owns) ---------------------------------------------------------

async def end_paused(attempts: Attempts, it: ItemRun) -> None:
    """A spent budget ends the worker at the tool call the hook refused: not a failure, not a stop."""
    task = attempts.live.get(it.id)
    if task is not None:
        await attempts.p.tasks.end(task, "killed", "paused")


async def end_paused_items(attempts: Attempts) -> None:
    """A stop (or the wall-clock budget) ends what a spent budget paused: back to pending in .prd."""
    for it in attempts.run.items.values():
        if it.state == "paused":
            if it.quota_note is not None and it.worktree is not None:  # kept for a resume that will not come
                try:
                    await git.remove_worktree(attempts.p.ws.root, it.worktree)
                except git.GitError:
                    pass  # the branch holds the committed work; a stale worktree is pruned next time
            it.quota_note = None
            it.enter("killed", attempts.p.clock(), "stopped", f"the run ended while it was paused ({it.message})")
            await attempts.prd_status(it, "pending")
            attempts.changed.set()


def resumed(it: ItemRun, why: str) -> None:
    """A paused item's next attempt (the run goes on: `why`): in the worktree its paused attempt
    left, told so; where none was kept (it paused before it started), from its branch's tip."""
    stopped = (f"the run's budget was spent during your attempt {it.attempt}: your tool call was refused "
               f"and the attempt ended; {why}")
    if it.quota_note is not None:
        it.quota_note = (f"{stopped}\nyour commits on {it.branch} are kept, and what you had not committed is "
                         "still in this worktree (`git status`): continue the item")
    else:
        it.interrupted = stopped  # resume.recover: a fresh worktree at its branch's tip
        it.worktree = None  # removed when its last attempt ended: nothing of it left to judge again


# --- WorkManager's methods ------------------------------------------------------------------

def meter_env(m: WorkManager, run: Run, it: ItemRun) -> dict[str, str]:
    """A worker attempt's telemetry variables, with a secret of its own (only with caps set)."""
    if not run.caps:
        return {}
    secret = secrets.token_urlsafe(32)
    m.meters[secret] = (run, it, Meter(telemetry.ROWS[run.worker].names))
    return telemetry.env_for(run.worker, f"http://127.0.0.1:{m.port}", secret)


def drop_meters(m: WorkManager, it: ItemRun) -> None:
    for secret in [s for s, (_r, i, _m) in m.meters.items() if i is it]:
        del m.meters[secret]


def meter_of(m: WorkManager, secret: str):
    """The attempt holding `secret`: each one compared in constant time (no timing oracle)."""
    found = None
    for known, entry in list(m.meters.items()):
        if hmac.compare_digest(known.encode(), secret.encode()):
            found = entry
    return found


def record(m: WorkManager, attempt: tuple, signal: str, payload: object) -> None:
    """An OTLP export from a worker attempt (meter_of's answer): its spend counted, the run paused
    when a cap is spent. ValueError: not an OTLP/JSON export."""
    run, it, meter = attempt
    spend = meter.metrics(payload) if signal == "metrics" else meter.logs(payload)
    if spend.model:
        it.model = spend.model
    if not spend:
        return
    it.tokens += spend.tokens
    it.cost += spend.cost
    now = m.clock()
    run.day_spend = m.days.add(run.workspace, now, spend.tokens, spend.cost)  # on disk: a restart keeps the day
    driver = m.drivers.get(run.workspace)
    if pause(run, tripped(run, now=now)) and driver is not None:
        driver.wake.set()
    m.store.save(run)


def pause(run: Run, why: Optional[str]) -> bool:
    """The run paused on the cap `why` names (None: every cap holds); True when it just did."""
    if why is None or run.state not in ("running", "waiting"):
        return False
    run.enter("paused", halt_line(why))
    log.warning("work_run_paused", run=run.id, why=why)
    return True


def check_clock(attempts: Attempts, now: float) -> tuple[bool, bool]:
    """The driver's tick: (the run changed, a day cap renewed). An item's wall-clock cap
    (--item-budget-min), its live worker counted; a day cap spent already at the start (the
    day's earlier runs); a new local day, which renews a run paused on a day cap."""
    run = attempts.run
    if not any(c == "item_min" or c in DAY_CAPS for c in run.caps):
        return False, False
    changed = False
    if run.day_spend and run.day_spend.get("date") != days.day_of(now):  # another day: its spend starts at 0
        run.day_spend = {"date": days.day_of(now), "tokens": 0, "cost": 0.0}
        changed = True
    live = {i: now - task.started_at for i, task in attempts.live.items()}
    why = tripped(run, live, now)
    if renews(run, why):
        run.enter("running", None)
        log.warning("work_run_renewed", run=run.id, day=days.day_of(now))
        return True, True
    return pause(run, why) or changed, False


def renews(run: Run, why: Optional[str]) -> bool:
    """A run paused on a day cap goes on once no cap is spent (`why` None): its day rolled over."""
    return run.state == "paused" and why is None and (run.halt or "").startswith(f"budget: {DAY_SPENT}")


def stop_line(m: WorkManager, it: object, end: bool = True) -> Optional[str]:
    """The hook's deny line for a worker of a paused run (its attempt is then ended, unless `end`
    is False); None else (a hosted worker, a Ray node's, is not this runner's to budget)."""
    run = next((r for r in m.runs.values() if r.items.get(getattr(it, "id", "")) is it), None)
    if run is None or run.state != "paused" or not isinstance(it, ItemRun):
        return None
    driver = m.drivers.get(run.workspace)
    if driver is not None and end:
        driver.pause_worker(it)
    return deny_line(run)


async def resume(m: WorkManager, session_id: str, cwd: str, caps: dict[str, float], peer: Optional[tuple],
                 port: int, runner_pid: int) -> Run:
    """A person raises the caps of a paused run (or sets them on a live one): judged like an approval."""
    run = m.run_of(session_id, cwd)
    who = await asyncio.to_thread(peers.caller, peer, port, runner_pid)
    verdict = m.gates.desk.judge(run.workspace, f"budget-{run.id}", who)
    if not verdict.ok or who is None:
        log.warning("work_resume_refused", run=run.id, why=verdict.reason, chain=list(who.chain) if who else None)
        raise Forbidden(f"work resume refused: {verdict.reason}. A person raises a budget from their own "
                        "terminal: `plugkit work resume --budget-tokens N`")
    driver = m.drivers.get(run.workspace)
    if driver is None or run.ended_at is not None:
        raise Conflict(f"run {run.id} is {run.state}, not live: `plugkit work` starts a new one")
    why = refusal(run.worker, {**run.caps, **caps}, run.runtime)
    if why:
        raise Invalid(why)
    if not caps and run.state != "paused":
        raise Conflict(f"run {run.id} is {run.state}, not paused: nothing to resume")
    run.caps.update(caps)
    still = tripped(run, now=m.clock())
    if still is not None:
        m.store.save(run)
        raise Conflict(f"still spent: {still}; raise that cap above it")
    if run.state == "paused":
        run.enter("running", None)
        driver.unpause()
        log.warning("work_run_resumed", run=run.id, caps=run.caps, by=who.user)
    m.store.save(run)
    return run
