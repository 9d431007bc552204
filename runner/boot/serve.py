"""Boot and shutdown: lock, bind, serve, write the discovery files, clean up on signal."""

import asyncio
import json
import os
import secrets
import signal
import socket
import sys
import time
from typing import Any, Callable

from aiohttp import web

from plugkit import paths
from plugkit.config import RunnerConfig
from runner.boot.compose import compose
from runner.boot.handover import Restarter
from runner.http import conn_guard
from runner.http.keys import CONTEXT
from runner.system import logs
from runner.system import socket_owner, subreaper
from runner.system.handover import Handover
from runner.system.reaper import ReapReport

log = logs.get("plugkit.server")


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


async def serve(sock: "socket.socket | Callable[[], socket.socket]", config: RunnerConfig, runner_id: str,
                boot_reap: "ReapReport | None" = None, lock: Any = None,
                handover: "Handover | None" = None) -> None:
    """lock: the instance lock (an in-place restart hands its fd on); handover: what this
    runner's previous image handed over (its token and tasks), None for a fresh start."""
    # Orphaned grandchildren of tasks are re-parented to us, not to init, so the
    # sweeper can reap them and nothing a task starts escapes our accounting.
    subreaper.become_subreaper()
    loop = asyncio.get_running_loop()
    if sys.version_info < (3, 12):
        # 3.11's default watcher starts a thread per child; pidfds cost one fd and
        # no thread (3.12+ picks pidfds by itself). Ours also tells the sweeper which
        # zombies are asyncio's to wait for.
        watcher = subreaper.tracking_watcher()
        watcher.attach_loop(loop)
        asyncio.set_child_watcher(watcher)
    # Kept across an in-place restart: a client that read the token file before it keeps working.
    token = handover.token if handover is not None else secrets.token_urlsafe(32)
    logs.add_secret(token)
    app = compose(config, token, runner_id, handover=handover)
    ctx = app[CONTEXT]
    runtime, home, port = ctx.runtime, config.home, config.port
    if boot_reap is not None:
        runtime.boot_reap = {"dead_runners": len(boot_reap.runners), "killed": boot_reap.killed,
                             "survivors": len(boot_reap.survivors),
                             "ms": round(boot_reap.elapsed_s * 1000, 1)}
    ctx.snapshots["locks"] = lambda: {
        "instance": {"path": paths.instance_lock(home), "held_by": runtime.pid},
        "start": {"path": paths.start_lock(home), "held_by_clients_only": True}}
    # Who may hold a connection, and for how long a half-sent request (runner/http/conn_guard.py).
    guard = conn_guard.make_guard(socket_owner.owner_uid)
    ctx.snapshots["connections"] = guard.snapshot
    # aiohttp serves the app (startup, requests, cleanup), each connection admitted by the guard;
    # sock, when a callable, binds the port only once the startup is done (conn_guard.serve).
    app_runner = await conn_guard.serve(app, sock, guard)
    if isinstance(getattr(lock, "fd", None), int) and app_runner.server.sockets:
        runtime.restart = Restarter(ctx, app_runner.server.sockets[0].fileno(), lock.fd, token).restart
    # The handlers go in before the discovery files: a client that reads the port file may signal
    # us at once (a loaded machine can stop this process between the write and the next line).
    def told_to_stop() -> None:
        ctx.tasks.stopping()  # first: a task the same signal's sender also hit ends as killed with us
        runtime.shutdown.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, told_to_stop)
        # The loop runs told_to_stop only a pass after it reads the signal off its self-pipe. A
        # runner not on a CPU when kill-port signals it and then its tree (a loaded machine) gets
        # the task's exit from a select that returned before the signal was delivered, and with
        # no await left on the way to the task's end, the task ended first as 'failed sig 15'.
        # The interpreter runs this handler at the main thread's next bytecode once the signal
        # is delivered: before the loop looks at what that select returned.
        signal.signal(signum, lambda _signum, _frame: ctx.tasks.stopping())
    # Token first, port last: a client that sees the port file can read the token.
    paths.write_private(paths.token_file(home), token)
    paths.write_private(paths.port_file(home), json.dumps({"port": port, "pid": runtime.pid}))
    log.info("runner_started", pid=runtime.pid, port=port, home=home,
             runner_id=runtime.runner_id, boot_ms=round((time.time() - runtime.started_at) * 1000, 1))
    try:
        await runtime.shutdown.wait()
    finally:
        # Discovery files go first so no new client dials a closing runner.
        _remove(paths.port_file(home))
        _remove(paths.token_file(home))
        log.info("runner_stopping")
        await app_runner.cleanup()
        log.info("runner_stopped")
