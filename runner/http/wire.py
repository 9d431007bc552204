"""HTTP/1.1 on the runner's socket: one small asyncio protocol per connection, no web framework.

Why not aiohttp's server. A spaced-out no-op call cost 1.1 ms through aiohttp's request machinery
(its parser's queue, a task per request, middleware chain, router, response writer: four loop
passes and a few hundred Python calls), against 0.2 ms for the same round trip on a bare asyncio
protocol; every hook call an agent makes pays it (issue 31). The runner's clients send small
requests with a Content-Length, so the whole of HTTP it needs is this file: a request head of at
most MAX_HEAD bytes, a body of at most max_body bytes, keep-alive and pipelining in order.

Each rule names what it stops:
- a head over MAX_HEAD: 431 and a close (unbounded memory per connection);
- a Transfer-Encoding: 501 and a close (no chunked bodies: nothing here sends one, and two ways
  to frame a body is how requests are smuggled);
- a Content-Length that is not one plain number, or a second Host or Content-Length: 400 and a
  close (an ambiguous request is answered as no request);
- a body over max_body: 413 and a close, before it is read;
- deadlines (conn_guard.py): a request whole within REQUEST_DEADLINE_S of its first byte, its
  body within BODY_DEADLINE_S of its head (408 and a close), an answered connection idle at most
  IDLE_S.
What a request may do once parsed is runner/http/guards.py's; which code answers it, app.py's.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Optional

from runner.system import logs

log = logs.get("plugkit.http")

MAX_HEAD = 16 * 1024
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_DIGITS = re.compile(rb"[0-9]{1,18}")
_UNIQUE = (b"host", b"content-length", b"authorization", b"content-type", b"origin")
REASONS = {100: "Continue", 200: "OK", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
           403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
           413: "Payload Too Large", 415: "Unsupported Media Type", 431: "Request Header Fields Too Large",
           500: "Internal Server Error", 501: "Not Implemented", 505: "HTTP Version Not Supported"}


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: Optional[str] = "application/json; charset=utf-8"
    close: bool = False
    headers: dict[str, str] = field(default_factory=dict)

    def encode(self, keep_alive: bool) -> bytes:
        lines = [f"HTTP/1.1 {self.status} {REASONS.get(self.status, 'Status')}"]
        if self.content_type is not None and self.status != 204:
            lines.append(f"Content-Type: {self.content_type}")
        if self.status != 204:
            lines.append(f"Content-Length: {len(self.body)}")
        lines.extend(f"{k}: {v}" for k, v in self.headers.items())
        if not keep_alive or self.close:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (self.body if self.status != 204 else b"")


def error(status: int, text: str, close: bool = False, headers: Optional[dict[str, str]] = None) -> Response:
    return Response(status, json.dumps({"error": text}).encode(), close=close, headers=headers or {})


class BadRequest(Exception):
    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


@dataclass
class Head:
    method: str
    path: str  # the target without its query
    headers: dict[str, str]  # names lower-cased; each at most once where it matters (_UNIQUE)
    length: int
    keep_alive: bool
    expect_continue: bool


@dataclass
class Request(Head):
    body: bytes
    peer: object

    @property
    def content_type(self) -> str:
        """The media type alone, lower-cased (parameters such as charset dropped)."""
        return self.headers.get("content-type", "").partition(";")[0].strip().lower()


def parse_head(raw: bytes, max_body: int) -> Head:
    """The request line and headers (without the blank line). BadRequest says how to answer."""
    lines = raw.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not parts[1].startswith(b"/"):
        raise BadRequest(error(400, "malformed request line", close=True))
    method, target, version = parts
    if version not in (b"HTTP/1.1", b"HTTP/1.0"):
        raise BadRequest(error(505, "HTTP/1.1 only", close=True))
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):  # also a folded line, or space before the colon
            raise BadRequest(error(400, "malformed header line", close=True))
        key = name.lower()
        text = value.strip(b" \t").decode("latin-1")
        if key in _UNIQUE and key.decode() in headers:
            raise BadRequest(error(400, f"{name.decode()} sent twice", close=True))
        headers[key.decode()] = text
    if "transfer-encoding" in headers:
        raise BadRequest(error(501, "send the body with a Content-Length (no Transfer-Encoding)", close=True))
    length_text = headers.get("content-length", "0").encode()
    if not _DIGITS.fullmatch(length_text):
        raise BadRequest(error(400, "Content-Length must be a number", close=True))
    length = int(length_text)
    if length > max_body:
        raise BadRequest(error(413, f"body over {max_body} bytes", close=True))
    conn = headers.get("connection", "").lower()
    keep_alive = "close" not in conn if version == b"HTTP/1.1" else "keep-alive" in conn
    path = target.partition(b"?")[0].decode("latin-1")
    return Head(method.decode(), path, headers, length, keep_alive,
                headers.get("expect", "").lower() == "100-continue")


Handler = Callable[[Request], Awaitable[Response]]


class Connection(asyncio.Protocol):
    """One client connection: requests parsed as bytes arrive, answered one at a time, in order."""

    def __init__(self, handler: Handler, guard, max_body: int) -> None:
        self.handler, self.guard, self.max_body = handler, guard, max_body
        self.transport: Optional[asyncio.Transport] = None
        self.peer: object = None
        self.serving = False  # a request's handler runs (the guard never evicts such a connection)
        self.task: Optional[asyncio.Task] = None
        self._buf = bytearray()
        self._head: Optional[Head] = None
        self._timer: Optional[asyncio.TimerHandle] = None
        self._closing = False
        self._eof = False  # the client shut its sending side: answer what it sent, then close
        self._paused = False

    # --- the transport's callbacks -----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self.guard.admit(transport, self):
            transport.abort()  # before the loop's first read: not a byte of theirs is parsed
            return
        self.transport = transport  # type: ignore[assignment]
        self.peer = transport.get_extra_info("peername")
        self._arm(self.guard.request_deadline_s, self._expire)

    def data_received(self, data: bytes) -> None:
        if self.transport is None or self._closing:
            return
        if not self._buf and self._head is None and not self.serving:
            self._arm(self.guard.request_deadline_s, self._expire)  # a request begins: it has this long
        self._buf += data
        if not self.serving:
            self._advance()
        elif len(self._buf) > MAX_HEAD + self.max_body and not self._paused:
            self._paused = True  # pipelined past one whole request: read on once this one is answered
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        self._eof = True
        if not self.serving:
            self._advance()  # a whole request may have come with the EOF
            if not self.serving:
                self._close()
        return True  # half-closed: the answer in progress still goes out, then the close

    def connection_lost(self, exc: Optional[BaseException]) -> None:
        self._cancel_timer()
        if self.transport is not None:
            self.guard.release(self.transport)
        self._closing = True

    # --- requests ----------------------------------------------------------------------------

    def _advance(self) -> None:
        """Parse what the buffer holds; start the handler once a request is whole."""
        if self._head is None:
            while self._buf.startswith(b"\r\n"):  # a CRLF some clients send after a body
                del self._buf[:2]
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > MAX_HEAD:
                    self._answer(error(431, f"request head over {MAX_HEAD} bytes", close=True))
                return
            if end > MAX_HEAD:
                self._answer(error(431, f"request head over {MAX_HEAD} bytes", close=True))
                return
            raw = bytes(self._buf[:end])
            del self._buf[:end + 4]
            try:
                self._head = parse_head(raw, self.max_body)
            except BadRequest as bad:
                log.warning("request_refused", status=bad.response.status, reason="bad_request")
                self._answer(bad.response)
                return
            self._arm(self.guard.body_deadline_s, self._body_late)
            if self._head.expect_continue and len(self._buf) < self._head.length:
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        head = self._head
        if len(self._buf) < head.length:
            return
        body = bytes(self._buf[:head.length])
        del self._buf[:head.length]
        self._head = None
        self._cancel_timer()
        self.serving = True
        request = Request(**vars(head), body=body, peer=self.peer)
        self.task = asyncio.get_running_loop().create_task(self._serve(request))

    async def _serve(self, request: Request) -> None:
        try:
            response = await self.handler(request)
        except Exception:
            log.exception("http_handler_error", path=request.path)
            response = error(500, "internal error", close=True)
        finally:
            self.task = None
        self.serving = False
        self._answer(response, request.keep_alive and not (self._eof and not self._buf))
        if self._paused and not self._closing and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        if not self._closing and self.transport is not None:
            if self._buf:
                self._arm(self.guard.request_deadline_s, self._expire)
                self._advance()  # a pipelined request waited behind this one
                if self._eof and not self.serving:
                    self._close()  # what is left can never be whole
            else:
                self._arm(self.guard.idle_s, self._idle)

    def _answer(self, response: Response, keep_alive: bool = True) -> None:
        if self.transport is None or self._closing:
            return
        self.transport.write(response.encode(keep_alive))
        if response.close or not keep_alive:
            self._close()

    def _close(self) -> None:
        if not self._closing and self.transport is not None:
            self._closing = True
            self._cancel_timer()
            self.transport.close()  # after what is written has gone out

    # --- deadlines ---------------------------------------------------------------------------

    def _arm(self, seconds: float, then: Callable[[], None]) -> None:
        self._cancel_timer()
        self._timer = asyncio.get_running_loop().call_later(seconds, then)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        """A request not whole in time (or a connection that never sent one): closed unanswered."""
        self._timer = None
        if self.transport is not None and not self.serving:
            self.guard.expired += 1
            self.transport.abort()

    def _body_late(self) -> None:
        self._timer = None
        if self.transport is not None and not self.serving:
            self.guard.expired += 1
            head = self._head
            log.warning("request_refused", status=408, reason="body_deadline", path=head.path if head else "")
            self._answer(error(408, f"body not sent within {self.guard.body_deadline_s:g}s", close=True))

    def _idle(self) -> None:
        self._timer = None
        if not self.serving and not self._buf:
            self._close()

    def abort(self) -> None:
        """The runner is stopping: the connection goes now, and its handler with it."""
        if self.task is not None:
            self.task.cancel()
        if self.transport is not None:
            self.transport.abort()
