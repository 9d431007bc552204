"""runner.* — about the daemon itself."""

import asyncio

from plugkit import SERVICE
from plugkit.protocol import NoParams, RestartResult, RunnerInfo, ShutdownResult
from plugkit.refusals import Unavailable
from runner.rpc.dispatch import Context, rpc


@rpc(NoParams)
async def info(ctx: Context, params: NoParams) -> RunnerInfo:
    """runner.info {} -> {service, pid, version, port, home, started_at, uptime_s,
    sessions, tasks, running_tasks, requests, reaper, browser}

    browser: {running, pid, chromium, sandbox: {on, why}} (empty without exec:browser).

    Errors: none beyond the standard ones.
    Example: {"jsonrpc":"2.0","id":1,"method":"runner.info","params":{}}
    """
    rt = ctx.runtime
    counts = ctx.tasks.counts()
    return RunnerInfo(
        service=SERVICE, pid=rt.pid, version=rt.version, port=rt.port, home=rt.home,
        started_at=rt.started_at, uptime_s=round(rt.uptime(), 3),
        sessions=counts["sessions"], tasks=counts["tasks"], running_tasks=counts["running"],
        requests=sum(rt.requests.values()),
        reaper=_reaper_counts(ctx),
        browser=await _browser(ctx),
    )


async def _browser(ctx: Context) -> dict:
    browser = next((e for e in ctx.tasks.executors if e.name == "browser"), None)
    if browser is None:
        return {}
    real = getattr(browser, "real", None)  # built on first use (registry.Deferred): build it now
    return await (real() if real else browser).status()


def _reaper_counts(ctx: Context) -> dict:
    sweep = ctx.sweeper
    counts = {f"boot_{k}": v for k, v in ctx.runtime.boot_reap.items()}
    counts.update(sweeps=sweep.sweeps, strays_killed=sweep.strays_killed,
                  zombies_reaped=sweep.zombies_reaped, idle_sessions_ended=sweep.idle_sessions_ended)
    return counts


@rpc(NoParams)
async def shutdown(ctx: Context, params: NoParams) -> ShutdownResult:
    """runner.shutdown {} -> {stopping: true}

    Answers first, then stops: in-flight responses finish, every task tree is
    killed, the port and token files are removed, the process exits 0.
    """
    # Let this response leave before the server starts closing connections.
    asyncio.get_running_loop().call_later(0.05, ctx.runtime.shutdown.set)
    return ShutdownResult(stopping=True)


@rpc(NoParams)
async def restart(ctx: Context, params: NoParams) -> RestartResult:
    """runner.restart {} -> {restarting: true, pid, kept: [task_id], cut: ["task_7 (browser)"], message}

    The runner re-executes itself in place (the same pid, the installed code read afresh, the
    same port and token): running process tasks keep running, their output and read cursors
    whole; what cannot cross an exec (a browser page, a serial port, a worker, a task still
    compiling) is ended first and named in `cut`. Answers, then execs; runner.info's
    started_at changes once the new image serves.

    Errors: unavailable (-32004 class) when the installed code does not start (nothing was
    restarted) or this runner cannot restart in place.
    Example: {"jsonrpc":"2.0","id":1,"method":"runner.restart","params":{}}
    """
    if ctx.runtime.restart is None:
        raise Unavailable("this runner cannot restart in place; `plugkit runner restart --force` stops and starts it")
    done = await ctx.runtime.restart()
    kept = ", ".join(f"task_{i}" for i in done.kept)
    cut = ", ".join(str(c) for c in done.cut)
    message = (f"kept running: {kept or 'none'}" + (f"; ended (cannot cross a restart): {cut}" if cut else ""))
    return RestartResult(restarting=True, pid=ctx.runtime.pid, kept=done.kept, cut=[str(c) for c in done.cut],
                         message=message)


METHODS = {"runner.info": info, "runner.shutdown": shutdown, "runner.restart": restart}
