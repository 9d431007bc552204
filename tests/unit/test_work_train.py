"""The landing queue's guesses (runner/core/work/train.py): whose guess an entry starts from, and
that an entry leaving never ends the one behind it, only sends it to the tip as it is."""

import asyncio

from runner.core.work.model import QueueEntry
from runner.core.work.train import Guess, Train, settled


def _entry(item: str, state: str = "waiting") -> QueueEntry:
    return QueueEntry(item=item, attempt=1, sha="a" * 40, green_at=0.0, state=state)


async def test_an_entry_starts_from_what_the_nearest_live_entry_ahead_leaves():
    train, gate = Train(), asyncio.Event()
    landed, a, b = _entry("x", "landed"), _entry("a"), _entry("b")
    queue = [landed, a]
    assert train.ahead(queue, a) is None  # the head: the tip as it is

    async def guess(leaves):
        leaves.set_result("c" * 40)
        await gate.wait()
        return Guess("t" * 40)

    task = train.start(a, guess)
    queue.append(b)
    assert await settled(train.ahead(queue, b)) == "c" * 40  # before a's check ended
    gate.set()
    assert (await settled(task)).base == "t" * 40
    await train.end(a, task)
    assert train.ahead(queue, b) is None  # a's guess went with it


async def test_an_entry_that_leaves_sends_the_one_behind_to_the_tip_not_away():
    train, started = Train(), asyncio.Event()
    a, b = _entry("a"), _entry("b")

    async def stuck(leaves):
        started.set()
        await asyncio.Event().wait()

    task = train.start(a, stuck)
    await started.wait()
    waiting = asyncio.ensure_future(settled(train.ahead([a, b], b)))
    await train.end(a, task)  # a stop, an eviction: its guess cancelled
    assert await waiting is None and task.cancelled()


async def test_a_guess_that_failed_reads_as_none_and_leaves_its_base():
    async def broken():
        raise RuntimeError("a bug")

    assert await settled(asyncio.ensure_future(broken())) is None
    assert await settled(None) is None
    failed = Guess("t" * 40, failed=RuntimeError("conflict"))
    assert failed.after == "t" * 40  # it will be evicted: the tip stays where it was
