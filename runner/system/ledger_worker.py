"""The ledger's own thread: a Ledger runs on one dedicated worker thread, so sqlite never blocks
the event loop and jobs run in the order they were given."""

import asyncio
import concurrent.futures
import logging
from typing import Any, Callable, Optional, TypeVar

from runner.system.ledger import Ledger, TaskRecord

log = logging.getLogger("plugkit.store")
T = TypeVar("T")


class LedgerWorker:
    """Runs one Ledger on one dedicated thread: sqlite never blocks the event loop, jobs run in order.

    One typed method per Ledger operation: awaited ones answer; fire-and-forget ones (writes
    on the task hot path) are queued in order and a failure is logged, never raised."""

    def __init__(self, ledger_factory: Callable[[], Ledger]) -> None:
        self._factory = ledger_factory
        self._ledger: Optional[Ledger] = None  # read and written on the worker thread only
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="plugkit-ledger")
        self._closed = False

    async def start(self) -> Optional[str]:
        """Open the ledger on the worker thread; returns where a corrupt file was moved, if it was."""
        return await asyncio.wrap_future(self._pool.submit(self._open))

    def _open(self) -> Optional[str]:
        # Assigned here, not on the loop, so writes submitted while start() awaits already see it.
        self._ledger = self._factory()
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

    async def mark_lost(self, now: float) -> list[int]:
        return await self._call(Ledger.mark_lost, now)

    async def evict(self, now: float) -> int:
        return await self._call(Ledger.evict, now)

    async def record_output(self, task_id: int, tail: str, bytes_out: int) -> None:
        await self._call(Ledger.record_output, task_id, tail, bytes_out)

    # --- queued -------------------------------------------------------------------

    def record_start(self, rec: TaskRecord) -> None:
        self._submit(Ledger.record_start, rec)

    def record_end(self, rec: TaskRecord, then: Optional[Callable[[], None]] = None) -> None:
        """`then` runs on the worker once the record is written."""
        self._submit(Ledger.record_end, rec)
        if then is not None:
            self.after(then)

    def forget(self, task_ids: list[int]) -> None:
        self._submit(Ledger.forget, task_ids)

    # --- plumbing -----------------------------------------------------------------

    def _submit(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            self._pool.submit(self._logged, fn, args)
        except RuntimeError:  # the pool is shut down: the worker was closed
            log.error("ledger is closed; %s was not written", fn.__name__)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.wrap_future(self._pool.submit(self._invoke, fn, args))

    def after(self, fn: Callable[[], None]) -> None:
        """Run fn on the worker once every job submitted before it has run."""
        try:
            self._pool.submit(fn)
        except RuntimeError:  # closed: nothing earlier can still be pending either
            fn()

    async def flush(self) -> None:
        if not self._closed:  # jobs run in order, so a no-op finishing means every earlier one has
            await asyncio.wrap_future(self._pool.submit(lambda: None))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            # Shielded: a cancelled close must still close the connection after the queued writes.
            await asyncio.shield(asyncio.wrap_future(self._pool.submit(self._close_ledger)))
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
