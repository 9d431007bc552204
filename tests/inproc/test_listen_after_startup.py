"""The runner's port takes no connection before the runner can answer it.

The race (tests/e2e/test_work_ray.py's killed supervisor, every time on a loaded machine): a
runner killed -9 leaves its port file; its pid lingers as a zombie, so a client still dials
that port. The restarted runner used to bind and listen before its imports and its startup
(the ledger, the lost tasks): the kernel accepted the client's connection, nobody answered
/health for more than 1.5 s, and the client gave up with "did not answer (wedged)" instead of
waiting for the new runner's port file. Listening starts now once the app has started.
"""

import asyncio
import errno
import socket

import aiohttp
from aiohttp import web

from runner.http import conn_guard
from runner.system import ports, socket_owner
from tests.support.runner_home import free_port


def _dial(port: int) -> int:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port))


async def test_the_port_refuses_connections_until_the_app_has_started():
    port, started, go_on = free_port(), asyncio.Event(), asyncio.Event()
    app = web.Application()

    async def slow_startup(_app: web.Application) -> None:  # the ledger, the lost tasks, imports
        started.set()
        await go_on.wait()

    app.on_startup.append(slow_startup)

    async def health(_request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app.router.add_get("/health", health)
    guard = conn_guard.make_guard(socket_owner.owner_uid)
    serving = asyncio.create_task(conn_guard.serve(app, lambda: ports.bind(port), guard, max_body=1 << 16))
    await started.wait()
    try:
        assert await asyncio.to_thread(_dial, port) == errno.ECONNREFUSED  # a client waits for the port file
    finally:
        go_on.set()
    served = await serving
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/health") as answer:
                assert answer.status == 200
    finally:
        await served.cleanup()
