"""The proxy on the wire (runner/system/docker_proxy.py), between a raw client and a hand-written
engine on unix sockets: one checked request per connection (a second one pipelined behind it never
reaches the engine), a refusal the docker CLI prints, and a created container labelled."""

import asyncio
import json
import os

from runner.system import docker_request
from runner.system.docker_proxy import existing_socket, open_proxy, socket_dir


class Engine:
    """Answers every request 200 with a JSON body and records the request heads and bodies."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read(1 << 16)
        while data:
            self.seen.append(data)
            data = await asyncio.wait_for(reader.read(1 << 16), 0.5) if b"Connection: close" not in data else b""
        body = b'{"Id":"abc"}'
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close"
                     b"\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()


async def ask(path: str, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(raw)
    await writer.drain()
    got = await reader.read()
    writer.close()
    return got


async def test_a_pipelined_request_never_reaches_the_engine_unchecked(tmp_path):
    engine = Engine()
    server = await asyncio.start_unix_server(engine.serve, path=str(tmp_path / "engine.sock"))
    owner = docker_request.Owner("att-1", "run-1", "w1", "h" * 16, "r-1", str(tmp_path))
    proxy = await open_proxy(str(tmp_path / "px"), str(tmp_path / "engine.sock"), owner)
    try:
        body = json.dumps({"Image": "x", "HostConfig": {}}).encode()
        smuggled = b'POST /containers/create HTTP/1.1\r\nContent-Length: 40\r\n\r\n{"HostConfig": {"Privileged": true}}    '
        got = await ask(proxy.path, b"POST /v1.41/containers/create HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s%s"
                        % (len(body), body, smuggled))
        assert got.startswith(b"HTTP/1.1 200"), got
        sent = b"".join(engine.seen)
        assert sent.count(b"POST ") == 1 and b"Privileged\": true" not in sent, sent
        assert b"Connection: close" in sent
        created = json.loads(sent.split(b"\r\n\r\n", 1)[1])
        assert created["Labels"] == owner.labels(), created
        # A refusal: what `docker` prints after "Error response from daemon:"; the engine never asked.
        engine.seen.clear()
        got = await ask(proxy.path, b"POST /v1.41/swarm/init HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        head, _, answer = got.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 403") and json.loads(answer)["message"].startswith("plugkit: "), got
        assert engine.seen == []
        # A bare LF is a line end to the engine: a header smuggled past the proxy's parser.
        got = await ask(proxy.path, b"GET /_ping HTTP/1.1\r\nX: y\nTransfer-Encoding: chunked\r\n\r\n")
        assert got.startswith(b"HTTP/1.1 400") and engine.seen == [], got
    finally:
        await proxy.close()
        server.close()
        await server.wait_closed()
    assert not os.path.exists(proxy.path)


async def test_another_workers_task_naming_this_session_finds_no_socket(tmp_path):
    home, mine, theirs = str(tmp_path / "home"), tmp_path / "wt" / "w1", tmp_path / "wt" / "w2"
    for tree in (mine, theirs):
        tree.mkdir(parents=True)
    owner = docker_request.Owner("att-1", "run-1", "w1", "h" * 16, "r-1", str(mine))
    proxy = await open_proxy(socket_dir(home, "plugkit-work-r-w1-1", str(mine)), str(tmp_path / "engine.sock"), owner)
    try:
        assert existing_socket(home, "plugkit-work-r-w1-1", str(mine)) == proxy.path
        # w2's exec: may name w1's session id, but its session is rooted in its own worktree
        assert existing_socket(home, "plugkit-work-r-w1-1", str(theirs)) is None
    finally:
        await proxy.close()
