"""An end record waits HOLD_S before the ledger's thread sees it, and never overtakes or is overtaken."""

import asyncio

import pytest

from runner.system import ledger_worker
from runner.system.ledger import Ledger, TaskRecord
from runner.system.ledger_worker import LedgerWorker

NOW = 1_700_000_000.0


def rec(task_id: int, state: str = "running", **kw) -> TaskRecord:
    return TaskRecord(task_id=task_id, session_id="s", cwd="/w", lang="bash", code_sha256="0" * 64,
                      state=state, started_at=NOW, **kw)


def done(task_id: int) -> TaskRecord:
    return rec(task_id, "completed", ended_at=NOW + 1, exit_code=0, reason="exit_zero")


@pytest.fixture
async def worker(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger_worker, "HOLD_S", 3600.0)  # released only by the calls below
    w = LedgerWorker(lambda: Ledger(str(tmp_path / "ledger.sqlite3")))
    await w.start()
    yield w
    await w.close()


async def test_a_held_end_record_is_written_when_its_timer_fires(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger_worker, "HOLD_S", 0.0)
    w = LedgerWorker(lambda: Ledger(str(tmp_path / "ledger.sqlite3")))
    await w.start()
    try:
        w.record_start(rec(1))
        w.record_end(done(1))
        await asyncio.sleep(0)  # the timer's turn: no other ledger call releases it
        await asyncio.sleep(0)
        assert not w._held
        assert (await w.get(1)).state == "completed"
    finally:
        await w.close()


async def test_a_read_after_the_end_sees_the_end(worker):
    worker.record_start(rec(2))
    worker.record_end(done(2))
    assert (await worker.get(2)).state == "completed"  # released ahead of the read


async def test_a_forget_after_the_end_is_not_undone_by_it(worker):
    worker.record_start(rec(3))
    worker.record_end(done(3))
    worker.forget([3])
    assert await worker.get(3) is None  # the held record went first; the forget stands


async def test_the_follow_up_runs_after_the_record_and_close_writes_what_was_held(worker, tmp_path):
    seen = []
    worker.record_start(rec(4))
    worker.record_end(done(4), then=lambda: seen.append("removed"))
    assert seen == []
    await worker.close()
    assert seen == ["removed"]
    with Ledger(str(tmp_path / "ledger.sqlite3")) as led:
        assert led.get(4).state == "completed"
