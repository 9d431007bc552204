"""The runner's subsystems as aiohttp cleanup_ctx entries. The composition root built every
part; a lifespan starts what it owns, registers its debug snapshots, and on shutdown stops
it (aiohttp runs them in reverse order)."""

import asyncio
import os
import time
from dataclasses import asdict
from typing import Any, AsyncIterator, Awaitable, Callable, Optional

from aiohttp import web

from plugkit.lazy import Lazy

from runner.core.tasks.sweeper import stop_adopted, sweep_loop
from runner.rpc.context import Context
from runner.system import kill as kill_mod
from runner.system import logs, spool, subreaper
from runner.system.handover import Handover
from runner.system.ledger_worker import LedgerWorker
from runner.core.tasks.records import TAIL_BYTES

log = logs.get("plugkit.services")

Lifespan = Callable[[web.Application], AsyncIterator[None]]


def tasks_lifespan(ctx: Context, ledger: LedgerWorker, handover: Optional[Handover] = None) -> Lifespan:
    """The ledger, the sweeper, and on shutdown every task tree. `handover`: the running tasks
    this runner's previous image handed over (an in-place restart), adopted before anything
    else so the ledger and the spool keep them."""

    async def lifespan(app: web.Application) -> AsyncIterator[None]:
        rt, manager, stats = ctx.runtime, ctx.tasks, ctx.sweeper
        moved = await ledger.start()
        if moved:
            log.error("ledger_corrupt_moved_aside", moved_to=moved)
        spool_dir = os.path.join(rt.home, "spool")
        manager.spool_dir = spool_dir
        kept = frozenset(manager.adopt(handover.tasks, log.warning)) if handover is not None else frozenset()
        if handover is not None:
            log.info("tasks_kept_across_restart", task_ids=sorted(kept), cut=handover.cut)
        lost = await ledger.mark_lost(time.time(), keep=kept)
        if lost:
            log.warning("tasks_lost_with_previous_runner", task_ids=lost)
        spooled = await asyncio.to_thread(spool.recover, spool_dir, TAIL_BYTES, keep=kept)
        for task_id in lost:
            if task_id in spooled:  # what it printed up to the crash
                await ledger.record_output(task_id, *spooled[task_id])
        await asyncio.to_thread(spool.clear, spool_dir, kept)
        await ledger.evict(time.time())
        providers = {
            "sessions": lambda: manager.snapshot()["sessions"],
            "tasks": lambda: manager.snapshot()["tasks"],
            "executors": lambda: {e.name: e.snapshot() for e in manager.executors},
            "reaper": lambda: dict(asdict(stats), boot=rt.boot_reap),
            "tasks_by_end_state": lambda: dict(manager.finished_counts),
        }
        ctx.snapshots.update(providers)
        # Tags-only mode (no cgroup per task): untagged escapees are held to their tasks by adoption.
        # Only a subreaper adopts: elsewhere (a runner composed inside a test process) a child in
        # another session is one the host process spawned, not a task's orphan.
        adopt = subreaper.is_subreaper() and not any(
            getattr(e, "isolation", "tags") == "cgroup2" for e in manager.executors)
        sweeper = asyncio.create_task(sweep_loop(manager, rt.runner_id, stats, ctx.config.limits.sweep_interval_s,
                                                 adopt=adopt), name="sweeper")
        try:
            yield
        finally:
            sweeper.cancel()
            await asyncio.gather(sweeper, return_exceptions=True)
            await manager.shutdown()
            # Anything tagged by this runner that escaped its task's kill goes now.
            await asyncio.to_thread(kill_mod.kill_runner_tasks, rt.runner_id, grace_s=0.2)
            if adopt:  # and every orphan adopted from a task, tagged or not
                await stop_adopted(manager, rt.runner_id, 0.2)
            await ledger.close()
            for name in providers:
                ctx.snapshots.pop(name, None)

    return lifespan


def lazy_part_lifespan(ctx: Context, name: str, part: "Lazy[Any] | None",
                       stop: Callable[[Any], Awaitable[None]]) -> Lifespan:
    """A part built on first use (the gates, `plugkit work`): shown in debug.snapshot under
    `name` while the runner lives, stopped on shutdown only if it was ever built."""

    async def lifespan(app: web.Application) -> AsyncIterator[None]:
        if part is not None:
            ctx.snapshots[name] = lambda: part.get().snapshot() if part.built else {"loaded": False}
        try:
            yield
        finally:
            ctx.snapshots.pop(name, None)
            if part is not None and part.built:
                await stop(part.get())

    return lifespan


def gates_lifespan(ctx: Context) -> Lifespan:
    """The gates own no background work (a verify run's outcome is read when next asked
    for, from the task or the ledger): their lifespan only shows them and closes their sqlite
    ledger. Listed after the tasks' lifespan, so it stops before the TaskManager does."""

    async def close(gates: Any) -> None:
        gates.close()

    return lazy_part_lifespan(ctx, "gates", ctx.gates, close)


def work_lifespan(ctx: Context) -> Lifespan:
    """`plugkit work` runs: on shutdown each live run is recorded as halted (its workers are
    killed with every other task right after), so the next runner shows what happened."""

    async def close(work: Any) -> None:
        await work.close()

    part = lazy_part_lifespan(ctx, "work", ctx.work, close)

    async def lifespan(app: web.Application) -> AsyncIterator[None]:
        # A run the last runner left live (killed -9, OOM): settled in the background, so the
        # port is bound first; only a runner with such a marker builds the work part at boot.
        home = ctx.runtime.home
        settle = None
        if ctx.work is not None and home and os.path.isdir(os.path.join(home, "work", "live")) \
                and os.listdir(os.path.join(home, "work", "live")):
            settle = asyncio.get_running_loop().create_task(_settle(ctx), name="work-settle-dead")
        parts = part(app)
        await parts.__anext__()
        yield
        if settle is not None and not settle.done():
            settle.cancel()
            await asyncio.gather(settle, return_exceptions=True)
        async for _ in parts:  # the part's own shutdown
            pass

    return lifespan


async def _settle(ctx: Context) -> None:
    from runner.core.work import containers  # with the work engine: built only when a run needs it

    # First, what the dead runner's workers made through a container engine (work_docker): its
    # attempts got no teardown. Objects of this home labelled with another runner go.
    try:
        await containers.sweep_dead(ctx.runtime.home)
    except Exception:  # never the runner's end, nor the runs' settling
        logs.get("plugkit.work").exception("work_docker_sweep_failed")
    try:
        await ctx.work_manager().settle_dead()
    except Exception:  # never the runner's end: the run's file still says what happened
        logs.get("plugkit.work").exception("work_settle_failed")


def hosted_lifespan(ctx: Context) -> Lifespan:
    """The attempts hosted for a remote supervisor (runner/core/work/hosted.py): on shutdown
    their capabilities are revoked and their relays closed (a new runner hosts none of them)."""

    async def lifespan(app: web.Application) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if ctx.hosted is not None:
                ctx.hosted.close()
                await asyncio.sleep(0)  # the relays' cancelled pipes end on this turn of the loop

    return lifespan
