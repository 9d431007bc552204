"""Differential: a few thousand mangled request heads, each parsed by llhttp (aiohttp's C parser)
on its own and sent to the real runner on a loopback socket. Whatever llhttp refuses, the runner
refuses (a 4xx/5xx and a close, or a close unanswered); nothing at all gets a 500."""

import asyncio
import dataclasses
import random
import secrets

from aiohttp import http_parser
from aiohttp.base_protocol import BaseProtocol

from runner.boot import config as boot_config
from runner.boot.compose import compose
from runner.http import conn_guard
from runner.system import socket_owner
from tests.support.inproc import TOKEN
from tests.support.runner_home import bound_socket, free_port

NASTY = [b"\r", b"\n", b":", b" ", b"\t", b"\x00", b"\x01", b"\x7f", b"\xff", b"\xc3\xa9", b"/", b"?", b"-1",
         b"99999999999999999999", b"Transfer-Encoding", b"Content-Length", b"Host", b"HTTP/1.0", b"\r\n ",
         b"\r\n\r\n", b"chunked", b"Origin: x\r\n"]
HEADS = 3000


def _good(port: int) -> bytes:
    return (f"GET /health?x=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\n"
            f"Content-Length: 0\r\nConnection: keep-alive\r\n\r\n").encode()


def _mangle(rng: random.Random, good: bytes) -> bytes:
    raw = bytearray(good)
    for _ in range(rng.randint(1, 5)):
        at = rng.randrange(len(raw) - 3)  # the final blank line stays: each head is whole or refused
        op = rng.random()
        if op < 0.45:
            raw[at:at] = rng.choice(NASTY)
        elif op < 0.7:
            del raw[at:at + rng.randint(1, 6)]
        else:
            raw[at] = rng.randrange(256)
    return bytes(raw)


def _llhttp(loop, raw: bytes) -> str:
    """'refused', 'incomplete' or 'parsed', by llhttp with the runner's limits."""
    assert http_parser.HttpRequestParser is not http_parser.HttpRequestParserPy  # the C parser is there
    parser = http_parser.HttpRequestParser(BaseProtocol(loop), loop, 2 ** 16, max_line_size=conn_guard.MAX_LINE,
                                           max_field_size=conn_guard.MAX_LINE, max_headers=conn_guard.MAX_HEADERS)
    try:
        messages, _, _ = parser.feed_data(raw)
    except Exception:
        return "refused"
    return "parsed" if messages else "incomplete"


async def _send(port: int, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        writer.write_eof()  # the runner answers what it was sent, then closes
        async with asyncio.timeout(10):
            return await reader.read()
    finally:
        writer.close()


async def test_the_runner_refuses_every_head_llhttp_refuses(tmp_path):
    port = free_port()
    config = dataclasses.replace(boot_config.load(), home=str(tmp_path), port=port)
    app = compose(config, TOKEN, f"test{secrets.token_hex(4)}", gates=False)
    guard = conn_guard.make_guard(socket_owner.owner_uid)
    guard.body_deadline_s = guard.request_deadline_s = 0.5  # a head that claims a body it never sends
    serving = await conn_guard.serve(app, bound_socket(port), guard)
    loop = asyncio.get_running_loop()
    try:
        rng = random.Random(43)
        heads = [_mangle(rng, _good(port)) for _ in range(HEADS)]
        verdicts = [_llhttp(loop, raw) for raw in heads]
        assert verdicts.count("refused") > HEADS // 4 and verdicts.count("parsed") > HEADS // 10  # a real mix
        sent = [(raw, v) for raw, v in zip(heads, verdicts) if v != "incomplete"]
        answers: list[bytes] = []
        for at in range(0, len(sent), 64):
            answers += await asyncio.gather(*(_send(port, raw) for raw, _ in sent[at:at + 64]))
        for (raw, verdict), answer in zip(sent, answers):
            status = answer[9:12]
            assert status != b"500", (raw, answer[:200])
            if verdict == "refused":
                assert answer == b"" or (answer.startswith(b"HTTP/1.") and status[:1] in b"45"), (raw, answer[:200])
        assert any(a.startswith(b"HTTP/1.1 200") for a in answers)  # the good ones are answered
    finally:
        await serving.cleanup()
