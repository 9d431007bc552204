"""A caller waiting on a `plugkit work` run (`work --wait`, `work status --wait`) wakes on the
driver's next save, not on a poll: RunDriver.until against a real driver, a stub for attempts."""

import asyncio
from types import SimpleNamespace

from runner.core.work.drive import RunDriver
from runner.core.work.model import ItemRun, Run


def a_driver() -> tuple[RunDriver, list]:
    run = Run(id="r1", workspace="/w", worker="command", parallel=1, afk=False, merge="ff", branch="main",
              base="abc", started_at=0.0, stall_min=1.0)
    saved: list = []
    return RunDriver(run, SimpleNamespace(), saved.append, lambda: 5.0), saved


async def test_a_wait_wakes_on_the_save_that_ends_the_run():
    driver, saved = a_driver()
    waiter = asyncio.create_task(driver.until(lambda r: r.ended_at is not None))
    await asyncio.sleep(0.01)
    assert not waiter.done()
    driver.save()  # a change that does not end it: the waiter looks and waits again
    await asyncio.sleep(0.01)
    assert not waiter.done()
    driver.run.enter("done", None, 5.0)
    driver.save()
    await asyncio.wait_for(waiter, 0.05)  # at once: no 0.2 s poll between the save and the wake
    assert len(saved) == 2


async def test_a_wait_on_a_state_already_reached_returns_at_once():
    driver, _ = a_driver()
    driver.run.enter("waiting", "w1 waits for a person")
    await asyncio.wait_for(driver.until(lambda r: r.state != "running"), 0.05)


class Midway:
    """Of attempt.py's Attempts, what the driver reads, for a run being stopped (the driver's own
    passes then save nothing while a worker runs): one item's attempt that changes the run mid-way."""

    def __init__(self, run: Run) -> None:
        self.run, self.stopping, self.halting, self.kept_live, self.live = run, "stopped", None, False, {}
        self.changed, self.midway, self.go_on = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def run_item(self, it: ItemRun) -> None:
        it.enter("running", 1.0)
        self.changed.set()  # as the landing queue or a placement does: saved at once, not at the attempt's end
        self.midway.set()
        await self.go_on.wait()
        it.enter("completed", 2.0, "landed", "landed")


async def test_an_attempts_change_is_saved_while_it_runs_and_its_end_once_it_returns():
    run = Run(id="r1", workspace="/w", worker="command", parallel=1, afk=False, merge="ff", branch="main",
              base="abc", started_at=0.0, stall_min=1.0)
    it = run.items["w1"] = ItemRun(id="w1", subject="one")
    it.enter("spawning", 0.0)
    states: list = []
    attempts = Midway(run)
    driver = RunDriver(run, attempts, lambda r: states.append(r.items["w1"].state), lambda: 5.0, adopt=[it])
    drive = asyncio.create_task(driver.drive())
    await asyncio.wait_for(attempts.midway.wait(), 5)
    await asyncio.wait_for(driver.until(lambda r: "running" in states), 5)  # no hook: the driver saw the event
    attempts.go_on.set()
    await asyncio.wait_for(drive, 5)
    assert states[-1] == "completed" and run.state == "stopped" and driver.workers["w1"].done()
