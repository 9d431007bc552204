"""Connections before they are requests: who may open one, how many one peer may hold, and
how long one may take to say what it wants. Each rule names the attack it stops.

Where it sits. aiohttp serves the runner's HTTP: its RequestHandler, llhttp's C parser behind
it, answers each connection. GuardedHandler is that handler with the guard in front: the
guard is asked at connection_made, before the transport reads a byte; it counts what each
peer holds; the handler keeps the request clocks (the framing middleware, runner/http/framing.py,
tells it when a request is being served).

1. Another local user: the runner is loopback-only, but every uid can dial loopback. A
   connection whose socket another uid owns is closed unread (its token guard would hold,
   yet every connection it keeps open costs us a descriptor).
2. A flood from our own uid (the agent): at most MAX_PER_PEER connections per uid; past
   that, its oldest connection not serving a request is closed, so a flood evicts itself
   while a client that sends its request at once still gets through. A peer is a uid: the
   kernel names a socket's uid in O(1) (socket_owner.py), its process only by a /proc walk.
3. Half-sent requests (slowloris): closed unanswered REQUEST_DEADLINE_S after the connection
   opened or a request's first bytes came; a body not whole within BODY_DEADLINE_S gets a 408
   and a close (framing.py); an answered keep-alive connection is closed after IDLE_S
   (aiohttp's keepalive_timeout).
"""

import asyncio
import os
from collections import OrderedDict
from typing import Callable, Optional

from aiohttp import web
from aiohttp.http_exceptions import LineTooLong

from runner.http.framing import framing_middleware
from runner.http.keys import CONTEXT
from runner.http.replies import error
from runner.system import logs

# The port the kernel's answer comes through (runner/system/socket_owner.py's owner_uid, handed
# in by the composition in runner/boot/serve.py: transport never reaches the system layer):
# (peer, local, family) -> the uid owning the peer's socket; None: no such live connection;
# UNKNOWABLE: the kernel cannot be asked.
OwnerOf = Callable[[tuple, tuple, int], Optional[int]]
UNKNOWABLE = -1

log = logs.get("plugkit.guards")

REQUEST_DEADLINE_S = 5.0
BODY_DEADLINE_S = 5.0
IDLE_S = 75.0  # an answered keep-alive connection may wait this long for its next request
MAX_PER_PEER = 256
# What llhttp holds of one request head: a line (request line, or one header) of at most
# MAX_LINE bytes, at most MAX_HEADERS of them; past either, 431 and a close.
MAX_LINE = 8190
MAX_HEADERS = 64
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
        self.peers: dict[int, OrderedDict[asyncio.BaseTransport, "GuardedHandler"]] = {}
        self.conns: dict[asyncio.BaseTransport, "GuardedHandler"] = {}
        self.refused = self.evicted = self.expired = 0
        self.unknowable = False

    def admit(self, transport: asyncio.BaseTransport, conn: "GuardedHandler") -> bool:
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

    def _evict(self, held: "OrderedDict[asyncio.BaseTransport, GuardedHandler]") -> bool:
        victim = next((t for t, conn in held.items() if not conn.guard_serving), None)
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


class GuardedHandler(web.RequestHandler):
    """aiohttp's connection handler, admitted by the ConnGuard and on the request clock. Its own
    state is named guard_* so it never shadows the handler's."""

    def __init__(self, manager: web.Server, guard: ConnGuard, **kwargs) -> None:
        super().__init__(manager, **kwargs)
        self.guard, self.guard_loop = guard, kwargs["loop"]
        self.guard_transport: Optional[asyncio.Transport] = None
        self.guard_serving = False  # a request's handler runs (the guard never evicts such a connection)
        self.guard_waiting = False  # bytes of a request not yet being served came
        self.guard_after_body = False  # the served request's body is read: what comes now is the next one's
        # The request clock: the deadline now running (None: none), and the one timer that checks it.
        # Lazy, so a keep-alive request costs a float store and no TimerHandle (one armed and one
        # cancelled per request was measurable in runner.info throughput): the timer, once
        # pending, fires at or before the deadline and re-arms itself to whatever deadline holds then.
        self.guard_deadline: Optional[float] = None
        self.guard_timer: Optional[asyncio.TimerHandle] = None

    # --- the transport's callbacks -----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self.guard.admit(transport, self):
            transport.abort()  # before the loop's first read: not a byte of theirs is parsed
            return
        self.guard_transport = transport  # type: ignore[assignment]
        self._guard_arm(self.guard.request_deadline_s)
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.guard_transport is None:
            return
        if not data:
            pass  # aiohttp feeds itself b"" to resume its parser: no client byte came
        elif not self.guard_serving:
            self.guard_waiting = True
            if self.guard_deadline is None:  # a request begins: it has this long to be whole
                self._guard_arm(self.guard.request_deadline_s)
        elif self.guard_after_body:
            self.guard_waiting = True  # a pipelined request: on the clock once this one is answered
        super().data_received(data)

    def eof_received(self) -> Optional[bool]:
        """The client shut its sending side: answer what it sent, then close."""
        if self.guard_serving or self.guard_waiting:
            self.close()  # aiohttp answers the requests it has, then closes
            return True  # half-closed: the answers still go out
        return None  # nothing asked: the transport closes

    def connection_lost(self, exc: Optional[BaseException]) -> None:
        if self.guard_transport is None:
            return  # refused at connection_made: aiohttp never saw it
        self._guard_cancel()
        if self.guard_timer is not None:
            self.guard_timer.cancel()
            self.guard_timer = None
        self.guard.release(self.guard_transport)
        super().connection_lost(exc)

    def handle_error(self, request, status: int = 500, exc: Optional[BaseException] = None,
                     message: Optional[str] = None) -> web.StreamResponse:
        """What llhttp refused, answered in JSON and closed (aiohttp's own text would echo the
        client's bytes); a head line over MAX_LINE is a 431."""
        if status == 400 and exc is not None:
            status = 431 if isinstance(exc, LineTooLong) or "Too many headers" in str(exc) else 400
            log.warning("request_refused", status=status, reason="unparsable")
            return error(status, "request head too large" if status == 431 else "malformed request", close=True)
        return super().handle_error(request, status, exc, message)

    # --- the request clock (framing.py calls begin and end around each request) -------------

    def begin(self) -> None:
        self._guard_cancel()
        self.guard_serving, self.guard_waiting, self.guard_after_body = True, False, False

    def body_read(self) -> None:
        self.guard_after_body = True

    def end(self) -> None:
        self.guard_serving = self.guard_after_body = False
        if self.guard_waiting and self.guard_transport is not None:
            self._guard_arm(self.guard.request_deadline_s)  # a request came behind this one

    def _guard_arm(self, seconds: float) -> None:
        self.guard_deadline = deadline = self.guard_loop.time() + seconds
        timer = self.guard_timer
        if timer is not None and timer.when() > deadline:  # a clock shortened since: check sooner
            timer.cancel()
            timer = None
        if timer is None:
            self.guard_timer = self.guard_loop.call_at(deadline, self._guard_tick)

    def _guard_cancel(self) -> None:
        self.guard_deadline = None  # the pending timer, if any, finds no clock and lapses

    def _guard_tick(self) -> None:
        self.guard_timer = None
        deadline = self.guard_deadline
        if deadline is None:
            return
        # The clock restarted after this timer was set (asyncio runs a timer up to its clock's
        # resolution early: a deadline that close is due, not re-armed to spin).
        if self.guard_loop.time() + 0.001 < deadline:
            self.guard_timer = self.guard_loop.call_at(deadline, self._guard_tick)
            return
        self._guard_expire()

    def _guard_expire(self) -> None:
        """A request not whole in time (or a connection that never sent one): closed unanswered."""
        self.guard_deadline = None
        if self.guard_transport is not None and not self.guard_serving:
            self.guard.expired += 1
            self.guard_transport.abort()

    def abort(self) -> None:
        if self.guard_transport is not None:
            self.guard_transport.abort()


def make_guard(owner_of: OwnerOf, uid: Optional[int] = None) -> ConnGuard:
    return ConnGuard(os.getuid() if uid is None else uid, owner_of)


class Serving:
    """The app served on a socket: cleanup() stops listening, gives in-flight requests
    STOP_GRACE_S, closes every connection, then runs the app's cleanup."""

    def __init__(self, app_runner: web.AppRunner, server: asyncio.AbstractServer, guard: ConnGuard) -> None:
        self.app_runner, self.server, self.guard = app_runner, server, guard

    async def cleanup(self) -> None:
        self.server.close()
        await self.app_runner.cleanup()
        for conn in list(self.guard.conns.values()):
            conn.abort()


async def serve(app: web.Application, sock, guard: ConnGuard, max_body: Optional[int] = None) -> Serving:
    """The app's startup, then its requests answered on sock (bound, not yet listening), or on
    what sock() returns, called once the startup is done: how the daemon serves, and how tests
    that need a real runner on a port serve it too. max_body: the app's Context's limit unless given.

    The daemon binds only after its startup: a port that listens before the loop can answer lets
    the kernel accept a client that then waits, unanswered, past its /health timeout (a
    restarted runner's port, dialled through the dead runner's port file)."""
    if max_body is None:
        max_body = app[CONTEXT].config.limits.max_body_bytes
    app.middlewares.insert(0, framing_middleware(guard.body_deadline_s, max_body))
    app_runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=STOP_GRACE_S, access_log=None)
    await app_runner.setup()
    if callable(sock):
        try:
            sock = await asyncio.to_thread(sock)  # ports.bind may wait out a connection holding the port
        except BaseException:
            await app_runner.cleanup()
            raise
    loop = asyncio.get_running_loop()
    server = app_runner.server
    assert server is not None
    # lingering_time=0: a refused body is not read on to its end; the connection closes.
    settings = dict(loop=loop, keepalive_timeout=guard.idle_s, access_log=None, lingering_time=0.0,
                    max_line_size=MAX_LINE, max_field_size=MAX_LINE, max_headers=MAX_HEADERS)
    listener = await loop.create_server(lambda: GuardedHandler(server, guard, **settings), sock=sock, backlog=BACKLOG)
    return Serving(app_runner, listener, guard)
