"""One run's scheduler: waves of ready items, at most `parallel` workers at once, halts.

The loop re-reads the `.prd` (through the gates, so its rules hold: blockers completed, a
person's approval for critical items) every time a worker ends and at least every second,
starts what is ready into free slots, and settles the run's state: running, waiting (for a
person's approval), halted (AFK: it never guesses), done, stopped. Each item's own
lifecycle is runner/core/work/attempt.py: the driver starts it into its TaskGroup, awaits its
end, then saves and looks again; a change an attempt makes mid-way it signals by an event
(Attempts.changed), which the driver saves. No hook of the driver's is set on the attempts.
"""

import asyncio
from typing import Callable, Optional

from plugkit.lifecycle import item_ops
from plugkit.refusals import Refused
from runner.core.work import budget, quota
from runner.core.work.attempt import Attempts
from runner.core.work.journal import RunJournal
from runner.core.work.model import ItemRun, Run

TICK_S = 1.0


class RunDriver:
    def __init__(self, run: Run, attempts: Attempts, save: Callable[[Run], None],
                 clock: Callable[[], float], earlier: Optional[dict[str, ItemRun]] = None,
                 journal: Optional[RunJournal] = None, adopt: Optional[list[ItemRun]] = None) -> None:
        self.run, self.attempts, self._save, self.clock = run, attempts, save, clock
        self._adopt = list(adopt or [])  # items of a run resumed after a crash: their attempts start at once
        self.journal = journal  # told of every item's move and the run's: the run's events
        self.earlier = earlier or {}  # the previous run's items: why one it left blocked is blocked
        self.wake = asyncio.Event()
        self._final: Optional[tuple[str, Optional[str]]] = None  # the end _step decided, entered by drive()
        self._group: Optional[asyncio.TaskGroup] = None  # owns the attempts while drive() runs
        self.workers: dict[str, asyncio.Task] = {}  # item -> its attempt (owned by the group): which still run
        self.passes = 0  # how many times the loop looked at the .prd
        self.looked = asyncio.Event()
        self.ended = asyncio.Event()  # set once drive() and its tidy-up are over (work stop waits on it)
        # Set, then replaced, on every save: a caller waiting on the run wakes on a change, never polls.
        self._changed = asyncio.Event()
        if journal is not None:  # a resumed run's items, read back from its file
            for it in run.items.values():
                it.moved = journal.observe_item

    # --- the loop ------------------------------------------------------------------------

    async def drive(self) -> None:
        try:
            # The group owns every attempt: leaving it waits for those still tidying up (their
            # worktree) after they reached their state; a cancellation (the runner stopping) ends
            # them with the loop. An attempt never fails the group: run_item ends a bug visibly.
            async with asyncio.TaskGroup() as group:
                self._group = group
                saver = group.create_task(self._save_changes(), name=f"work-save-{self.run.id}")
                for it in self._adopt:
                    self._start(it)
                while not await self._step():
                    self._observe()
                    self.wake.clear()
                    try:
                        await asyncio.wait_for(self.wake.wait(), self._tick())
                    except asyncio.TimeoutError:
                        pass
                saver.cancel()  # what the attempts still tidying up change, the save below writes
            # Only now, every attempt's tidy-up (worktree, branch) over: a run that says it ended
            # has nothing of it left to change (`work status` then `git branch` must agree).
            if self._final is not None:
                self.run.enter(*self._final, self.clock())
        finally:
            self._group = None
            if self.run.ended_at is None and not self.attempts.kept_live:  # kept live: resumed by the next runner
                self.run.ended_at = self.clock()
            self.save()

    def _tick(self) -> float:
        deadline = self.run.deadline
        return TICK_S if deadline is None else max(0.01, min(TICK_S, deadline - self.clock()))

    async def look_again(self, timeout_s: float) -> None:
        """Until the loop made one more pass (or the timeout): a caller's wait starts from fresh state."""
        seen = self.passes
        self.wake.set()
        try:
            async with asyncio.timeout(timeout_s):
                while self.passes == seen:
                    self.looked.clear()
                    await self.looked.wait()
        except TimeoutError:
            pass

    async def _step(self) -> bool:
        """One pass; True when the run is over."""
        try:
            return await self._pass()
        finally:
            self.passes += 1
            self.looked.set()

    async def _pass(self) -> bool:
        run = self.run
        deadline = run.deadline
        if deadline is not None and self.clock() >= deadline and not self.attempts.stopping:
            await self.attempts.stop_all("budget")
        changed, renewed = budget.check_clock(self.attempts, self.clock())  # --item-budget-min, a day cap
        if renewed:
            self.unpause("the day's budget renewed at local midnight")
        elif changed:
            self.save()
        if self.attempts.stopping:
            # Ended workers still finish their attempt (state, .prd status, worktree) first.
            if any(not t.done() for t in self.workers.values()):
                return False
            await budget.end_paused_items(self.attempts)  # a stop ends what a spent budget paused
            if self.attempts.stopping == "budget":
                left = [i.id for i in run.items.values() if i.state != "completed"]
                return await self._finish("halted", f"the budget of {run.budget_min:g} min ran out; "
                                                    f"not completed: {', '.join(left) or 'none'}")
            return await self._finish("stopped", None)
        try:
            listing = await self.attempts.listing()
        except Refused as exc:
            if not self._active():
                return await self._finish("halted", f".prd cannot be read: {exc.message}")
            return False
        self._sync(listing)
        if self.attempts.halting is None and run.state != "paused":  # a spent budget starts nothing new
            self._start_ready(listing)
        return await self._settle(listing)

    def _sync(self, listing: item_ops.Listing) -> None:
        """Items of the run as the .prd has them now (a person may add or edit items)."""
        run = self.run
        run.waves = listing.waves
        wanted = set(run.selected) if run.selected else None
        for item in listing.items:
            if (wanted is None or item.id in wanted) and item.id not in run.items and item.status != "completed":
                run.items[item.id] = ItemRun(id=item.id, subject=item.subject, risk=item.risk)
                if self.journal is not None:
                    run.items[item.id].moved = self.journal.observe_item
            if item.id in run.items:
                it = run.items[item.id]
                it.subject, it.risk = item.subject, item.risk
                self._held(it, item.status)

    def _held(self, it: ItemRun, status: str) -> None:
        """An item blocked in .prd (an earlier run held it, or a person) says why and how to retry,
        and is queued again once a person re-queues it."""
        if it.state == "queued" and status == "blocked":
            prev = self.earlier.get(it.id)
            why = (prev.message or prev.reason or "").split("\n", 1)[0] if prev and prev.state == "blocked" else ""
            it.enter("blocked", self.clock(), "held", f"blocked ({why[:300] or 'blocked in .prd'}): "
                                                      f"`plugkit prd update {it.id} --status pending` to retry")
        elif it.state == "blocked" and it.reason == "held" and status == "pending":
            it.enter("queued", self.clock())

    def _active(self) -> list[ItemRun]:
        return [i for i in self.run.items.values() if i.active]

    def _start_ready(self, listing: item_ops.Listing) -> None:
        by_id = {i.id: i for i in listing.items}
        now = self.clock()
        for it in self.run.items.values():
            if len(self._active()) >= self.run.parallel:
                return
            item = by_id.get(it.id)
            if it.state not in ("queued", "waiting") or item is None or item.status != "pending":
                continue
            if any(by_id[b].status != "completed" for b in item.blocked_by if b in by_id):
                continue
            if item.risk == "critical" and item.id not in listing.approvals:
                if it.state != "waiting":
                    it.enter("waiting", now, "needs_approval",
                             f"critical: a person approves it first (the user runs `plugkit approve {it.id}`)")
                continue
            it.enter("spawning", now)
            it.phase("trigger", now)
            self._start(it)

    async def _settle(self, listing: item_ops.Listing) -> bool:
        run = self.run
        items = list(run.items.values())
        active = self._active()
        parked = quota.still_going(items)  # parked items hold no slot, but the run waits for them
        halting = self.attempts.halting  # an --afk run halts on an item's end (retry.py's rule)
        if halting is not None:
            if active or parked:
                run.enter("running", f"halting once {len(active)} running worker(s) finish: {halting}")
                self.save()
                return False
            return await self._finish("halted", halting)
        # Paused: until a person raises the cap (budget.resume); running workers end at their next tool call.
        if run.state == "paused":
            if not active and all(i.state == "completed" for i in items):
                return await self._finish("done", None)
            self.save()
            return False
        waiting = [i for i in items if i.state == "waiting"]
        if active or parked:
            run.enter("running", (f"{', '.join(i.id for i in waiting)} wait(s) for a person's approval "
                                  f"(`plugkit approve {waiting[0].id}`)") if waiting else parked or None)
            self.save()
            return False
        if waiting:
            run.enter("halted" if run.afk else "waiting",
                      f"{waiting[0].id} is critical and waits for a person's approval: the user runs "
                      f"`plugkit approve {waiting[0].id}` (the run resumes by itself)")
            self.save()
            return False
        if all(i.state == "completed" for i in items):
            return await self._finish("done", None)
        return await self._finish("halted", "nothing more can run: " + self._stuck(listing))

    def _stuck(self, listing: item_ops.Listing) -> str:
        by_id = {i.id: i for i in listing.items}
        why = []
        for it in self.run.items.values():
            if it.state == "queued":
                item = by_id.get(it.id)
                if item is None:
                    why.append(f"{it.id} is no longer in .prd")
                elif item.status != "pending":
                    why.append(f"{it.id} is {item.status} in .prd")
                else:
                    waits = [b for b in item.blocked_by if b in by_id and by_id[b].status != "completed"]
                    why.append(f"{it.id} waits on {', '.join(waits)}")
            elif it.reason == "held":
                why.append(f"{it.id} {it.message}")
            elif it.state != "completed":
                why.append(f"{it.id} {it.state}/{it.reason}")
        return "; ".join(why)[:600] or "no open items"

    async def _finish(self, state: str, halt: Optional[str]) -> bool:
        """The run's end, entered once the attempts still tidying up are over (drive())."""
        self._final = (state, halt)
        return True

    # --- a spent budget (runner/core/work/budget.py) -------------------------------------------

    def pause_worker(self, it: ItemRun) -> None:
        """Its worker's tool call was just refused: its attempt ends now, owned by the group."""
        if self._group is not None and it.id in self.attempts.live and it.id not in self.attempts.pausing:
            self.attempts.pausing.add(it.id)
            self._group.create_task(budget.end_paused(self.attempts, it), name=f"work-pause-{it.id}")

    def unpause(self, why: str = "a person raised the budget") -> None:
        """A person raised the cap (or a day cap renewed): each paused item's next attempt continues
        on its kept branch."""
        now = self.clock()
        for it in self.run.items.values():
            if it.state == "paused" and self._group is not None:
                budget.resumed(it, why)  # in the worktree its paused attempt left, uncommitted work and all
                it.enter("spawning", now, "budget_spent", f"resumed: {why}")
                self._start(it)
        self.save()
        self.wake.set()

    # --- the attempts: started into the group, their ends and changes saved here ---------------

    def _start(self, it: ItemRun) -> None:
        assert self._group is not None  # only while drive() runs
        self.workers[it.id] = self._group.create_task(self._attempt(it), name=f"work-{it.id}")

    async def _attempt(self, it: ItemRun) -> None:
        """One item's attempts; once they end (or are cancelled with the run) the run is saved and
        the loop looks again at once: the slot is free, or an --afk run halts (attempts.halting)."""
        try:
            await self.attempts.run_item(it)
        finally:
            self.save()
            self.wake.set()

    async def _save_changes(self) -> None:
        """A change an attempt makes mid-way (the landing queue, a placement, a parked item freeing
        its slot) is in the store at once: a restarted runner and `work status` see it."""
        while True:
            await self.attempts.changed.wait()
            self.attempts.changed.clear()
            self.save()
            self.wake.set()

    def _observe(self) -> None:
        if self.journal is not None:
            self.journal.observe(self.run)

    def save(self) -> None:
        self._observe()
        self._save(self.run)
        self._changed.set()
        self._changed = asyncio.Event()

    async def until(self, done: Callable[[Run], bool]) -> None:
        """Until done(run) holds, woken by each change the driver saves (its last save included)."""
        while not done(self.run):
            await self._changed.wait()
