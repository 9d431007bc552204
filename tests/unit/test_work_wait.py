"""A caller waiting on a `plugkit work` run (`work --wait`, `work status --wait`) wakes on the
driver's next save, not on a poll: RunDriver.until against a real driver, a stub for attempts."""

import asyncio
from types import SimpleNamespace

from runner.core.work.drive import RunDriver
from runner.core.work.model import Run


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
