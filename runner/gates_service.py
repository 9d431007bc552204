"""The lifecycle gates as an aiohttp cleanup_ctx entry: a GateManager over the TaskManager.

Listed after tasks_service in default_services(), so it starts once the TaskManager exists
and stops before it. The manager owns no background work (a verify run's outcome is read
when next asked for, from the task or the ledger), so stopping only unregisters it.
"""

from typing import AsyncIterator

from aiohttp import web

from runner.gates import GateManager


async def gates_service(app: web.Application) -> AsyncIterator[None]:
    from runner.app import CONTEXT

    ctx = app[CONTEXT]
    manager = GateManager(ctx.services["tasks"])
    ctx.services["gates"] = manager
    ctx.snapshots["gates"] = manager.snapshot
    try:
        yield
    finally:
        ctx.services.pop("gates", None)
        ctx.snapshots.pop("gates", None)
