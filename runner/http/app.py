"""make_app(): the aiohttp routes and the cleanup chain. Transport only; no domain logic."""

from typing import AsyncIterator, Callable

from aiohttp import web

from plugkit import SERVICE
from plugkit.config import Limits
from runner import rpc as rpc_pkg
from runner.http.guards import make_guard
from runner.rpc.dispatch import Context, dispatch
from runner.rpc.runtime import Runtime
from runner.system import peers

RUNTIME = web.AppKey("runtime", Runtime)
CONTEXT = web.AppKey("context", Context)

# Each later subsystem adds (name, factory) here: factory(app) is an async
# generator for aiohttp's cleanup_ctx that registers its manager in ctx.services.
ServiceFactory = Callable[[web.Application], AsyncIterator[None]]


def make_app(runtime: Runtime, limits: Limits | None = None,
             services: tuple[ServiceFactory, ...] | None = None,
             namespaces: tuple = ()) -> web.Application:
    """`namespaces` adds RPC modules beyond the built-in ones (tests use it)."""
    limits = limits or Limits.from_env()
    app = web.Application(
        middlewares=[make_guard(port=runtime.port, token=runtime.token, max_body=limits.max_body_bytes)],
        client_max_size=limits.max_body_bytes,
    )
    ctx = Context(runtime=runtime, services={"limits": limits})
    app[RUNTIME] = runtime
    app[CONTEXT] = ctx
    methods = rpc_pkg.build_methods(namespaces)

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
        peers.PEER.set(request.transport.get_extra_info("peername") if request.transport else None)
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
    for factory in services or default_services():
        app.cleanup_ctx.append(factory)
    return app


def default_services() -> tuple[ServiceFactory, ...]:
    from runner.boot.gates_lifespan import gates_service
    from runner.boot.lifespans import tasks_service

    return (tasks_service, gates_service)


