"""The runner's subsystems as aiohttp cleanup_ctx entries: each starts, registers its
manager in the RPC context, and on shutdown stops what it owns (in reverse order)."""

import asyncio
import time
from dataclasses import asdict
from typing import AsyncIterator

from aiohttp import web

from plugkit import paths
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
    ledger = LedgerWorker(lambda: Ledger(paths.ledger_file(rt.home),
                                         retention_s=limits.ledger_retention_s,
                                         max_rows=limits.ledger_max_rows))
    moved = await ledger.start()
    if moved:
        log.error("ledger_corrupt_moved_aside", moved_to=moved)
    lost = await ledger.call("mark_lost", time.time())
    if lost:
        log.warning("tasks_lost_with_previous_runner", task_ids=lost)
    await ledger.call("evict", time.time())
    executors = registry.build(registry.ExecutorContext(runner_id=rt.runner_id, home=rt.home, limits=limits))
    manager = TaskManager(executors, limits, ledger=ledger)
    stats = SweepStats()
    ctx.services["tasks"] = manager
    ctx.services["sweeper"] = stats
    providers = {
        "sessions": lambda: _sessions(manager),
        "tasks": lambda: [_task_row(t) for t in manager.registry.all_tasks()],
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


def _sessions(manager: TaskManager) -> list[dict]:
    now = manager.registry.clock()
    return [{"session_id": s.key.session_id, "cwd": s.key.cwd,
             "idle_s": round(now - s.last_activity, 3), "tasks": sorted(s.tasks)}
            for s in manager.registry.sessions()]


def _task_row(t) -> dict:
    return {"task_id": t.id, "session_id": t.session.session_id, "lang": t.lang, "state": t.state,
            "pid": t.pid, "age_s": round(time.time() - t.started_at, 3),
            "bytes_out": t.bytes_out, "dropped": t.buffer.dropped}
