"""What a request llhttp parsed may still be, before any route sees it: the framing rules
aiohttp's parser leaves to the application, and the body's deadline. Each rule names what it
stops; each refusal closes the connection (an ambiguous request is answered as no request,
and nothing after it on the connection can be trusted to start where it seems to).

- a version other than HTTP/1.1 or 1.0: 505;
- a target not in origin-form (an absolute URL, `*`): 400 (the runner is no proxy);
- a Transfer-Encoding: 501 (no chunked bodies: two ways to frame a body is how requests are
  smuggled), but for a worker's OTLP export sent chunked alone (runner/http/otlp.py);
- a second Host, Content-Length, Authorization, Content-Type or Origin: 400 (which one would
  the guard have checked?);
- a Content-Length over max_body: 413, before a byte of the body is read;
- a body not whole within body_deadline_s of its head: 408.
What llhttp itself refuses (NUL, bare CR or LF, a malformed Content-Length, a head line over
conn_guard.MAX_LINE, ...) never gets here: conn_guard.GuardedHandler.handle_error answers it.
"""

import asyncio
from typing import Awaitable, Callable

from aiohttp import web
from aiohttp import HttpVersion10, HttpVersion11

from runner.http.otlp import OTLP_PATHS
from runner.http.replies import error
from runner.system import logs

log = logs.get("plugkit.http")

_UNIQUE = ("Host", "Content-Length", "Authorization", "Content-Type", "Origin")
_VERSIONS = (HttpVersion11, HttpVersion10)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _refuse(request: web.Request, status: int, reason: str, text: str) -> web.Response:
    log.warning("request_refused", status=status, reason=reason)
    return error(status, text, close=True)


def _chunked_export(request: web.Request) -> bool:
    """A worker host's OTLP export may come chunked (Claude Code's runtime sends no Content-Length):
    allowed there alone, as one `chunked` and no Content-Length (never two ways to frame one body);
    the body is still read whole within its deadline and under max_body before any route sees it."""
    headers = request.headers
    return (request.method == "POST" and request.path in OTLP_PATHS and "Content-Length" not in headers
            and headers.getall("Transfer-Encoding") == ["chunked"])


def _framing(request: web.Request, max_body: int) -> "web.Response | None":
    if request.version not in _VERSIONS:
        return _refuse(request, 505, "version", "HTTP/1.1 only")
    if not request.raw_path.startswith("/"):
        return _refuse(request, 400, "target", "the target must be a path (/rpc, /health, /debug)")
    headers = request.headers
    if "Transfer-Encoding" in headers and not _chunked_export(request):
        return _refuse(request, 501, "transfer_encoding", "send the body with a Content-Length (no Transfer-Encoding)")
    for name in _UNIQUE:
        if len(headers.getall(name, ())) > 1:
            return _refuse(request, 400, "duplicate_header", f"{name} sent twice")
    length = request.content_length
    if length is not None and length > max_body:
        return _refuse(request, 413, "body_size", f"body over {max_body} bytes")
    return None


def framing_middleware(body_deadline_s: float, max_body: int):
    """The aiohttp middleware in front of every route: the framing rules above, the body read
    within its deadline, and the connection's request clock told when a request is served."""

    @web.middleware
    async def framing(request: web.Request, handler: Handler) -> web.StreamResponse:
        conn = request.protocol
        begin = getattr(conn, "begin", None)  # a GuardedHandler (conn_guard.py)
        if begin is not None:
            begin()
        try:
            refused = _framing(request, max_body)
            if refused is not None:
                return refused
            if request.body_exists and not request.content.is_eof():
                try:
                    async with asyncio.timeout(body_deadline_s):
                        await request.read()  # kept by aiohttp: the route's read() gets it at once
                except TimeoutError:
                    if begin is not None:
                        conn.guard.expired += 1
                    return _refuse(request, 408, "body_deadline", f"body not sent within {body_deadline_s:g}s")
            # Chunked (an OTLP export): its size is known only now, the body whole (at EOF: read at once).
            if request.body_exists and request.content_length is None and len(await request.read()) > max_body:
                return _refuse(request, 413, "body_size", f"body over {max_body} bytes")
            if begin is not None:
                conn.body_read()
            return await handler(request)
        finally:
            if begin is not None:
                conn.end()

    return framing
