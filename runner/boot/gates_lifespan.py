"""The lifecycle gates as an aiohttp cleanup_ctx entry: a GateManager over the TaskManager.

Listed after tasks_service in default_services(), so it starts once the TaskManager exists
and stops before it. The manager owns no background work (a verify run's outcome is read
when next asked for, from the task or the ledger), so stopping only unregisters it.
It is built on first use: the lifecycle model costs tens of milliseconds to import, which
a runner that only runs code should not pay before its first answer.
"""

from typing import Any, AsyncIterator, Callable

from aiohttp import web


class OnFirstUse:
    """Stands in for an object until an attribute is first asked for, then builds it."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._target: Any = None

    @property
    def built(self) -> bool:
        return self._target is not None

    def __getattr__(self, name: str) -> Any:
        if self._target is None:
            self._target = self._build()
        return getattr(self._target, name)


def _gate_manager(tasks: Any, home: str) -> Any:
    from runner.core.gates.manager import GateManager

    return GateManager(tasks, home=home)


async def gates_service(app: web.Application) -> AsyncIterator[None]:
    from runner.http.app import CONTEXT

    ctx = app[CONTEXT]
    tasks = ctx.services["tasks"]
    manager = OnFirstUse(lambda: _gate_manager(tasks, ctx.runtime.home))
    ctx.services["gates"] = manager
    ctx.snapshots["gates"] = lambda: manager.snapshot() if manager.built else {"loaded": False}
    try:
        yield
    finally:
        ctx.services.pop("gates", None)
        ctx.snapshots.pop("gates", None)
