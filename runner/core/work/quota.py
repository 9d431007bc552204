"""Waiting out a usage limit (issue 47 #2): a worker whose host says the model's usage or rate limit
stopped it, with a reset time (plugkit/work/limits.py reads each host's message), is parked.

- Parked (`waiting_quota/quota`), its attempt over: it holds no slot of the run (ItemRun.active
  is false), so the other items go on; the run stays running while it waits.
- Its worktree stays as the worker left it (uncommitted changes too): the attempt's tidy-up
  skips it, the next attempt goes on in it, judged from the same base, its prompt told where it
  stopped. At the reset (and once a slot is free) it is resumed: not a failed pass (`failures`
  untouched; `quota_waits` counts it).
- A limit with no reset time, a reset past MAX_WAIT_S or past the run's --budget-min: held
  (`blocked/usage_limit`), the message naming when to retry. `work stop` or the budget ends a
  parked item as it ends a running one; an unattended run that halts holds it (no new attempt
  starts in a halting run). `--no-quota-wait` (Run.quota_wait false): none of this,
  the attempt fails as before (worker_exit / no_commits).
"""

import asyncio
import os
import time
from typing import Any, Optional, Protocol

from plugkit.work import limits
from runner.core.tasks.task import Task
from runner.core.work import git
from runner.core.work.model import Failed, ItemRun, Run


class Attempts(Protocol):
    """What of runner/core/work/attempt.py's Attempts a wait reads (a port: attempt imports this module)."""

    run: Run
    p: Any  # its Plumbing: tasks, ws, clock
    stopping: Optional[str]
    halting: Optional[str]
    woken: asyncio.Event
    changed: asyncio.Event  # set: the driver saves the run and looks again (drive.py)

MAX_WAIT_S = 24 * 3600.0  # a reset further away than this is a person's call, not a wait
MARGIN_S = 1.0  # after the reset: the host's clock and ours differ a little
TAIL_BYTES = limits.TAIL_CHARS
SLOT_POLL_S = 1.0  # a resumed item waits for a free slot (the driver frees one when an attempt ends)


class Parked(Failed):
    """The attempt ended on a usage limit with a reset: the item waits, its worktree kept."""

    def __init__(self, message: str) -> None:
        super().__init__("waiting_quota", "quota", message)


def when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def _tail(attempts: Attempts, task: Task) -> str:
    res = attempts.p.tasks.read(task, max(0, task.buffer.end - TAIL_BYTES), TAIL_BYTES)
    return "".join(text for _stream, text in res.chunks)


async def judge(attempts: Attempts, it: ItemRun, task: Task) -> None:
    """After a worker that failed (or stopped without commits): Parked, or a held Failed, when its
    output's tail says its host hit a usage limit; nothing otherwise (the caller fails it as before)."""
    run, now = attempts.run, attempts.p.clock()
    if not run.quota_wait:
        return
    limit = limits.detect(run.worker, _tail(attempts, task), now)
    if limit is None:
        return
    retry = f"`plugkit prd update {it.id} --status pending && plugkit work --items {it.id}`"
    said = f"{limit.host or 'its host'} hit a usage limit (\"{limit.line[:160]}\")"
    if limit.reset_at is None:
        raise Failed("blocked", "usage_limit", f"{said} and named no reset time; once it resets: {retry}")
    if limit.reset_at - now > MAX_WAIT_S:
        raise Failed("blocked", "usage_limit", f"{said}; it resets at {when(limit.reset_at)}, more than "
                                               f"{MAX_WAIT_S / 3600:g} h away; then: {retry}")
    if run.deadline is not None and limit.reset_at >= run.deadline:
        raise Failed("blocked", "usage_limit", f"{said}; it resets at {when(limit.reset_at)}, past the run's "
                                               f"budget (--budget-min {run.budget_min:g}); then: {retry}")
    assert it.base is not None and it.branch is not None
    ahead = await git.commits_ahead(attempts.p.ws.root, it.base, f"refs/heads/{it.branch}")
    it.quota_until = limit.reset_at + MARGIN_S
    it.quota_note = (f"your host hit its usage limit at {when(now)} (\"{limit.line[:160]}\"); plugkit waited "
                     f"until it reset at {when(limit.reset_at)}\n"
                     f"your branch {it.branch} has {ahead} commit(s) past its base; what you had not "
                     "committed is still in this worktree (`git status`): continue the item")
    message = f"parked until {when(it.quota_until)}: {said}; resumed then in the same worktree"
    it.enter("waiting_quota", now, "quota", message)
    raise Parked(message)


async def wait_out(attempts: Attempts, it: ItemRun) -> Optional[Failed]:
    """Until the reset and a free slot: None, the item back to spawning for its next attempt; or,
    when the run is stopped, its budget ends or it halts meanwhile, the end it gets (worktree removed)."""
    run, clock = attempts.run, attempts.p.clock
    assert it.quota_until is not None
    attempts.changed.set()  # its attempt ended: the driver saves, looks again, gives its slot to another item
    while not attempts.stopping and not attempts.halting:
        left = it.quota_until - clock()
        busy = sum(1 for i in run.items.values() if i.active) >= run.parallel
        if left <= 0 and not busy:
            break
        try:  # woken by work stop / the budget (Attempts.stop_all), else when the time comes
            await asyncio.wait_for(attempts.woken.wait(), left if left > 0 else SLOT_POLL_S)
        except asyncio.TimeoutError:
            pass
    if attempts.stopping or attempts.halting:
        if it.worktree is not None:
            try:
                await git.remove_worktree(attempts.p.ws.root, it.worktree)
            except git.GitError:
                pass  # the branch holds the committed work; a stale worktree is pruned next time
        it.quota_note = None
        if attempts.stopping == "budget":
            return Failed("timed_out", "budget", "the run's budget ran out while it waited out a usage limit")
        if attempts.stopping:
            return Failed("killed", "stopped", "the run was stopped while it waited out a usage limit")
        return Failed("blocked", "usage_limit", f"the unattended run halts ({attempts.halting}); its host's usage "
                                                f"limit resets at {when(it.quota_until)}; then: `plugkit prd update "
                                                f"{it.id} --status pending && plugkit work --items {it.id}`")
    it.quota_waits += 1
    it.enter("spawning", clock(), "quota", f"resumed after the usage limit reset at {when(it.quota_until)} "
                                           "(not counted as a failure)")
    return None


async def reenter(root: str, it: ItemRun) -> Optional[tuple[str, str]]:
    """For the attempt after a wait: (its base, "") to go on in the worktree it left, or (its base,
    its branch's tip) to add it again (a person removed it meanwhile); None for any other attempt."""
    if it.quota_note is None or it.base is None or it.branch is None:
        return None
    if it.worktree is not None and os.path.isdir(it.worktree):
        return it.base, ""
    return it.base, await git.tip(root, f"refs/heads/{it.branch}")


def still_going(items: list[ItemRun]) -> str:
    """The run's line while items wait out a usage limit ("" when none does)."""
    parked = [i for i in items if i.state == "waiting_quota"]
    if not parked:
        return ""
    return "; ".join(f"{i.id} waits out a usage limit until {when(i.quota_until or 0)}" for i in parked)
