"""A worker's network under `--network loopback-model`: its own network namespace (bwrap
--unshare-net: loopback only), and a relay so that exactly two kinds of place stay reachable:
this runner (its hooks, its exec:) and the model endpoints its *_BASE_URL variables name.

Two halves meet at unix sockets in a dir bound into the sandbox, one per port:
  inside   this file run as a script (standard library only) in front of the worker's argv:
           listens on 127.0.0.1:PORT (and [::1]:PORT) in the namespace, pipes each connection
           to DIR/PORT.sock, runs the worker as its child and exits as it does;
  outside  Relay, held by the runner: serves DIR/PORT.sock, each connection opened to that
           port's one target (host, port) on the real network.
A hostname endpoint (api.example.com) resolves to 127.0.0.1 inside through the sandbox's own
/etc/hosts. Nothing else answers inside: another loopback port of the machine, the internet,
DNS. An endpoint given as a non-loopback IP cannot be relayed (the namespace has no such
address) and refuses the worker. No new daemon: the relay is the runner and this script.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import Mapping
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


class Unreachable(ValueError):
    """An endpoint the namespace cannot relay: the message says which and why."""


def endpoints(env: Mapping[str, str]) -> dict[int, tuple[str, int]]:
    """inside port -> (host, port) outside, for every *_BASE_URL the worker holds."""
    found: dict[int, tuple[str, int]] = {}
    for name, value in sorted(env.items()):
        if not name.endswith("_BASE_URL") or not value:
            continue
        url = urlsplit(value)
        host, port = url.hostname, url.port or DEFAULT_PORTS.get(url.scheme)
        if not host or not port:
            continue
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            ip = None
        if ip is not None and not ip.is_loopback:
            raise Unreachable(f"{name} names {host}, an address the worker's loopback-only network "
                              "cannot relay; name the endpoint by hostname, or run with --network host")
        if found.get(port, (host, port)) != (host, port):
            raise Unreachable(f"two model endpoints on port {port}; run with --network host")
        found[port] = (host, port)
    return found


def hosts_file(targets: dict[int, tuple[str, int]]) -> str:
    """The sandbox's /etc/hosts: every endpoint's name is loopback, where the relay listens."""
    names = sorted({h for h, _p in targets.values() if h not in LOOPBACK_NAMES and not _is_ip(h)})
    return "127.0.0.1 localhost\n::1 localhost\n" + "".join(f"127.0.0.1 {n}\n" for n in names)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def wrap(folder: str, ports: list[int], inner: list[str]) -> list[str]:
    """The worker's argv behind the inside half (run in the sandbox by the runner's interpreter)."""
    return [sys.executable, "-I", os.path.abspath(__file__), folder, ",".join(map(str, ports)), "--", *inner]


def namespace_args(folder: str) -> tuple[str, ...]:
    """bwrap's arguments for the worker's own network: loopback only, the relay's sockets and
    the /etc/hosts that open_relay() wrote into `folder`. Read-only: connecting to a socket
    needs no write to its mount, and the worker must not swap the sockets or the hosts file."""
    return ("--unshare-net", "--ro-bind", folder, folder, "--ro-bind", os.path.join(folder, "hosts"), "/etc/hosts")


async def open_relay(folder: str, targets: dict[int, tuple[str, int]]) -> "Relay":
    """The outside half, serving in `folder` (made here, 0700, with the sandbox's /etc/hosts)."""
    os.makedirs(folder, mode=0o700)
    with open(os.path.join(folder, "hosts"), "w") as fh:
        fh.write(hosts_file(targets))
    relay = Relay(folder, targets)
    await relay.start()
    return relay


class Relay:
    """The outside half: one unix server per port, each connection piped to its one target."""

    def __init__(self, folder: str, targets: dict[int, tuple[str, int]]) -> None:
        self.folder, self.targets = folder, targets
        self._servers: list = []
        self._pipes: set = set()

    async def start(self) -> None:
        for port, target in self.targets.items():
            path = os.path.join(self.folder, f"{port}.sock")
            self._servers.append(await asyncio.start_unix_server(
                lambda r, w, t=target: self._track(self._pipe(t, r, w)), path=path))

    def _track(self, coro):
        task = asyncio.ensure_future(coro)  # owned here: close() cancels what is still open
        self._pipes.add(task)
        task.add_done_callback(self._pipes.discard)
        return task

    async def _pipe(self, target: tuple[str, int], reader, writer) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(*target)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(_copy(reader, up_w), _copy(up_r, writer))
        finally:
            for w in (writer, up_w):
                w.close()

    def abort(self) -> None:
        """Stops serving and cancels every open pipe, without waiting: for a caller that cannot
        await (each pipe ends on the loop's next turn, still owned by this relay until then)."""
        for server in self._servers:
            server.close()
        for task in list(self._pipes):
            task.cancel()

    async def close(self) -> None:
        self.abort()
        await asyncio.gather(*self._pipes, return_exceptions=True)


async def _copy(reader, writer) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        pass


# --- the inside half (a script: python -I netrelay.py DIR PORTS -- ARGV) ------------------

def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _bridge(conn: socket.socket, path: str) -> None:
    up = socket.socket(socket.AF_UNIX)
    try:
        up.connect(path)
    except OSError:
        conn.close()
        up.close()
        return
    back = threading.Thread(target=_pump, args=(up, conn), daemon=True)
    back.start()
    _pump(conn, up)
    back.join()
    conn.close()
    up.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_bridge, args=(conn, path), daemon=True).start()


def main(args: list[str]) -> int:
    folder, ports, inner = args[0], [int(p) for p in args[1].split(",") if p], args[args.index("--") + 1:]
    for port in ports:
        for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            listener = socket.socket(family)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                listener.bind((host, port))
            except OSError:
                listener.close()
                if family == socket.AF_INET:
                    raise
                continue  # no IPv6 loopback here: 127.0.0.1 serves
            listener.listen(64)
            threading.Thread(target=_serve, args=(listener, os.path.join(folder, f"{port}.sock")), daemon=True).start()
    child = subprocess.Popen(inner)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda n, _f: child.send_signal(n))
    rc = child.wait()
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
