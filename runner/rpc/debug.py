"""debug.snapshot — the live registry: everything the runner holds right now.

Subsystems register a snapshot provider in `ctx.snapshots` when they start and
remove it when they stop, so nothing that exists is missing and nothing gone
is listed. The same JSON is served at GET /debug (token required).
"""

import time

from plugkit.protocol import DebugSnapshot, NoParams
from runner.rpc.dispatch import Context, rpc


def build_snapshot(ctx: Context) -> dict:
    rt = ctx.runtime
    snap = {
        "runner": {"pid": rt.pid, "version": rt.version, "uptime_s": round(rt.uptime(), 3),
                   "port": rt.port, "home": rt.home, "runner_id": rt.runner_id},
        "counters": {"requests": dict(rt.requests), "errors": {str(k): v for k, v in rt.errors.items()}},
        "latency": rt.latency.snapshot(),
        "taken_at": time.time(),
    }
    for name, provider in list(ctx.snapshots.items()):
        snap[name] = provider()
    return snap


@rpc(NoParams)
async def snapshot(ctx: Context, params: NoParams) -> DebugSnapshot:
    """debug.snapshot {} -> {runner, sessions, tasks, executors, locks, reaper, counters, latency, ...}

    Keys other than runner/counters/latency come from the subsystems running now.
    """
    return DebugSnapshot(snapshot=build_snapshot(ctx))


METHODS = {"debug.snapshot": snapshot}
