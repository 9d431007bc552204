"""make_app(ctx): the aiohttp routes over an already composed Context. Transport only:
no domain logic, and no part of the runner is built here (runner/boot/compose.py does)."""

from aiohttp import web

from plugkit import SERVICE
from runner.http.guards import make_guard
from runner.http.keys import CONTEXT
from runner.rpc.context import PEER, Context
from runner.rpc.dispatch import dispatch
from runner.rpc.namespaces import build_methods


def make_app(ctx: Context, namespaces: tuple = ()) -> web.Application:
    """`namespaces` adds RPC modules beyond the built-in ones (tests use it)."""
    runtime, limits = ctx.runtime, ctx.config.limits
    app = web.Application(
        middlewares=[make_guard(port=runtime.port, token=runtime.token, max_body=limits.max_body_bytes,
                                capabilities=ctx.capabilities)],
        client_max_size=limits.max_body_bytes,
    )
    app[CONTEXT] = ctx
    methods = build_methods(namespaces)

    async def health(request: web.Request) -> web.Response:
        return web.json_response(
            {"ok": True, "pid": runtime.pid, "version": runtime.version, "service": SERVICE}
        )

    async def rpc(request: web.Request) -> web.Response:
        try:
            body = await request.text()
        except web.HTTPRequestEntityTooLarge:
            return web.json_response({"error": "body too large"}, status=413)
        except UnicodeDecodeError:
            body = "\0"  # not JSON: reported as a parse error below
        # Who is calling, for the methods that must know (approval.grant walks its ancestry).
        PEER.set(request.transport.get_extra_info("peername") if request.transport else None)
        response = await dispatch(body, methods, ctx, limits.max_batch)
        if response is None:  # notifications only: nothing to say
            return web.Response(status=204)
        return web.json_response(response)

    async def debug(request: web.Request) -> web.Response:
        from runner.rpc.debug import build_snapshot

        return web.json_response(build_snapshot(ctx))

    app.router.add_get("/health", health)
    app.router.add_get("/debug", debug)
    app.router.add_post("/rpc", rpc)
    return app
