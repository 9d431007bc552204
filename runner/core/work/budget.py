"""Token and cost caps on a run and on each of its items, counted from the workers' own
telemetry (OTLP on the runner's HTTP: runner/http/otlp.py; names: plugkit/work/telemetry.py).

A cap spent pauses the run (`paused`, its halt line saying which cap): no attempt starts, and
each running worker is stopped at its next tool call (the hook denies it, then the attempt
ends `paused/budget_spent` with its branch kept, never a failed pass). The run waits for a
person to raise the cap (`plugkit work resume --budget-tokens N`, judged like an approval: an
agent or a worker is refused); each paused item's next attempt then continues on its branch
with a note (runner/core/work/resume.py's recovery). WorkManager's methods, bound there.
"""

import asyncio
import hmac
import secrets
from typing import Any, Optional

from plugkit.refusals import Conflict, Forbidden, Invalid
from plugkit.work import telemetry
from runner.core.work.model import ItemRun, Run
from runner.core.work.otlp import Meter
from runner.system import logs, peers

# WorkManager and Attempts are named, not imported: manager and drive import this module (no cycle).
WorkManager = Attempts = Any

log = logs.get("plugkit.work")

# cap name -> (whose spend: the run's or each item's, which spend, how it is shown)
CAPS: dict[str, tuple[str, str, str]] = {
    "tokens": ("run", "tokens", "--budget-tokens"),
    "cost": ("run", "cost", "--budget-cost"),
    "item_tokens": ("item", "tokens", "--item-budget-tokens"),
    "item_cost": ("item", "cost", "--item-budget-cost"),
    "item_min": ("item", "minutes", "--item-budget-min"),  # its workers' wall time, summed over attempts
}
TELEMETRY_CAPS = ("tokens", "cost")  # what only the workers' own telemetry can count


def refusal(worker: str, caps: dict[str, float], runtime: str) -> Optional[str]:
    """Why these caps cannot be held for this worker (refused at start, never silently ignored)."""
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


def tripped(run: Run, running_s: Optional[dict[str, float]] = None) -> Optional[str]:
    """The first cap spent, in a line; None while every cap holds. `running_s`: item -> how long
    its live worker has run so far (its ended attempts are in worker_s)."""
    tokens, cost = spent(run)
    running_s = running_s or {}
    for name, limit in run.caps.items():
        whose, what, flag = CAPS[name]
        if whose == "run":
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
    return (f"budget: {why}; paused (branches kept): a person raises the cap with `plugkit work resume "
            "--budget-tokens N` (or --budget-cost, --item-budget-tokens, --item-budget-cost)")


def deny_line(run: Run) -> str:
    return (f"plugkit work: the run's budget is spent ({(run.halt or '').removeprefix('budget: ').split(';')[0]}); "
            "this call is refused and your attempt ends here; your commits are kept and the next attempt "
            "continues from them once a person raises the cap")


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
            it.enter("killed", attempts.p.clock(), "stopped", f"the run ended while it was paused ({it.message})")
            await attempts.prd_status(it, "pending")
            attempts.changed.set()


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
    driver = m.drivers.get(run.workspace)
    if pause(run, tripped(run)) and driver is not None:
        driver.wake.set()
    m.store.save(run)


def pause(run: Run, why: Optional[str]) -> bool:
    """The run paused on the cap `why` names (None: every cap holds); True when it just did."""
    if why is None or run.state not in ("running", "waiting"):
        return False
    run.enter("paused", halt_line(why))
    log.warning("work_run_paused", run=run.id, why=why)
    return True


def check_clock(attempts: Attempts, now: float) -> bool:
    """The driver's tick: an item's wall-clock cap (--item-budget-min), its live worker counted."""
    if "item_min" not in attempts.run.caps:
        return False
    live = {i: now - task.started_at for i, task in attempts.live.items()}
    return pause(attempts.run, tripped(attempts.run, live))


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
    still = tripped(run)
    if still is not None:
        m.store.save(run)
        raise Conflict(f"still spent: {still}; raise that cap above it")
    if run.state == "paused":
        run.enter("running", None)
        driver.unpause()
        log.warning("work_run_resumed", run=run.id, caps=run.caps, by=who.user)
    m.store.save(run)
    return run
