"""Connections before they are requests: who may open one, how many one peer may hold, and
how long one may take to say what it wants. Each rule names the attack it stops.

Where it sits. The runner's own HTTP protocol (runner/http/wire.py) asks the guard at
connection_made, before the transport reads a byte; the guard counts what each peer holds;
the connection keeps the request clocks: REQUEST_DEADLINE_S from the connection's open or the
next request's first byte, BODY_DEADLINE_S from a whole head to its whole body, IDLE_S for an
answered keep-alive connection.

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
from typing import Callable, Optional

# The port the kernel's answer comes through (runner/system/socket_owner.py's owner_uid, handed
# in by the composition in runner/boot/serve.py: transport never reaches the system layer):
# (peer, local, family) -> the uid owning the peer's socket; None: no such live connection;
# UNKNOWABLE: the kernel cannot be asked.
OwnerOf = Callable[[tuple, tuple, int], Optional[int]]
UNKNOWABLE = -1

from aiohttp import web

from runner.http.keys import CONTEXT, HANDLER
from runner.http.wire import Connection, Handler
from runner.system import logs

log = logs.get("plugkit.guards")

REQUEST_DEADLINE_S = 5.0
BODY_DEADLINE_S = 5.0
IDLE_S = 75.0  # an answered keep-alive connection may wait this long for its next request
MAX_PER_PEER = 256
# A deep accept queue: under a flood the loop accepts in bursts, and a client the kernel
# turns away waits out SYN retries (1 s, 3 s, ...) however fast the runner answers later.
BACKLOG = 1024
STOP_GRACE_S = 0.75  # what in-flight requests get at a stop: the whole stop stays under 2 s


class ConnGuard:
    """Who holds which connection: uid -> transports, oldest first."""

    request_deadline_s = REQUEST_DEADLINE_S
    body_deadline_s = BODY_DEADLINE_S
    idle_s = IDLE_S

    def __init__(self, uid: int, owner_of: OwnerOf, max_per_peer: int = MAX_PER_PEER) -> None:
        self.uid, self.owner_of, self.max_per_peer = uid, owner_of, max_per_peer
        self.peers: dict[int, OrderedDict[asyncio.BaseTransport, Connection]] = {}
        self.conns: dict[asyncio.BaseTransport, Connection] = {}
        self.refused = self.evicted = self.expired = 0
        self.unknowable = False

    def admit(self, transport: asyncio.BaseTransport, conn: Connection) -> bool:
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

    def _evict(self, held: "OrderedDict[asyncio.BaseTransport, Connection]") -> bool:
        victim = next((t for t, conn in held.items() if not conn.serving), None)
        if victim is None:
            return False
        self.release(victim)
        victim.abort()
        self.evicted += 1
        if self.evicted == 1 or self.evicted % 1000 == 0:
            log.warning("connections_evicted", total=self.evicted, cap=self.max_per_peer)
        return True

    def release(self, transport: asyncio.BaseTransport) -> None:
        self.conns.pop(transport, None)
        for uid, held in list(self.peers.items()):
            if held.pop(transport, None) is not None and not held:
                del self.peers[uid]

    def snapshot(self) -> dict:
        return {"open": len(self.conns), "refused": self.refused, "evicted": self.evicted,
                "expired": self.expired, "max_per_peer": self.max_per_peer}


class GuardedSite(web.SockSite):
    """web.SockSite serving the runner's own HTTP protocol (wire.py) behind the ConnGuard. The
    AppRunner still runs the app's startup and cleanup; the site answers the requests."""

    def __init__(self, runner: web.BaseRunner, sock, guard: ConnGuard, handler: Handler, max_body: int,
                 grace_s: float = STOP_GRACE_S, **kwargs) -> None:
        super().__init__(runner, sock, **kwargs)
        self.guard, self.handler, self.max_body, self.grace_s = guard, handler, max_body, grace_s

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with its runner
        self._server = await asyncio.get_running_loop().create_server(
            lambda: Connection(self.handler, self.guard, self.max_body), sock=self._sock, backlog=BACKLOG)

    async def stop(self) -> None:
        """No new connection; the requests being answered get grace_s to finish, then every
        connection goes (the app's cleanup, after this, stops what they could still reach)."""
        await super().stop()
        serving = [c.task for c in list(self.guard.conns.values()) if c.task is not None]
        if serving:
            await asyncio.wait(serving, timeout=self.grace_s)
        for conn in list(self.guard.conns.values()):
            conn.abort()


def make_guard(owner_of: OwnerOf, uid: Optional[int] = None) -> ConnGuard:
    return ConnGuard(os.getuid() if uid is None else uid, owner_of)


async def serve(app: web.Application, sock, guard: ConnGuard) -> web.AppRunner:
    """The app's startup, then its requests answered on sock (bound, not yet listening): how the
    daemon serves, and how tests that need a real runner on a port serve it too."""
    app_runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=STOP_GRACE_S, access_log=None)
    await app_runner.setup()
    await GuardedSite(app_runner, sock, guard, app[HANDLER], app[CONTEXT].config.limits.max_body_bytes).start()
    return app_runner
