"""The runner's subsystems as aiohttp cleanup_ctx entries: each starts, registers its
manager in the RPC context, and on shutdown stops what it owns (in reverse order)."""

import asyncio
import os
import time
from dataclasses import asdict
from typing import AsyncIterator

from aiohttp import web

from runner.core.tasks.manager import TaskManager
from runner.core.tasks.sweeper import SweepStats, sweep_loop
from runner.system import logs
from runner.executors import registry
from runner.system.ledger import Ledger, LedgerWorker
from runner.system import kill as kill_mod


log = logs.get("plugkit.services")


async def tasks_service(app: web.Application) -> AsyncIterator[None]:
    from runner.http.app import CONTEXT, RUNTIME

    rt, ctx = app[RUNTIME], app[CONTEXT]
    limits = ctx.services["limits"]
    ledger = LedgerWorker(lambda: Ledger(os.path.join(rt.home, "ledger.sqlite3"),
                                         retention_s=limits.ledger_retention_s,
                                         max_rows=limits.ledger_max_rows))
    moved = await ledger.start()
    if moved:
        log.error("ledger_corrupt_moved_aside", moved_to=moved)
    lost = await ledger.mark_lost(time.time())
    if lost:
        log.warning("tasks_lost_with_previous_runner", task_ids=lost)
    await ledger.evict(time.time())
    executors = registry.build(registry.ExecutorContext(runner_id=rt.runner_id, home=rt.home, limits=limits))
    manager = TaskManager(executors, limits, ledger=ledger)
    stats = SweepStats()
    ctx.services["tasks"] = manager
    ctx.services["sweeper"] = stats
    providers = {
        "sessions": lambda: manager.snapshot()["sessions"],
        "tasks": lambda: manager.snapshot()["tasks"],
        "executors": lambda: {e.name: e.snapshot() for e in manager.executors},
        "reaper": lambda: dict(asdict(stats), boot=rt.boot_reap),
        "tasks_by_end_state": lambda: dict(manager.finished_counts),
    }
    ctx.snapshots.update(providers)
    sweeper = asyncio.create_task(sweep_loop(manager, rt.runner_id, stats, limits.sweep_interval_s), name="sweeper")
    try:
        yield
    finally:
        sweeper.cancel()
        await asyncio.gather(sweeper, return_exceptions=True)
        await manager.shutdown()
        # Anything tagged by this runner that escaped its task's kill goes now.
        await asyncio.to_thread(kill_mod.kill_runner_tasks, rt.runner_id, grace_s=0.2)
        await ledger.close()
        ctx.services.pop("tasks", None)
        for name in providers:
            ctx.snapshots.pop(name, None)

