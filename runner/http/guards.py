"""The one security middleware. Each check names the attack it stops; order matters."""

import hmac
from typing import Awaitable, Callable

from aiohttp import web

from runner.rpc.context import CALLER
from runner.system import logs
from plugkit.work.capabilities import Capabilities

log = logs.get("plugkit.guards")

OPEN_PATHS = frozenset({"/health"})


def make_guard(*, port: int, token: str, max_body: int, capabilities: Capabilities | None = None) -> Callable:
    allowed_hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"})
    expected = f"Bearer {token}".encode()

    def refuse(request: web.Request, status: int, reason: str, text: str) -> web.Response:
        log.warning("request_refused", status=status, reason=reason,
                    path=request.path, method=request.method)
        return web.json_response({"error": text}, status=status)

    @web.middleware
    async def security_guard(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        # 1. DNS rebinding: a page on evil.example resolving to 127.0.0.1 still sends its own Host.
        if request.headers.get("Host", "").lower() not in allowed_hosts:
            return refuse(request, 403, "bad_host", "forbidden host")
        # 2. No browser page may talk to the runner at all; we never send CORS headers.
        if "Origin" in request.headers:
            return refuse(request, 403, "origin_present", "cross-origin requests are refused")
        if request.method == "OPTIONS":
            return refuse(request, 405, "options", "method not allowed")
        if request.path in OPEN_PATHS:
            return await handler(request)
        # 3. Only holders of the 0600 token file (this user) may call anything else, or a
        #    sandboxed worker with its own capability: /rpc only, scoped by runner/rpc/scope.py.
        supplied = request.headers.get("Authorization", "").encode()
        cap = None
        if not hmac.compare_digest(supplied, expected):
            bearer = supplied.decode(errors="replace").removeprefix("Bearer ")
            cap = capabilities.lookup(bearer) if capabilities is not None else None
            if cap is None:
                return refuse(request, 401, "bad_token", "missing or wrong bearer token")
            if request.path != "/rpc":  # /debug shows every session's tasks
                return refuse(request, 403, "capability_path", "a worker's capability reaches /rpc only")
        CALLER.set(cap)
        if request.method == "POST":
            # 4. text/plain and form posts are CORS "simple requests" a page can send blind.
            if request.content_type != "application/json":
                return refuse(request, 415, "content_type", "Content-Type must be application/json")
            # 5. Bounded memory per request.
            length = request.content_length
            if length is not None and length > max_body:
                return refuse(request, 413, "too_large", f"body over {max_body} bytes")
        return await handler(request)

    return security_guard
