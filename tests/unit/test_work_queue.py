"""The landing queue's pure logic (runner/core/work/queue.py): turns in the order entries went
green whatever order they ask in, an entry that leaves unlanded is evicted and never blocks the
next, the kept history is bounded, and an eviction's context is bounded and keeps its end."""

import asyncio
import json

from client.show.work import QUEUE_SHOWN, run_lines
from runner.core.work.model import ItemRun, Run
from runner.core.work.queue import MAX_ENDED, LandingQueue, hunks, tail
from runner.rpc.shapes import work_run


def _run() -> Run:
    return Run(id="r", workspace="/w", worker="command", parallel=3, afk=False, merge="ff", branch="main",
               base="0" * 40, started_at=0.0, stall_min=10.0)


def _queue(run: Run) -> LandingQueue:
    clock = iter(range(1, 10_000))
    return LandingQueue(run, lambda: float(next(clock)), lambda: None)


async def test_turns_follow_the_green_order_and_a_left_entry_is_evicted():
    run = _run()
    q = _queue(run)
    items = [ItemRun(id=f"w{i}", subject="s", attempt=1) for i in range(3)]
    entries = [q.join(it, f"{i}" * 40) for i, it in enumerate(items)]
    order: list[str] = []

    async def land(n: int, fail: bool = False) -> None:
        try:
            async with q.turn(entries[n]):
                order.append(entries[n].item)
                await asyncio.sleep(0)
                if fail:
                    raise RuntimeError("held")
                q.move(entries[n], "landed", "f" * 40)
        except RuntimeError:
            pass

    await asyncio.gather(land(2), land(1, fail=True), land(0))  # asked in the reverse order
    assert order == ["w0", "w1", "w2"]
    assert [e.state for e in run.queue] == ["landed", "evicted", "landed"]
    assert run.queue[1].note == "left the queue without landing"


async def test_eviction_counts_on_the_item_and_history_is_bounded():
    run = _run()
    q = _queue(run)
    it = ItemRun(id="w1", subject="s", attempt=1)
    for _ in range(MAX_ENDED + 5):
        entry = q.join(it, "a" * 40)
        async with q.turn(entry):
            failed = q.evict(entry, it, "conflicts", "x\n" * 5000)
    assert failed.reason == "evicted" and it.evictions == MAX_ENDED + 5
    assert len(run.queue) <= MAX_ENDED + 1 and len(failed.detail.encode()) <= 3200


def test_a_dead_runners_active_entries_are_evicted_at_load():
    run = _run()
    q = _queue(run)
    q.join(ItemRun(id="w1", subject="s", attempt=1), "a" * 40)
    again = Run.from_json(run.to_json())
    _queue(again)
    assert again.queue[0].state == "evicted" and "runner stopped" in (again.queue[0].note or "")


def test_hunks_show_each_conflict_region_with_context_and_tail_keeps_the_end():
    text = "a\nb\nc\n<<<<<<< HEAD\none\n=======\nthree\n>>>>>>> w3\nd\ne\nf\n"
    shown = hunks({"shared.txt": text, "logo.png": ""})
    assert shown.splitlines()[:8] == ["--- shared.txt lines 2-10", "b", "c", "<<<<<<< HEAD", "one", "=======",
                                      "three", ">>>>>>> w3"]
    assert "--- logo.png: conflicts (no text hunks" in shown
    long = "".join(f"line {n}\n" for n in range(2000))
    cut = tail(long, 300)
    assert cut.endswith("line 1999\n") and cut.startswith("... (") and len(cut.encode()) < 340


async def test_work_status_shows_the_latest_queue_entries_bounded_an_eviction_with_its_why():
    run = _run()
    q = _queue(run)
    it = ItemRun(id="w1", subject="s", attempt=1)
    run.items["w1"] = it
    for n in range(QUEUE_SHOWN + 3):
        entry = q.join(it, f"{n % 10}" * 40)
        async with q.turn(entry):
            if n == QUEUE_SHOWN + 2:
                q.evict(entry, it, "conflicts with what landed before it in a.txt", "<<<<<<< x")
            else:
                q.move(entry, "landed", "f" * 40)
    lines = "\n".join(run_lines(json.loads(work_run(run).model_dump_json()))).splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith("  landing queue on main"))
    assert "3 earlier not shown" in lines[at]
    shown = lines[at + 1:]
    assert sum(1 for line in shown if line.startswith("    w1 ")) == QUEUE_SHOWN
    evicted = next(n for n, line in enumerate(shown) if " evicted " in line)
    assert "conflicts with what landed before it in a.txt" in shown[evicted + 1], shown
