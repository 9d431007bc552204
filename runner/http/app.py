"""make_app(ctx): the runner's routes over an already composed Context. Transport only: no
domain logic, and no part of the runner is built here (runner/boot/compose.py does).

aiohttp serves them: its router, and in front of it the guard (runner/http/guards.py) as a
middleware, so every request, a path that does not exist included, passes the guard first.
conn_guard.serve adds the framing middleware (runner/http/framing.py) in front of both."""

from aiohttp import web

from plugkit import SERVICE
from runner.http.guards import make_guard
from runner.http.keys import CONTEXT
from runner.http.otlp import add_otlp_routes
from runner.http.replies import error, reply
from runner.http.ui_routes import add_ui_routes
from runner.rpc.context import PEER, Context
from runner.rpc.dispatch import dispatch
from runner.rpc.namespaces import build_methods

ROUTES = {"/rpc": "POST", "/health": "GET", "/debug": "GET"}
NO_SUCH_PATH = "no such path: /rpc (POST), /health and /debug (GET)"


def make_app(ctx: Context, namespaces: tuple = ()) -> web.Application:
    """`namespaces` adds RPC modules beyond the built-in ones (tests use it)."""
    runtime, limits = ctx.runtime, ctx.config.limits
    check = make_guard(port=runtime.port, token=runtime.token, capabilities=ctx.capabilities)
    methods = build_methods(namespaces)

    async def health(request: web.Request) -> web.Response:
        return reply({"ok": True, "pid": runtime.pid, "version": runtime.version, "service": SERVICE})

    async def rpc(request: web.Request) -> web.Response:
        body = await request.read()
        try:
            text = body.decode()
        except UnicodeDecodeError:
            text = "\0"  # not JSON: reported as a parse error
        transport = request.transport
        # Who is calling, for the methods that must know (approval.grant walks its ancestry).
        PEER.set(transport.get_extra_info("peername") if transport is not None else None)
        response = await dispatch(text, methods, ctx, limits.max_batch)
        if response is None:  # notifications only: nothing to say
            return web.Response(status=204)
        return reply(response)

    async def debug(request: web.Request) -> web.Response:
        from runner.rpc.debug import build_snapshot

        return reply(build_snapshot(ctx))

    @web.middleware
    async def guarded(request: web.Request, handler) -> web.StreamResponse:
        refused = check(request)
        if refused is not None:
            return refused
        try:
            return await handler(request)
        except web.HTTPNotFound:
            return error(404, NO_SUCH_PATH)
        except web.HTTPMethodNotAllowed:
            return error(405, "method not allowed", headers={"Allow": ROUTES.get(request.path, "GET")})

    app = web.Application(middlewares=[guarded], client_max_size=limits.max_body_bytes)
    app.router.add_post("/rpc", rpc)
    app.router.add_get("/health", health, allow_head=False)
    app.router.add_get("/debug", debug, allow_head=False)
    add_ui_routes(app, ctx)  # the page (`plugkit ui`): /login, /ui, /api/v1/
    add_otlp_routes(app, ctx)  # the workers' telemetry (budgets): /v1/metrics, /v1/logs
    app[CONTEXT] = ctx
    return app
