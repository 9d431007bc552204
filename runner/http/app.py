"""make_app(ctx): the runner's routes over an already composed Context. Transport only: no
domain logic, and no part of the runner is built here (runner/boot/compose.py does).

The web.Application holds the runner's lifecycle (startup, cleanup) and its Context; the
requests themselves are answered by app[HANDLER] on the runner's own HTTP protocol
(runner/http/wire.py, served by conn_guard.GuardedSite)."""

import json

from aiohttp import web

from plugkit import SERVICE
from runner.http.guards import make_guard
from runner.http.keys import CONTEXT, HANDLER
from runner.http.wire import Request, Response, error
from runner.rpc.context import PEER, Context
from runner.rpc.dispatch import dispatch
from runner.rpc.namespaces import build_methods


def _json(data, status: int = 200) -> Response:
    return Response(status, json.dumps(data).encode())


def make_app(ctx: Context, namespaces: tuple = ()) -> web.Application:
    """`namespaces` adds RPC modules beyond the built-in ones (tests use it)."""
    runtime, limits = ctx.runtime, ctx.config.limits
    check = make_guard(port=runtime.port, token=runtime.token, capabilities=ctx.capabilities)
    methods = build_methods(namespaces)

    async def health(request: Request) -> Response:
        return _json({"ok": True, "pid": runtime.pid, "version": runtime.version, "service": SERVICE})

    async def rpc(request: Request) -> Response:
        try:
            body = request.body.decode()
        except UnicodeDecodeError:
            body = "\0"  # not JSON: reported as a parse error below
        PEER.set(request.peer)  # who is calling, for the methods that must know (approval.grant walks its ancestry)
        response = await dispatch(body, methods, ctx, limits.max_batch)
        if response is None:  # notifications only: nothing to say
            return Response(204, content_type=None)
        return _json(response)

    async def debug(request: Request) -> Response:
        from runner.rpc.debug import build_snapshot

        return _json(build_snapshot(ctx))

    routes = {"/health": ("GET", health), "/debug": ("GET", debug), "/rpc": ("POST", rpc)}

    async def handle(request: Request) -> Response:
        refused = check(request)
        if refused is not None:
            return refused
        route = routes.get(request.path)
        if route is None:
            return error(404, "no such path: /rpc (POST), /health and /debug (GET)")
        method, answer = route
        if request.method != method:
            return error(405, "method not allowed", headers={"Allow": method})
        return await answer(request)

    app = web.Application()
    app[CONTEXT] = ctx
    app[HANDLER] = handle
    return app
