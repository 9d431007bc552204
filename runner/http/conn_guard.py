"""Connections before they are requests: who may open one, how many one peer may hold, and
how long one may take to say what it wants. Each rule names the attack it stops.

Why these seams. aiohttp parses inside its protocol (RequestHandler) and calls the app
only once a request's headers are complete, so an app middleware never sees a half-sent
request, and aiohttp itself has no header deadline (its keepalive_timeout is also the idle
time a good keep-alive client may pause between calls). The asyncio protocol factory sees
every connection the moment it is accepted and every byte as it arrives. So GuardedSite
hands the loop a factory that wraps aiohttp's own handler: the wrapper refuses a connection
in connection_made, before the transport reads a byte; counts what each peer holds; and
starts a request's clock when the connection opens or the next request's first bytes
arrive. body_guard, the innermost middleware, stops that clock once the body is read (under
its own deadline: a handler awaiting a half-sent body is not idle to aiohttp either).

1. Another local user: the runner is loopback-only, but every uid can dial loopback. A
   connection whose socket another uid owns is closed unread (its token guard would hold,
   yet every connection it keeps open costs us a descriptor).
2. A flood from our own uid (the agent): at most MAX_PER_PEER connections per uid; past
   that, its oldest connection not serving a request is closed, so a flood evicts itself
   while a client that sends its request at once still gets through. A peer is a uid: the
   kernel names a socket's uid in O(1) (socket_owner.py), its process only by a /proc walk.
3. Half-sent requests: closed REQUEST_DEADLINE_S after the connection opened or the request's
   first bytes came, and a body not whole within BODY_DEADLINE_S gets a 408 and a close.
"""

import asyncio
import os
from collections import OrderedDict
from typing import Awaitable, Callable, Optional

# The port the kernel's answer comes through (runner/system/socket_owner.py's owner_uid, handed
# in by the composition in runner/boot/serve.py: transport never reaches the system layer):
# (peer, local, family) -> the uid owning the peer's socket; None: no such live connection;
# UNKNOWABLE: the kernel cannot be asked.
OwnerOf = Callable[[tuple, tuple, int], Optional[int]]
UNKNOWABLE = -1

from aiohttp import web

from runner.system import logs

log = logs.get("plugkit.guards")

REQUEST_DEADLINE_S = 5.0
BODY_DEADLINE_S = 5.0
IDLE_S = 75.0  # an answered keep-alive connection may wait this long for its next request
LINGER_S = 1.0  # how long the unread body of a refused request is drained before the close
MAX_PER_PEER = 256
# A deep accept queue: under a flood the loop accepts in bursts, and a client the kernel
# turns away waits out SYN retries (1 s, 3 s, ...) however fast the runner answers later.
BACKLOG = 1024


class _Guarded(asyncio.Protocol):
    """aiohttp's handler behind the guard: every transport callback is passed through,
    except for a connection the guard refused, which the handler never sees."""

    def __init__(self, inner: asyncio.Protocol, guard: "ConnGuard") -> None:
        self.inner, self.guard = inner, guard
        self.transport: Optional[asyncio.BaseTransport] = None
        self.serving = False
        self.deadline: Optional[asyncio.TimerHandle] = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self.guard.admit(transport, self):
            transport.abort()  # before the loop's first read: not a byte of theirs is parsed
            return
        self.transport = transport
        self.arm()
        self.inner.connection_made(transport)

    def arm(self) -> None:
        if self.deadline is None and not self.serving:
            self.deadline = asyncio.get_running_loop().call_later(REQUEST_DEADLINE_S, self._expire)

    def disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _expire(self) -> None:
        self.deadline = None
        if self.transport is not None and not self.serving:
            self.guard.expired += 1
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        if self.transport is not None:
            self.arm()  # a request is coming: it has REQUEST_DEADLINE_S to be whole
            self.inner.data_received(data)

    def eof_received(self) -> Optional[bool]:
        return self.inner.eof_received() if self.transport is not None else None

    def connection_lost(self, exc: Optional[BaseException]) -> None:
        self.disarm()
        if self.transport is not None:
            self.guard.release(self.transport)
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.transport is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.transport is not None:
            self.inner.resume_writing()


class ConnGuard:
    """Who holds which connection: uid -> transports, oldest first."""

    def __init__(self, uid: int, owner_of: OwnerOf, max_per_peer: int = MAX_PER_PEER) -> None:
        self.uid, self.owner_of, self.max_per_peer = uid, owner_of, max_per_peer
        self.peers: dict[int, OrderedDict[asyncio.BaseTransport, _Guarded]] = {}
        self.conns: dict[asyncio.BaseTransport, _Guarded] = {}
        self.refused = self.evicted = self.expired = 0
        self.unknowable = False

    def admit(self, transport: asyncio.BaseTransport, conn: _Guarded) -> bool:
        sock = transport.get_extra_info("socket")
        peer, local = transport.get_extra_info("peername"), transport.get_extra_info("sockname")
        uid = self.owner_of(peer, local, sock.family) if sock is not None and peer and local else None
        if uid == UNKNOWABLE:
            # A kernel that cannot name owners must not lock out everyone, ourselves included:
            # such peers share our uid's cap (and are logged once).
            if not self.unknowable:
                log.warning("peer_uid_unknowable", why="neither sock_diag nor /proc/net/tcp answers")
            self.unknowable, uid = True, self.uid
        if uid != self.uid:
            self.refused += 1
            log.warning("connection_refused", reason="other_uid" if uid is not None else "unknown_owner", uid=uid)
            return False
        held = self.peers.setdefault(uid, OrderedDict())
        if len(held) >= self.max_per_peer and not self._evict(held):
            self.refused += 1
            log.warning("connection_refused", reason="peer_cap", uid=uid, held=len(held))
            return False
        held[transport] = conn
        self.conns[transport] = conn
        return True

    def _evict(self, held: "OrderedDict[asyncio.BaseTransport, _Guarded]") -> bool:
        victim = next((t for t, conn in held.items() if not conn.serving), None)
        if victim is None:
            return False
        self.release(victim)
        victim.abort()
        self.evicted += 1
        if self.evicted == 1 or self.evicted % 1000 == 0:
            log.warning("connections_evicted", total=self.evicted, cap=self.max_per_peer)
        return True

    def serving(self, transport: Optional[asyncio.BaseTransport], flag: bool) -> None:
        conn = self.conns.get(transport) if transport is not None else None
        if conn is not None:
            conn.serving = flag
            if flag:
                conn.disarm()

    def release(self, transport: asyncio.BaseTransport) -> None:
        self.conns.pop(transport, None)
        for uid, held in list(self.peers.items()):
            if held.pop(transport, None) is not None and not held:
                del self.peers[uid]

    def snapshot(self) -> dict:
        return {"open": len(self.conns), "refused": self.refused, "evicted": self.evicted,
                "expired": self.expired, "max_per_peer": self.max_per_peer}


class GuardedSite(web.SockSite):
    """web.SockSite whose connections pass the ConnGuard first."""

    def __init__(self, runner: web.BaseRunner, sock, guard: ConnGuard, **kwargs) -> None:
        super().__init__(runner, sock, **kwargs)
        self.guard = guard

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with its runner
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            lambda: _Guarded(server(), self.guard), sock=self._sock, backlog=BACKLOG)


def body_guard(guard: ConnGuard) -> Callable:
    """The innermost middleware: marks a connection as serving (never evicted, its request
    clock stopped) while its request runs, and reads the body under BODY_DEADLINE_S (the
    handler then reads it from aiohttp's cache)."""

    @web.middleware
    async def body_deadline(request: web.Request,
                            handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        transport = request.transport
        guard.serving(transport, True)
        try:
            if request.body_exists:
                try:
                    async with asyncio.timeout(BODY_DEADLINE_S):  # not wait_for: no task, no loop passes of its own
                        await request.read()
                except web.HTTPRequestEntityTooLarge:
                    return web.json_response({"error": "body too large"}, status=413)
                except TimeoutError:
                    log.warning("request_refused", status=408, reason="body_deadline", path=request.path)
                    # Connection: close; the unread rest lingers at most lingering_time (serve.py).
                    raise web.HTTPRequestTimeout(text=f"body not sent within {BODY_DEADLINE_S:g}s",
                                                 headers={"Connection": "close"}) from None
                except (ConnectionError, RuntimeError):
                    # The peer left mid-body: nobody to answer, and nothing worth a logged
                    # traceback (a thousand peers leaving at once would each cost one).
                    return web.Response(status=400)
            return await handler(request)
        finally:
            guard.serving(transport, False)

    return body_deadline


def make_guard(owner_of: OwnerOf, uid: Optional[int] = None) -> ConnGuard:
    return ConnGuard(os.getuid() if uid is None else uid, owner_of)
