"""The runner's HTTP (aiohttp, llhttp's parser) on a real loopback socket, behind a real
ConnGuard and the framing middleware: the refusals that close, pipelining, and the clocks
(shortened here)."""

import asyncio
import os
import socket

import pytest

from aiohttp import web

from runner.http import conn_guard
from runner.system import socket_owner

MAX_BODY = 1000
MAX_HEAD = conn_guard.MAX_LINE + 1  # one byte past what a head line may hold


async def _echo(request: web.Request) -> web.Response:
    if request.path == "/slow":
        await asyncio.sleep(0.2)
    body = await request.read()
    return web.Response(text=f"{request.method} {request.path} {len(body)}")


@pytest.fixture
async def server():
    guard = conn_guard.ConnGuard(os.getuid(), socket_owner.owner_uid)
    # The idle allowance well past the request clocks: a test pausing between the two (0.45 s)
    # or reading while one runs must not meet the other when a loaded machine stalls its loop
    # (at 0.6 s, a 0.15 s stall had the idle close come first).
    guard.request_deadline_s, guard.body_deadline_s, guard.idle_s = 0.3, 0.3, 3.0
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", _echo)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    serving = await conn_guard.serve(app, sock, guard, max_body=MAX_BODY)
    serving.port, serving.guard = sock.getsockname()[1], guard
    yield serving
    await serving.cleanup()


async def _talk(server, data: bytes, read_s: float = 2.0) -> bytes:
    """Send data, then read until the server closes (or read_s passes)."""
    port = server.port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    got = b""
    try:
        async with asyncio.timeout(read_s):
            while chunk := await reader.read(65536):
                got += chunk
    except TimeoutError:
        got += b"<open>"
    writer.close()
    return got


def _post(path: str, body: bytes = b"", extra: str = "") -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


async def test_pipelined_requests_are_answered_in_order_on_one_connection(server):
    got = await _talk(server, _post("/slow", b"ab") + _post("/b", b"cde") + b"GET /c HTTP/1.1\r\nHost: x\r\n\r\n",
                      read_s=1.5)  # long enough for three answers, short of the idle allowance
    bodies = [part.split(b"\r\n\r\n", 1)[1][:20] for part in got.split(b"HTTP/1.1 200 OK")[1:]]
    assert [b.split(b"HTTP")[0].rstrip(b"<open>") for b in bodies] == [b"POST /slow 2", b"POST /b 3", b"GET /c 0"]
    assert got.endswith(b"<open>")  # keep-alive: still open after answering


@pytest.mark.parametrize("request_bytes, status", [
    (b"POST /x HTTP/1.1\r\nHost: x\r\nX: " + b"a" * MAX_HEAD + b"\r\n\r\n", b"431"),
    (b"POST /x HTTP/1.1\r\nHost: x\r\n" + b"X: a\r\n" * conn_guard.MAX_HEADERS + b"\r\n", b"431"),
    (b"POST /x HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", b"400"),
    (b"POST /x\x01 HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
    (b"POST /x HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n", b"400"),
    (b"POST /x HTTP/1.1\r\nHost: x\r\nOrigin: a\r\nOrigin: b\r\n\r\n", b"400"),
    (b"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", b"501"),
    # A worker's OTLP export may come chunked; only alone, never beside a Content-Length or another coding.
    (b"GET /v1/metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", b"501"),
    (b"POST /v1/metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", b"501"),
    (b"POST /v1/logs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc", b"400"),
    (b"POST /v1/metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n" + b"a" * 1001
     + b"\r\n0\r\n\r\n", b"413"),
    (b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", b"400"),
    (b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\nabc", b"400"),
    (b"POST /x HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", b"400"),
    (b"POST /x HTTP/1.1\r\nHost : x\r\n\r\n", b"400"),
    (b"POST /x HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", b"400"),
    (b"POST http://evil/x HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
    (b"POST /x HTTP/2.0\r\nHost: x\r\n\r\n", b"505"),
    (b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n", b"413"),
])
async def test_an_ambiguous_or_oversized_request_is_refused_and_the_connection_closed(server, request_bytes, status):
    got = await _talk(server, request_bytes)
    # aiohttp states the request's version (an unparsable one is 1.0) on its answer's status line
    assert got[:5] == b"HTTP/" and got[8:13] == b" " + status + b" ", got[:80]
    assert not got.endswith(b"<open>")  # closed after the answer
    assert b"Connection: close" in got or not got.startswith(b"HTTP/1.1")  # 1.0 closes unsaid


async def test_a_chunked_otlp_export_alone_is_read_whole(server):
    got = await _talk(server, b"POST /v1/metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                              b"Connection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 200") and got.endswith(b"POST /v1/metrics 5"), got


async def test_connection_close_and_http_1_0_close_after_the_answer(server):
    assert not (await _talk(server, _post("/a", extra="Connection: close\r\n"))).endswith(b"<open>")
    assert not (await _talk(server, b"GET /a HTTP/1.0\r\nHost: x\r\n\r\n")).endswith(b"<open>")


async def test_expect_continue_gets_a_100_before_the_body_is_sent(server):
    port = server.port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")
    assert await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 2) == b"HTTP/1.1 100 Continue\r\n\r\n"
    writer.write(b"abc")
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 2)
    assert head.startswith(b"HTTP/1.1 200")
    writer.close()


async def test_a_half_sent_head_is_dropped_unanswered_at_its_deadline(server):
    got = await _talk(server, b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Ty")
    assert got == b""
    assert server.guard.expired == 1


async def test_a_half_sent_head_behind_answered_requests_is_dropped_at_its_own_deadline(server):
    # The request clock is lazy (one timer per connection, re-armed when it fires early): a head
    # half sent behind answered requests still has the deadline from its own first byte.
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    for path in ("/a", "/b"):
        writer.write(_post(path))
        await asyncio.wait_for(reader.readuntil(f"POST {path} 0".encode()), 2)
    await asyncio.sleep(0.2)  # the clock armed when the connection opened is now past its time
    writer.write(b"POST /c HTTP/1.1\r\nHost: x\r\nContent-Ty")
    assert await asyncio.wait_for(reader.read(), 2) == b""  # dropped unanswered
    assert server.guard.expired == 1
    writer.close()


async def test_a_body_that_does_not_come_gets_a_408_and_a_close(server):
    got = await _talk(server, b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
    assert got.startswith(b"HTTP/1.1 408") and b"Connection: close" in got


async def test_an_answered_connection_may_idle_its_allowance_then_is_closed(server):
    port = server.port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(_post("/a", b"{}"))  # a body: aiohttp then feeds its parser b"", which is no new request
    await reader.readuntil(b"POST /a 2")
    await asyncio.sleep(0.45)  # past the request deadline, inside the idle allowance
    writer.write(_post("/b"))
    await asyncio.wait_for(reader.readuntil(b"POST /b 0"), 2)
    assert await asyncio.wait_for(reader.read(), 30) == b""  # then the idle allowance ends it
    writer.close()


async def test_a_client_that_shuts_its_side_after_a_request_still_gets_the_answer(server):
    port = server.port
    sock = socket.create_connection(("127.0.0.1", port))
    try:
        sock.sendall(_post("/slow", b"xy"))
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(3)
        got = b""
        while chunk := await asyncio.to_thread(sock.recv, 65536):
            got += chunk
        assert got.startswith(b"HTTP/1.1 200") and got.endswith(b"POST /slow 2")
    finally:
        sock.close()
