"""A worker attempt's labelling proxy to the container engine (work_docker): a unix socket the
runner serves, shown in the worker's sandbox as DOCKER_HOST; each request is checked by
docker_policy.Policy and passed to the real engine, whose answer streams back as it comes.

One request per connection: the engine is asked with `Connection: close`, so a second request
pipelined behind a checked one never reaches it unchecked. A hijacked stream (`docker run`
attached, `docker exec`: 101 UPGRADED) is raw both ways once the engine has switched, and only
then. The worker's own API version goes through as it asked (the engine negotiates it).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
from typing import Mapping, Optional

from runner.system import docker_policy as policy_mod, docker_request as request_mod, logs
from runner.system.docker_engine import Engine, EngineError

log = logs.get("plugkit.docker")
HEAD_LIMIT = 64 << 10
CHUNK = 64 << 10
# Where an engine may listen when DOCKER_HOST does not say (the docker daemon, rootful podman).
DEFAULT_ENGINES: tuple[str, ...] = ("/var/run/docker.sock", "/run/podman/podman.sock")
_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "content-length", "transfer-encoding", "upgrade"})


class NoEngine(Exception):
    """No container engine to proxy to: the message says where plugkit looked."""


def engine_path(env: Mapping[str, str]) -> str:
    """The real engine's socket: DOCKER_HOST (unix:// only) of the runner or of who ran `plugkit
    work`, else the first of DEFAULT_ENGINES there is."""
    host = env.get("DOCKER_HOST", "")
    if host:
        if not host.startswith("unix://"):
            raise NoEngine(f"work_docker: DOCKER_HOST={host} is not a unix socket; plugkit proxies a local engine only")
        return host[len("unix://"):]
    found = next((p for p in DEFAULT_ENGINES if os.path.exists(p)), None)
    if found is None:
        raise NoEngine("work_docker: no container engine (DOCKER_HOST unset, no " + ", ".join(DEFAULT_ENGINES)
                       + "); start one, or set work_docker = false in .plugkit/config.toml")
    return found


def socket_dir(home: str, session_id: str, root: str) -> str:
    """The proxy's dir for a worker session rooted at its worktree, in the runner's home (hidden
    from every sandbox but this one's, which gets the dir bound read-only). Keyed by the root as
    well: a task of another worker naming this session's id is rooted in its own worktree, and
    finds no socket. Short: a unix socket's path is at most 107 bytes."""
    key = f"{session_id}\0{os.path.realpath(root)}".encode()
    return os.path.join(home, "docker", hashlib.sha256(key).hexdigest()[:12])


def existing_socket(home: str, session_id: Optional[str], root: str) -> Optional[str]:
    """The socket of a proxy the runner is serving for this session and root, or None."""
    if not session_id:
        return None
    path = os.path.join(socket_dir(home, session_id, root), "sock")
    return path if os.path.exists(path) else None


def _refusal(status: int, line: str, head_only: bool = False) -> bytes:
    body = json.dumps({"message": line}).encode()
    reason = {400: "Bad Request", 403: "Forbidden", 404: "Not Found"}.get(status, "Bad Gateway")
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json"
            f"\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + (b"" if head_only else body)


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    """The whole request body (a create's JSON), at most docker_policy.MAX_BODY."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                return body
            body += await reader.readexactly(size)
            await reader.readexactly(2)
            if len(body) > request_mod.MAX_BODY:
                raise request_mod.Refused("the request body is too large")
    size = int(headers.get("content-length", "0") or 0)
    if size > request_mod.MAX_BODY:
        raise request_mod.Refused("the request body is too large")
    return await reader.readexactly(size)


async def _copy_body(reader: asyncio.StreamReader, writer: Optional[asyncio.StreamWriter],
                     headers: dict[str, str]) -> None:
    """The request body as sent (a build's context), exactly: nothing behind it is passed on.
    No writer: read and dropped (a refused build's context: its client reads the refusal only
    once it has sent it)."""
    if writer is None:
        writer = _Drop()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            line = await reader.readuntil(b"\r\n")
            writer.write(line)
            size = int(line.split(b";")[0], 16)
            if size == 0:
                while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
                    writer.write(line)
                writer.write(line)
                break
            await _copy(reader, writer, size + 2)
    else:
        await _copy(reader, writer, int(headers.get("content-length", "0") or 0))
    await writer.drain()


class _Drop:
    def write(self, data: bytes) -> None:
        pass

    async def drain(self) -> None:
        pass


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, half_close: bool = False) -> None:
    while data := await reader.read(CHUNK):
        writer.write(data)
        await writer.drain()
    if half_close and writer.can_write_eof():  # the client closed stdin: the engine sees EOF, output goes on
        writer.write_eof()


class DockerProxy:
    """Serves one attempt's socket until close(); the engine's objects stay for teardown to remove."""

    def __init__(self, folder: str, engine: Engine, policy: policy_mod.Policy) -> None:
        self.folder, self.engine, self.policy = folder, engine, policy
        self.path = os.path.join(folder, "sock")
        self._server: Optional[asyncio.AbstractServer] = None
        self._handlers: set[asyncio.Task] = set()

    async def start(self) -> None:
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        if os.path.exists(self.path):
            os.unlink(self.path)  # a dead runner's, for a session id that cannot be live now
        self._server = await asyncio.start_unix_server(self._serve, path=self.path, limit=HEAD_LIMIT)
        os.chmod(self.path, 0o600)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._handlers):  # `docker logs -f` and attached runs end with the proxy
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        await asyncio.to_thread(shutil.rmtree, self.folder, True)

    async def end(self) -> tuple[list[str], list[str]]:
        """The attempt is over: the socket goes, then every object carrying its label.
        (what was removed, what could not be); never raises for an engine that is gone."""
        try:
            await self.close()
            return await self.engine.remove(request_mod.ATTEMPT, self.policy.owner.attempt)
        except EngineError as exc:
            return [], [f"containers not looked at: {exc}"]
        finally:
            await self.engine.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # The work in a task of its own, which close() cancels: asyncio's server logs the
        # cancellation of its own callback task as an error.
        work = asyncio.create_task(self._one(reader, writer))
        self._handlers.add(work)
        try:
            await work
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, OSError):
            pass  # a client gone mid-request, or one speaking something else: its connection ends
        except Exception:  # the top of this connection's task: a bug ends the connection, not the runner
            log.exception("docker_proxy_error")
        finally:
            self._handlers.discard(work)
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        method, target, _version = head[0].split(" ", 2)
        fields = [tuple(part.strip() for part in line.split(":", 1)) for line in head[1:] if ":" in line]
        headers = {k.lower(): v for k, v in fields}
        req = request_mod.Request.parse(method, target)
        upgrade = "upgrade" in headers
        lengths = [k for k, _v in fields if k.lower() in ("content-length", "transfer-encoding")]
        # A bare CR or LF is a line end to the engine's parser, not to ours: a header smuggled in.
        if any("\r" in line or "\n" in line for line in head) or len(lengths) > 1:
            writer.write(_refusal(400, "plugkit: a request with a bare line break or two body lengths is refused"))
            await writer.drain()
            return
        try:
            check, _groups = policy_mod.route(req)
            if check in policy_mod.READS_BODY:
                req.body = await _read_body(reader, headers)
            req = await self.policy.decide(req)
        except request_mod.Refused as exc:
            if req.body is None and not upgrade:
                await _copy_body(reader, None, headers)
            writer.write(_refusal(exc.status, exc.line, req.method == "HEAD"))
            await writer.drain()
            return
        except OSError as exc:  # a lookup the rules needed (EngineError): the engine is gone or confused
            writer.write(_refusal(502, f"plugkit: {exc}"))
            await writer.drain()
            return
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self.engine.path, limit=HEAD_LIMIT)
        except OSError as exc:
            writer.write(_refusal(502, f"plugkit: the container engine at {self.engine.path} did not answer "
                                       f"({exc.__class__.__name__}); is it running?"))
            await writer.drain()
            return
        try:
            lines = [f"{req.method} {req.target} HTTP/1.1"]
            lines += [f"{k}: {v}" for k, v in fields if k.lower() not in _HOP]
            lines += ["Connection: Upgrade", f"Upgrade: {headers['upgrade']}"] if upgrade else ["Connection: close"]
            if req.body is not None:
                lines.append(f"Content-Length: {len(req.body)}")
                if "content-type" not in headers:  # a commit sent bare: the rules gave it a body
                    lines.append("Content-Type: application/json")
            else:
                lines += [f"{k}: {v}" for k, v in fields if k.lower() in ("content-length", "transfer-encoding")]
            up_writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (req.body or b""))
            # Concurrently: an engine answering while it still reads (a build) must not stall us both.
            sending = asyncio.create_task(_copy_body(reader, up_writer, headers) if req.body is None
                                          else up_writer.drain())
            try:
                answer = await up_reader.readuntil(b"\r\n\r\n")
                writer.write(answer)
                await writer.drain()
                switched = upgrade and answer.split(b" ", 2)[1] == b"101"
                if switched:  # hijacked: the container's stdin and output, raw, both ways
                    await sending
                    inward = asyncio.create_task(_pipe(reader, up_writer, half_close=True))
                    try:
                        await _pipe(up_reader, writer)
                    finally:
                        inward.cancel()
                        await asyncio.gather(inward, return_exceptions=True)
                else:
                    await _pipe(up_reader, writer)
            finally:
                sending.cancel()
                await asyncio.gather(sending, return_exceptions=True)
        finally:
            up_writer.close()


async def open_proxy(folder: str, engine_socket: str, owner: request_mod.Owner) -> DockerProxy:
    """A proxy serving `folder`/sock for `owner`'s attempt, to the engine at `engine_socket`."""
    engine = Engine(engine_socket)
    proxy = DockerProxy(folder, engine, policy_mod.Policy(owner, engine.lookup, engine.create_volume))
    await proxy.start()
    return proxy


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, left: int) -> None:
    """Exactly `left` bytes from reader to writer (a body, or one chunk with its CRLF)."""
    while left:
        part = await reader.read(min(left, CHUNK))
        if not part:
            raise asyncio.IncompleteReadError(b"", left)
        writer.write(part)
        left -= len(part)
        await writer.drain()
