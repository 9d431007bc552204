"""The page's live updates: a version number that moves when what the page shows changes
(tasks, `plugkit work` runs, gate and plan writes), pushed over server-sent events; the page
refetches the API when it moves.

The change is found by a fingerprint of the runner's in-memory state, taken every TICK_S
only while at least one page listens: a runner nobody watches does no work for the page, and
the request path of /rpc is untouched."""

import asyncio
from typing import Any, Optional

from runner.rpc.context import Context

TICK_S = 0.5
KEEPALIVE_S = 15.0  # a comment line now and then: proxies and the browser see the stream alive
# RPC namespaces whose writes change a gate or a plan (counted, so the gates are refetched).
GATED = frozenset({"gate", "prd", "mutable", "evidence", "approval", "hook"})
READS = (".status", ".list", ".show", ".context", ".logs", ".check", ".ready", ".search", ".query")


class Watcher:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.version = 0
        self.listeners = 0
        self.closed = False
        self._seen: Optional[int] = None
        self._moved = asyncio.Event()
        self._ticker: Optional[asyncio.Task] = None

    def fingerprint(self) -> int:
        ctx = self.ctx
        tasks = tuple((t.id, t.state, t.bytes_out) for t in ctx.tasks.all_tasks())
        manager = ctx.work.peek() if ctx.work is not None else None
        runs: tuple[Any, ...] = () if manager is None else tuple(
            (r.id, r.state, r.halt, manager.journal(r).seq,
             tuple((i.id, i.state, i.attempt, i.task_id, i.verify, i.landed,
                    i.last_beat_at, len(i.refused)) for i in r.items.values()))
            for r in manager.runs.values())
        writes = sum(n for method, n in ctx.runtime.requests.items()
                     if method.partition(".")[0] in GATED and not method.endswith(READS))
        return hash((tasks, runs, writes))

    def _tick(self) -> None:
        seen = self.fingerprint()
        if seen != self._seen:
            self._seen = seen
            self.version += 1
            moved, self._moved = self._moved, asyncio.Event()
            moved.set()

    async def _run(self) -> None:
        while not self.closed and self.listeners:
            self._tick()
            await asyncio.sleep(TICK_S)

    def listen(self) -> None:
        self.listeners += 1
        self._tick()  # the first listener sees now's version, not the one from when nobody watched
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.get_running_loop().create_task(self._run())

    def leave(self) -> None:
        self.listeners -= 1

    async def next(self, version: int, timeout_s: float) -> int:
        """The version once it differs from `version` (or timeout_s passed: the same one)."""
        if self.version == version and not self.closed:
            moved = self._moved
            try:
                await asyncio.wait_for(moved.wait(), timeout_s)
            except asyncio.TimeoutError:
                pass
        return self.version

    async def close(self) -> None:
        self.closed = True
        moved, self._moved = self._moved, asyncio.Event()
        moved.set()
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
