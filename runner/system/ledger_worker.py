"""The ledger's own thread: a Ledger runs on one dedicated worker thread, so sqlite never blocks
the event loop and jobs run in the order they were given. Task records go through the journal
(ledger_journal.py) first: appended at once, committed in batches."""

import asyncio
import concurrent.futures
import logging
from typing import Any, Callable, Optional, TypeVar

from runner.system import ledger_journal
from runner.system.ledger import Ledger, TaskRecord

log = logging.getLogger("plugkit.store")
T = TypeVar("T")
HOLD_S = 0.02  # journaled records reach sqlite this long after the first of a batch
HOLD_MAX = 256  # or at once, past this many


class LedgerWorker:
    """Runs one Ledger on one dedicated thread: sqlite never blocks the event loop, jobs run in order.

    One typed method per Ledger operation: awaited ones answer; fire-and-forget ones (writes
    on the task hot path) are queued in order and a failure is logged, never raised."""

    def __init__(self, ledger_factory: Callable[[], Ledger], journal: Optional[str] = None) -> None:
        """`journal`: the ledger's path, where the journal files go (None: every record is a job)."""
        self._factory = ledger_factory
        self._journal_at = journal
        self._journal: Optional[ledger_journal.Journal] = None  # appended on the loop's thread only
        self._pending: list[tuple[str, TaskRecord]] = []
        self._then: list[Callable[[], None]] = []
        self._timer: Optional[asyncio.TimerHandle] = None
        self._ledger: Optional[Ledger] = None  # read and written on the worker thread only
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="plugkit-ledger")
        self._closed = False

    async def start(self) -> Optional[str]:
        """Open the ledger on the worker thread, replaying what a dead runner left in its journal;
        returns where a corrupt file was moved, if it was."""
        moved = await asyncio.wrap_future(self._pool.submit(self._open))
        if self._journal_at is not None and not self._closed:
            try:
                self._journal = ledger_journal.Journal(self._journal_at)
            except OSError:
                log.exception("ledger journal cannot be opened; records go to sqlite one job each")
        return moved

    def _open(self) -> Optional[str]:
        # Assigned here, not on the loop, so writes submitted while start() awaits already see it.
        self._ledger = self._factory()
        if self._journal_at is not None:  # before this runner's own journal exists
            for path in ledger_journal.left_behind(self._journal_at):
                self._apply(list(ledger_journal.read(path)), [], path)
        return self._ledger.recovered_from

    # --- awaited ------------------------------------------------------------------

    async def reserve_ids(self, count: int) -> int:
        return await self._call(Ledger.reserve_ids, count)

    async def release_ids(self, first_unused: int, block_end: int) -> None:
        await self._call(Ledger.release_ids, first_unused, block_end)

    async def session_tasks(self, session_id: str) -> list[TaskRecord]:
        return await self._call(Ledger.session_tasks, session_id)

    async def get(self, task_id: int) -> Optional[TaskRecord]:
        return await self._call(Ledger.get, task_id)

    async def mark_lost(self, now: float, keep: frozenset[int] = frozenset()) -> list[int]:
        return await self._call(Ledger.mark_lost, now, keep)

    async def evict(self, now: float) -> int:
        return await self._call(Ledger.evict, now)

    async def read_mark(self, task_id: int) -> int:
        return await self._call(Ledger.read_mark, task_id)

    async def record_output(self, task_id: int, tail: str, bytes_out: int) -> None:
        await self._call(Ledger.record_output, task_id, tail, bytes_out)

    # --- queued -------------------------------------------------------------------

    def record_start(self, rec: TaskRecord) -> None:
        if not self._hold("start", rec):
            self._submit(Ledger.record_start, rec)

    def record_end(self, rec: TaskRecord, then: Optional[Callable[[], None]] = None) -> None:
        """`then` runs on the worker once the record is written."""
        if self._hold("end", rec):
            if then is not None:
                self._then.append(then)
            return
        self._submit(Ledger.record_end, rec)
        if then is not None:
            self.after(then)

    def record_read(self, task_id: int, read_out: int) -> None:
        self._submit(Ledger.record_read, task_id, read_out)

    def forget(self, task_ids: list[int]) -> None:
        self._submit(Ledger.forget, task_ids)

    # --- the journal ----------------------------------------------------------------

    def _hold(self, kind: str, rec: TaskRecord) -> bool:
        """Journal the record and hold it for the next batch (False: no journal, submit it)."""
        if self._journal is None:
            return False
        try:
            self._journal.append(kind, rec)
        except OSError:
            log.exception("ledger journal append failed; task_%s goes to sqlite directly", rec.task_id)
            return False
        self._pending.append((kind, rec))
        if len(self._pending) >= HOLD_MAX:
            self._flush()
        elif self._timer is None:
            try:
                self._timer = asyncio.get_running_loop().call_later(HOLD_S, self._flush)
            except RuntimeError:  # no loop running: no batch to wait for
                self._flush()
        return True

    def _flush(self) -> None:
        """Hand the held records to the thread; every other job calls this first, so jobs keep
        the order they were given in."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending and not self._then:
            return
        batch, thens, self._pending, self._then = self._pending, self._then, [], []
        done = None
        try:
            done = self._journal.rotate() if self._journal is not None else None
        except OSError:  # the records stay in the file, replayed (harmlessly twice) at a boot
            log.exception("ledger journal rotation failed")
        try:
            self._pool.submit(self._apply, batch, thens, done)
        except RuntimeError:
            log.error("ledger is closed; %d records were not written", len(batch))

    def _apply(self, batch: list, thens: list, done: Optional[str]) -> None:
        try:
            self._invoke(Ledger.apply, (batch,))
        except Exception:  # the file stays: the next boot replays it
            log.exception("ledger batch of %d records failed", len(batch))
        else:
            if done is not None:
                ledger_journal.remove(done)
        for fn in thens:
            try:
                fn()
            except Exception:
                log.exception("ledger follow-up failed")

    # --- plumbing -----------------------------------------------------------------

    def _submit(self, fn: Callable[..., Any], *args: Any) -> None:
        self._flush()
        try:
            self._pool.submit(self._logged, fn, args)
        except RuntimeError:  # the pool is shut down: the worker was closed
            log.error("ledger is closed; %s was not written", fn.__name__)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        self._flush()
        return await asyncio.wrap_future(self._pool.submit(self._invoke, fn, args))

    def after(self, fn: Callable[[], None]) -> None:
        """Run fn on the worker once every job submitted before it has run."""
        self._flush()
        try:
            self._pool.submit(fn)
        except RuntimeError:  # closed: nothing earlier can still be pending either
            fn()

    async def flush(self) -> None:
        self._flush()
        if not self._closed:  # jobs run in order, so a no-op finishing means every earlier one has
            await asyncio.wrap_future(self._pool.submit(lambda: None))

    def quiesce(self) -> None:
        """Blocking, for the in-place restart's last step: every record committed and the
        journal closed, so the next image (same pid, so its journal has the same name and counts
        this one alive) finds nothing half-done. resume() undoes it should the exec fail."""
        self._flush()
        if self._closed:
            return
        self._pool.submit(lambda: None).result()
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def resume(self) -> None:
        if self._journal_at is not None and self._journal is None and not self._closed:
            try:
                self._journal = ledger_journal.Journal(self._journal_at)
            except OSError:
                log.exception("ledger journal cannot be opened; records go to sqlite one job each")

    async def close(self) -> None:
        if self._closed:
            return
        self._flush()
        self._closed = True
        try:
            # Shielded: a cancelled close must still close the connection after the queued writes.
            await asyncio.shield(asyncio.wrap_future(self._pool.submit(self._close_ledger)))
            if self._journal is not None:
                self._journal.close()  # every batch is committed: its last, empty file goes
        finally:
            self._pool.shutdown(wait=False)  # the thread exits as soon as it reads the sentinel

    def _invoke(self, fn: Callable[..., T], args: tuple) -> T:
        if self._ledger is None:
            raise RuntimeError("the ledger is not open: start() was not awaited, failed, or close() ran")
        return fn(self._ledger, *args)

    def _logged(self, fn: Callable[..., Any], args: tuple) -> None:
        try:
            self._invoke(fn, args)
        except Exception:
            log.exception("ledger %s failed", fn.__name__)

    def _close_ledger(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None
