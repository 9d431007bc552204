"""The ledger's journal (runner/system/ledger_journal.py): task records appended before the answer,
committed in batches, and replayed by the next start when a runner died in between."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from runner.system import ledger_worker
from runner.system.ledger import Ledger
from runner.system.ledger_worker import LedgerWorker
from tests.support.load import stretched
from tests.support.ledger_records import NOW, ROOT, done, path, rec  # noqa: F401  (path: the fixture)



async def _committed(path: str, task_id: int, within_s: float):
    """What another connection reads of task_id once a commit holds it (None: none within_s)."""
    deadline = asyncio.get_running_loop().time() + within_s
    while True:
        with Ledger(path) as other:
            got = other.get(task_id)
        if got is not None or asyncio.get_running_loop().time() > deadline:
            return got
        await asyncio.sleep(ledger_worker.HOLD_S)


def journal_files(path: str) -> list[str]:
    return sorted(p.name for p in Path(path).parent.glob(Path(path).name + ".journal-*"))


async def test_journaled_records_are_read_back_at_once_and_committed_in_batches(path):
    worker = LedgerWorker(lambda: Ledger(path), journal=path)
    await worker.start()
    try:
        for task_id in range(1, 301):  # past HOLD_MAX: one batch goes before the timer
            worker.record_start(rec(task_id))
            worker.record_end(done(task_id, output_tail=f"#{task_id}"))
        # A read is a job: the records held for the batch go before it.
        assert await worker.get(300) == done(300, output_tail="#300")
        await worker.flush()
        assert [await worker.get(t) for t in (1, 150)] == [done(1, output_tail="#1"), done(150, output_tail="#150")]
        assert len(journal_files(path)) == 1  # committed files are gone; the current one is empty
        assert os.path.getsize(Path(path).parent / journal_files(path)[0]) == 0
        worker.record_start(rec(301))
        # The timer commits it with nothing awaited: it hands the batch to the worker's thread,
        # which commits when it gets a CPU (beside CPU hogs, well after any fixed sleep).
        assert await _committed(path, 301, stretched(10)) == rec(301)
    finally:
        await worker.close()
    assert journal_files(path) == []


def crash_after_journaling(path: str) -> None:
    """Another process journals three records and dies (os._exit) before any batch is committed."""
    script = (
        "import asyncio, os, sys\n"
        "from runner.system.ledger import Ledger, TaskRecord\n"
        "from runner.system.ledger_worker import LedgerWorker\n"
        "async def main():\n"
        "    w = LedgerWorker(lambda: Ledger(sys.argv[1]), journal=sys.argv[1])\n"
        "    await w.start()\n"
        "    w.record_start(TaskRecord(1, 's', '/w', 'bash', 'x', 'running', 1.0))\n"
        "    w.record_end(TaskRecord(1, 's', '/w', 'bash', 'x', 'completed', 1.0, 2.0, 0, None, 'exit_zero',\n"
        "                            None, 5, 0, 'done\\n'))\n"
        "    w.record_start(TaskRecord(2, 's', '/w', 'bash', 'x', 'running', 1.5))\n"
        "    os._exit(0)\n"
        "asyncio.run(main())\n"
    )
    subprocess.run([sys.executable, "-c", script, path], cwd=ROOT, check=True, timeout=30)


async def test_a_dead_runners_journal_is_replayed_by_the_next_start(path):
    crash_after_journaling(path)
    with Ledger(path) as led:
        assert led.get(1) is None  # nothing reached sqlite: only the journal has them
    assert journal_files(path)
    worker = LedgerWorker(lambda: Ledger(path), journal=path)
    await worker.start()
    try:
        first = await worker.get(1)
        assert (first.state, first.exit_code, first.output_tail) == ("completed", 0, "done\n")
        assert (await worker.get(2)).state == "running"  # the boot's mark_lost ends it as lost
        assert await worker.mark_lost(NOW) == [2]
    finally:
        await worker.close()
    assert journal_files(path) == []


async def test_a_replay_skips_a_torn_line_and_never_undoes_an_end(path):
    with Ledger(path) as led:
        led.record_end(done(7))
    dead = 2 ** 22 + 1  # above pid_max's default: no live process has it
    journal = Path(f"{path}.journal-{dead}-170000000000-00000001")
    journal.write_text('["start",7,"s1","/w","python","' + "ab" * 32 + '","running",1700000000.0,null,null,null,null,'
                       'null,0,0,""]\n["end",8,"s1"')  # a start replayed after its end; a line cut by the crash
    worker = LedgerWorker(lambda: Ledger(path), journal=path)
    await worker.start()
    try:
        assert await worker.get(7) == done(7)
        assert await worker.get(8) is None
    finally:
        await worker.close()
    assert not journal.exists()


async def test_a_journal_of_a_live_process_is_never_replayed_and_one_of_a_recycled_pid_is(path):
    # Two workers of one home in one process (an in-process test's runners): neither takes the
    # other's file; a file named with this pid but another start time is a dead process's.
    first = LedgerWorker(lambda: Ledger(path), journal=path)
    await first.start()
    first.record_start(rec(1))
    [live] = [Path(path).parent / name for name in journal_files(path)]
    recycled = Path(f"{path}.journal-{os.getpid()}-1-00000001")
    recycled.write_text(live.read_text())
    second = LedgerWorker(lambda: Ledger(path), journal=path)
    await second.start()
    try:
        assert not recycled.exists() and await second.get(1) == rec(1)  # replayed by the start
        # The live worker's file is still its own: there, unless that worker committed its batch
        # and moved past it itself (under load its thread may have; its content is then in the ledger).
        assert live.exists() or first._journal.prefix and first._journal._seq > 1
        await first.flush()
    finally:
        await first.close()
        await second.close()
    assert journal_files(path) == []
