"""The one security check every request passes before any route sees it. Each check names the
attack it stops; order matters."""

import hmac
from typing import Callable, Optional

from aiohttp.web import Request, Response

from runner.http.otlp import OTLP_PATHS
from runner.http.replies import error
from runner.http.ui_routes import is_page_path
from runner.rpc.context import CALLER
from runner.system import logs
from plugkit.work.capabilities import Capabilities

log = logs.get("plugkit.guards")

OPEN_PATHS = frozenset({"/health"})


def make_guard(*, port: int, token: str,
               capabilities: Capabilities | None = None) -> Callable[[Request], Optional[Response]]:
    """check(request) -> the refusal to answer, or None (the caller, a worker's capability or
    None for the token's holder, is then in CALLER for the request's task)."""
    allowed_hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"})
    expected = f"Bearer {token}".encode()

    def refuse(request: Request, status: int, reason: str, text: str) -> Response:
        log.warning("request_refused", status=status, reason=reason, path=request.path, method=request.method)
        return error(status, text)

    def check(request: Request) -> Optional[Response]:
        headers = request.headers
        # 1. DNS rebinding: a page on evil.example resolving to 127.0.0.1 still sends its own Host.
        if headers.get("host", "").lower() not in allowed_hosts:
            return refuse(request, 403, "bad_host", "forbidden host")
        # The page's paths have their own guard (runner/http/ui/access.py: a cookie, its own
        # Origin only, read-only); the token and the rules below stay /rpc's and /debug's.
        if is_page_path(request.path):
            return None
        # 2. No browser page may talk to the runner at all; we never send CORS headers.
        if "origin" in headers:
            return refuse(request, 403, "origin_present", "cross-origin requests are refused")
        if request.method == "OPTIONS":
            return refuse(request, 405, "options", "method not allowed")
        if request.path in OPEN_PATHS:
            return None
        if request.path in OTLP_PATHS:  # a worker's telemetry: its own secret, checked there (runner/http/otlp.py)
            return None
        # 3. Only holders of the 0600 token file (this user) may call anything else, or a
        #    sandboxed worker with its own capability: /rpc only, scoped by runner/rpc/scope.py.
        supplied = headers.get("authorization", "").encode("latin-1")
        cap = None
        if not hmac.compare_digest(supplied, expected):
            bearer = supplied.decode(errors="replace").removeprefix("Bearer ")
            cap = capabilities.lookup(bearer) if capabilities is not None else None
            if cap is None:
                return refuse(request, 401, "bad_token", "missing or wrong bearer token")
            if request.path != "/rpc":  # /debug shows every session's tasks
                return refuse(request, 403, "capability_path", "a worker's capability reaches /rpc only")
        CALLER.set(cap)
        # 4. text/plain and form posts are CORS "simple requests" a page can send blind. (Bounded
        #    memory per request is the connection's: it refuses a longer body before reading it.)
        if request.method == "POST" and request.content_type != "application/json":
            return refuse(request, 415, "content_type", "Content-Type must be application/json")
        return None

    return check
