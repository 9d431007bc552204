"""The runner's subsystems as aiohttp cleanup_ctx entries: each starts, registers its
manager in the RPC context, and on shutdown stops what it owns (in reverse order)."""

import asyncio
from typing import AsyncIterator

from aiohttp import web

from runner.core.manager import TaskManager
from runner.core.sweeper import SweepStats, sweep_loop
from runner.executors import registry
from runner.system import kill as kill_mod


async def tasks_service(app: web.Application) -> AsyncIterator[None]:
    from runner.app import CONTEXT, RUNTIME

    rt, ctx = app[RUNTIME], app[CONTEXT]
    limits = ctx.services["limits"]
    executors = registry.build(registry.ExecutorContext(runner_id=rt.runner_id, home=rt.home, limits=limits))
    manager = TaskManager(executors, limits)
    stats = SweepStats()
    ctx.services["tasks"] = manager
    ctx.services["sweeper"] = stats
    sweeper = asyncio.create_task(sweep_loop(manager, rt.runner_id, stats, limits.sweep_interval_s), name="sweeper")
    try:
        yield
    finally:
        sweeper.cancel()
        await asyncio.gather(sweeper, return_exceptions=True)
        await manager.shutdown()
        # Anything tagged by this runner that escaped its task's kill goes now.
        await asyncio.to_thread(kill_mod.kill_runner_tasks, rt.runner_id, grace_s=0.2)
        ctx.services.pop("tasks", None)
