"""The ledger: ids that never repeat, records that survive restarts, corruption that never stops a boot."""

import logging
import os
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from runner.system import ledger as store
from plugkit.vocab import END_REASONS
from runner.system.ledger import Ledger
from runner.system.ledger_worker import LedgerWorker
from tests.support.ledger_records import NOW, ROOT, done, path, rec  # noqa: F401  (path: the fixture)


def run_and_crash(path: str, block: int) -> int:
    """Reserve a block and record a task in another process that dies without closing anything."""
    script = (
        "import os, sys\n"
        "from runner.system.ledger import Ledger, TaskRecord\n"
        "led = Ledger(sys.argv[1])\n"
        "first = led.reserve_ids(int(sys.argv[2]))\n"
        "led.record_start(TaskRecord(first, 's', '/w', 'python', 'x', 'running', 1.0))\n"
        "print(first, flush=True)\n"
        "os._exit(0)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, path, str(block)], cwd=ROOT,
                         capture_output=True, text=True, check=True, timeout=30)
    return int(out.stdout)


# --- the id sequence -------------------------------------------------------------------------


def test_ids_start_at_one_and_blocks_never_overlap(path):
    with Ledger(path) as led:
        assert led.reserve_ids(1) == 1
        assert led.reserve_ids(10) == 2
        assert led.reserve_ids(1) == 12
        with pytest.raises(ValueError):
            led.reserve_ids(0)


def test_ids_never_repeat_across_reopen(path):
    with Ledger(path) as led:
        led.reserve_ids(5)
    with Ledger(path) as led:
        assert led.reserve_ids(1) == 6


def test_ids_never_repeat_after_a_crash_mid_block(path):
    first = run_and_crash(path, 100)
    assert os.path.exists(path + "-wal")  # the crash left the WAL unmerged
    with Ledger(path) as led:
        assert led.recovered_from is None
        assert led.reserve_ids(1) == first + 100  # the unused rest of the block stays burnt
        assert led.get(first).state == "running"
    second = run_and_crash(path, 10)
    assert second == first + 101


# --- records ---------------------------------------------------------------------------------


def test_records_round_trip_from_start_to_end(path):
    with Ledger(path) as led:
        assert led.get(1) is None
        led.record_start(rec(1, "pending"))
        assert led.get(1) == rec(1, "pending")
        final = done(1, bytes_out=12, dropped=3, output_tail="out\nerr\n", message="task_1 exited with code 0")
        led.record_end(final)
        assert led.get(1) == final
    with Ledger(path) as led:
        assert led.get(1) == final


def test_record_end_without_a_start_still_lands(path):
    with Ledger(path) as led:
        led.record_end(done(7))
        assert led.get(7) == done(7)


def test_record_start_refuses_to_overwrite_an_existing_task(path):
    with Ledger(path) as led:
        led.record_end(done(1))
        with pytest.raises(sqlite3.IntegrityError):
            led.record_start(rec(1))
        assert led.get(1) == done(1)


def test_mark_lost_kills_only_tasks_that_were_live(path):
    with Ledger(path) as led:
        led.record_start(rec(1, "pending"))
        led.record_start(rec(2, "running"))
        led.record_end(done(3))
        assert led.mark_lost(NOW + 50) == [1, 2]
        lost = led.get(2)
        assert (lost.state, lost.reason, lost.ended_at) == ("killed", "runner_lost", NOW + 50)
        assert lost.message == f"task_2 {END_REASONS['runner_lost']}"
        assert led.get(3) == done(3)
        assert led.mark_lost(NOW + 60) == []


def test_output_tail_keeps_the_end_and_never_splits_a_character(path):
    with Ledger(path, tail_bytes=10) as led:
        led.record_end(done(1, output_tail="x" * 100 + "THE END!"))
        assert led.get(1).output_tail == "xxTHE END!"
        led.record_end(done(2, output_tail="short"))
        assert led.get(2).output_tail == "short"
    text = "aé€😀" * 5  # 1-, 2-, 3- and 4-byte characters
    for limit in range(0, len(text.encode()) + 2):
        tail = store._tail(text, limit)
        size = len(tail.encode())
        assert text.endswith(tail)
        assert limit - 3 <= size <= limit or tail == text


def test_output_tail_with_a_lone_surrogate_is_stored(path):
    with Ledger(path) as led:
        led.record_end(done(1, output_tail="ok \ud800 ok"))
        assert led.get(1).output_tail == "ok ? ok"


# --- eviction --------------------------------------------------------------------------------


def test_evicts_finished_records_past_retention_but_never_live_ones(path):
    with Ledger(path, retention_s=100) as led:
        led.record_end(done(1, ended_at=NOW - 200))
        led.record_end(done(2, ended_at=NOW - 50))
        led.record_start(replace(rec(3), started_at=NOW - 10_000))
        assert led.evict(NOW) == 1
        assert led.get(1) is None
        assert led.get(2) is not None and led.get(3) is not None


def test_evicts_oldest_finished_records_beyond_max_rows(path):
    with Ledger(path, max_rows=3) as led:
        led.record_start(rec(1))
        for task_id in range(2, 7):
            led.record_end(done(task_id, ended_at=NOW + 10 - task_id))  # higher id ended earlier
        assert led.evict(NOW) == 3
        assert [t for t in range(1, 7) if led.get(t)] == [1, 2, 3]
        assert led.evict(NOW) == 0


# --- files, modes, corruption ----------------------------------------------------------------


def test_ledger_files_are_private_and_in_wal_mode(path):
    old = os.umask(0)  # even a careless umask must not make the ledger readable by others
    try:
        with Ledger(path) as led:
            led.reserve_ids(1)
            for suffix in ("", "-wal", "-shm"):
                assert stat.S_IMODE(os.stat(path + suffix).st_mode) == 0o600, suffix
    finally:
        os.umask(old)
    probe = sqlite3.connect(path)
    try:
        assert probe.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        probe.close()


def test_loosened_ledger_file_is_tightened_on_open(path):
    Path(path).touch()
    os.chmod(path, 0o644)
    with Ledger(path):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def assert_moved_aside(led: Ledger, path: str, original: bytes) -> None:
    assert led.recovered_from is not None
    assert led.recovered_from.startswith(path + ".corrupt-")
    assert Path(led.recovered_from).read_bytes() == original
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_garbage_ledger_is_moved_aside_and_ids_continue_above_the_clock(path, caplog):
    garbage = os.urandom(8192)
    Path(path).write_bytes(garbage)
    before = int(time.time())
    with caplog.at_level(logging.ERROR, logger="plugkit.store"), Ledger(path) as led:
        assert_moved_aside(led, path, garbage)
        assert led.reserve_ids(1) > before  # nothing was readable: the clock is the floor
        led.record_end(done(1))
        assert led.get(1) == done(1)
    assert "moved it to" in caplog.text
    with Ledger(path) as led:
        assert led.recovered_from is None


def test_truncated_ledger_is_moved_aside_and_ids_continue_after_its_high_water_mark(path):
    with Ledger(path) as led:
        for task_id in range(1, 301):
            led.record_end(done(task_id, output_tail="o" * 500))
        led.reserve_ids(500)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    truncated = Path(path).read_bytes()
    with Ledger(path) as led:
        assert_moved_aside(led, path, truncated)
        assert led.reserve_ids(1) == 501  # exact: the meta page survived the cut
        assert led.get(1) is None


def test_truncated_ledger_without_its_meta_page_or_floor_falls_back_to_the_clock(path):
    with Ledger(path) as led:
        led.reserve_ids(5)
    with open(path, "r+b") as f:
        f.truncate(4096)  # the header and schema only
    os.unlink(path + store.FLOOR_SUFFIX)  # as a ledger written before the floor file existed
    with Ledger(path) as led:
        assert led.recovered_from is not None
        assert led.reserve_ids(1) > int(time.time()) - 60


def test_corrupt_ledger_left_by_a_crash_moves_its_wal_and_shm_too(path):
    first = run_and_crash(path, 3)
    # Both damaged: sqlite reads pages from a valid WAL first, so garbage under it goes unnoticed.
    for name in (path, path + "-wal"):
        Path(name).write_bytes(os.urandom(max(4096, os.path.getsize(name))))
    with Ledger(path) as led:
        assert led.recovered_from is not None
        assert os.path.exists(led.recovered_from + "-wal")
        assert os.path.exists(led.recovered_from + "-shm")
        assert led.reserve_ids(1) > first + 2
        assert led.get(first) is None


def test_two_recoveries_in_one_second_keep_both_files(path):
    moved = set()
    for _ in range(2):
        Path(path).write_bytes(b"\x00garbage" * 100)
        with Ledger(path) as led:
            moved.add(led.recovered_from)
    assert len(moved) == 2 and all(os.path.exists(m) for m in moved)


def test_ledger_from_a_newer_schema_is_set_aside_keeping_its_ids(path):
    with Ledger(path) as led:
        led.reserve_ids(42)
    probe = sqlite3.connect(path, isolation_level=None)
    try:
        probe.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (store.SCHEMA_VERSION + 1,))
    finally:
        probe.close()
    with Ledger(path) as led:
        assert led.recovered_from is not None
        assert led.reserve_ids(1) == 43


class RaisingConnection:
    """Stands in for a connection whose file is busy or unreadable, not corrupt."""

    def __init__(self, code: int) -> None:
        self.code = code

    def execute(self, *_args):
        exc = sqlite3.OperationalError("database is locked")
        exc.sqlite_errorcode = self.code
        raise exc


def test_busy_or_locked_ledger_is_not_mistaken_for_corruption():
    with pytest.raises(sqlite3.OperationalError):
        store._problem(RaisingConnection(sqlite3.SQLITE_BUSY))
    assert store._problem(RaisingConnection(sqlite3.SQLITE_NOTADB)) is not None


# --- LedgerWorker ----------------------------------------------------------------------------


class ThreadNotingLedger(Ledger):
    def __init__(self, *args, **kw) -> None:
        self.threads = {threading.get_ident()}
        super().__init__(*args, **kw)

    def get(self, task_id):
        self.threads.add(threading.get_ident())
        return super().get(task_id)


async def test_worker_applies_submitted_writes_in_order(path):
    worker = LedgerWorker(lambda: Ledger(path))
    assert await worker.start() is None
    try:
        first = await worker.reserve_ids(500)
        for task_id in range(first, first + 500):
            worker.record_start(rec(task_id))
            worker.record_end(done(task_id, output_tail=f"#{task_id}"))
        await worker.flush()
        for task_id in range(first, first + 500):
            assert await worker.get(task_id) == done(task_id, output_tail=f"#{task_id}")
    finally:
        await worker.close()


async def test_worker_runs_sqlite_on_its_own_single_thread(path):
    made = []

    def factory():
        made.append(ThreadNotingLedger(path))
        return made[0]

    worker = LedgerWorker(factory)
    await worker.start()
    try:
        await worker.get(1)
        await worker.get(2)
    finally:
        await worker.close()
    (ledger,) = made
    assert len(ledger.threads) == 1
    assert threading.get_ident() not in ledger.threads


async def test_worker_logs_failed_writes_and_keeps_going(path, caplog):
    worker = LedgerWorker(lambda: Ledger(path))
    await worker.start()
    try:
        with caplog.at_level(logging.ERROR, logger="plugkit.store"):
            worker.record_start(rec(1))
            worker.record_start(rec(1))  # a duplicate: must not stop later writes
            worker.record_end(done(1))
            await worker.flush()
        assert "ledger record_start failed" in caplog.text
        assert await worker.get(1) == done(1)
        with pytest.raises(ValueError):
            await worker.reserve_ids(0)  # awaited calls do raise
        assert not hasattr(worker, "call") and not hasattr(worker, "submit")  # no method by name
    finally:
        await worker.close()


async def test_worker_close_finishes_queued_writes(path, caplog):
    worker = LedgerWorker(lambda: Ledger(path))
    await worker.start()
    for task_id in range(1, 201):
        worker.record_end(done(task_id))
    await worker.close()
    await worker.close()
    await worker.flush()
    with caplog.at_level(logging.ERROR, logger="plugkit.store"):
        worker.record_end(done(999))
    assert "ledger is closed" in caplog.text
    with Ledger(path) as led:
        assert all(led.get(t) for t in range(1, 201))


async def test_worker_reports_a_recovered_ledger(path):
    Path(path).write_bytes(b"garbage" * 1000)
    worker = LedgerWorker(lambda: Ledger(path))
    try:
        assert (await worker.start()).startswith(path + ".corrupt-")
    finally:
        await worker.close()

