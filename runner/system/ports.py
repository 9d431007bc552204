"""Who holds a TCP port, evicting a stale runner of ours, and kill-port."""

import errno
import json
import os
import signal
import socket
import time
from dataclasses import dataclass
from typing import Callable

from plugkit import SERVICE, paths
from runner.system.tags import read_tags


@dataclass(frozen=True)
class Holder:
    pid: int | None
    command: str
    user: str | None


class PortTaken(Exception):
    def __init__(self, port: int, holder: Holder, why: str = "") -> None:
        self.port, self.holder = port, holder
        who = f"pid {holder.pid} ({holder.command})" if holder.pid else "a process we cannot see (another user?)"
        super().__init__(
            f"port {port} is taken by {who}{why}; set PLUGKIT_PORT to another port "
            f"(e.g. PLUGKIT_PORT={port + 1}), or free it with `plugkit kill-port {port} --force`"
        )


class PortHeld(PortTaken):
    """No process listens there: the port is the local end of a connection (ephemeral range)."""

    def __init__(self, port: int, held: list[str], waited_s: float) -> None:
        self.port, self.held = port, held
        self.holder = Holder(None, "?", None)
        what = "; ".join(held[:3]) if held else "a connection plugkit cannot see"
        # Closed from this end, a connection keeps its port in TIME_WAIT for 60 s on Linux.
        ends = ", which ends within a minute" if any("TIME_WAIT" in h for h in held) else ""
        Exception.__init__(
            self,
            f"port {port} is held by an outgoing connection {what}, still there after {waited_s:g} s{ends} "
            f"(Linux picks such ports from its ephemeral range); `plugkit doctor` prints the sysctl "
            f"line that reserves port {port}, or set PLUGKIT_PORT to another port")


def listeners(port: int) -> list[Holder]:
    """Processes listening on 127.0.0.1/any address at `port` (pid None if not ours to see)."""
    import psutil  # only on the conflict path: keeps it off the runner's boot time

    found = []
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
            found.append(describe(conn.pid))
    return found


def listening(roots: dict[int, int]) -> dict[int, list[int]]:
    """key -> the TCP ports the process tree under each root pid listens on (sorted, unique).
    Blocking: one scan of the system's sockets and one walk of each tree. A tree's processes
    that daemonized away from it are not found here (its cgroup would hold them)."""
    import psutil

    owner: dict[int, int] = {}
    for key, pid in roots.items():
        try:
            root = psutil.Process(pid)
            for proc in [root, *root.children(recursive=True)]:
                owner.setdefault(proc.pid, key)
        except psutil.Error:
            continue
    found: dict[int, set[int]] = {}
    try:
        conns = psutil.net_connections(kind="tcp")
    except psutil.Error:
        return {}
    for conn in conns:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.pid in owner:
            found.setdefault(owner[conn.pid], set()).add(conn.laddr.port)
    return {key: sorted(ports) for key, ports in found.items()}


def describe(pid: int | None) -> Holder:
    import psutil

    if pid is None:
        return Holder(None, "?", None)
    try:
        proc = psutil.Process(pid)
        return Holder(pid, " ".join(proc.cmdline())[:200] or proc.name(), proc.username())
    except psutil.Error:
        return Holder(pid, "?", None)


def health(port: int, timeout: float = 1.0) -> dict | None:
    """GET /health on loopback; the parsed JSON if a plugkit runner answers, else None."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            raw = b""
            while chunk := sock.recv(65536):
                raw += chunk
        body = json.loads(raw.split(b"\r\n\r\n", 1)[1])
        return body if body.get("service") == SERVICE else None
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def is_stale_runner(port: int, holder: Holder) -> bool:
    """A plugkit runner of this user whose own state dir no longer names it as its instance."""
    import psutil

    if holder.pid is None:
        return False
    try:
        proc = psutil.Process(holder.pid)
        if proc.uids().real != os.getuid() or "runner" not in proc.cmdline():
            return False
        their_home = paths.home(proc.environ())
    except psutil.Error:
        return False
    answer = health(port)
    if not answer or answer.get("pid") != holder.pid:
        return False
    try:
        with open(os.path.join(their_home, "runner.pid")) as fh:
            return int(fh.read().strip()) != holder.pid
    except (OSError, ValueError):
        return True  # its state dir is gone: nobody can reach it any more


def _gone(proc) -> bool:
    import psutil

    try:
        # A zombie has released its sockets; reaping it is its parent's business.
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def terminate(pid: int, grace_s: float = 1.0) -> bool:
    """TERM, wait, KILL, wait: for one process whose identity the caller has checked."""
    import psutil

    try:
        proc = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return True
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            proc.send_signal(sig)
        except psutil.NoSuchProcess:
            return True
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if _gone(proc):
                return True
            time.sleep(0.01)
    return _gone(proc)


# Linux hands out 32768-60999 as the local end of outgoing connections, and the default
# port lies there: a connection to anywhere can briefly own it. Most are short-lived, so
# wait this long for it before giving up and naming it.
HELD_RETRY_S = 5.0
HELD_POLL_S = 0.1


def connections(port: int) -> list[str]:
    """Non-listening TCP sockets whose local end is `port`: 'local -> remote (state, pid N cmd)'."""
    import psutil

    found = []
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status != psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
            remote = f"{conn.raddr.ip}:{conn.raddr.port}" if conn.raddr else "?"
            who = describe(conn.pid)
            owner = f"pid {who.pid} ({who.command[:80]})" if who.pid else "pid not visible"
            found.append(f"{conn.laddr.ip}:{conn.laddr.port} -> {remote} ({conn.status}, {owner})")
    return found


def _try_bind(port: int) -> socket.socket | None:
    """The listening socket, or None if the address is in use; other errors propagate."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # REUSEADDR only skips TIME_WAIT leftovers of a previous runner; Linux still refuses
    # while another socket listens there, or while a connection made without REUSEADDR
    # (every port the kernel picks for connect()) holds it, even in TIME_WAIT.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(512)
        sock.setblocking(False)
        return sock
    except OSError as exc:
        sock.close()
        if exc.errno != errno.EADDRINUSE:
            raise
        return None


def bind(port: int, retry_s: float = HELD_RETRY_S,
         on_held: Callable[[list[str]], None] | None = None) -> socket.socket:
    """Bind 127.0.0.1:port, evicting a stale runner of ours; PortTaken for anything else.

    With no listener there, the port is the local end of some connection: retry for
    `retry_s` (`on_held` hears about it once), then name the connection."""
    for attempt in range(2):
        sock = _try_bind(port)
        if sock is not None:
            return sock
        holders = listeners(port)
        if not holders:
            return _wait_for_connection(port, retry_s, on_held)
        stale = [h for h in holders if is_stale_runner(port, h)]
        if attempt == 0 and stale and len(stale) == len(holders):
            for holder in stale:
                terminate(holder.pid)  # type: ignore[arg-type]
            time.sleep(0.05)
            continue
        holder = holders[0]
        why = " (a plugkit runner of another PLUGKIT_HOME that is still live)" if (
            holder.pid and "runner" in holder.command and health(port)) else ""
        raise PortTaken(port, holder, why)
    raise AssertionError("unreachable")


def _wait_for_connection(port: int, retry_s: float, on_held: Callable[[list[str]], None] | None) -> socket.socket:
    held = connections(port)
    if on_held is not None:
        on_held(held)
    deadline = time.monotonic() + retry_s
    while time.monotonic() < deadline:
        time.sleep(HELD_POLL_S)
        sock = _try_bind(port)
        if sock is not None:
            return sock
    if listeners(port):  # something started listening meanwhile: the ordinary path names it
        return bind(port, retry_s=0)
    raise PortHeld(port, connections(port) or held, retry_s)


# --- kill-port -----------------------------------------------------------------------

class KillRefused(Exception):
    """The port's holder is not ours to kill; str() says whose it is, `pid` names the spared one."""

    def __init__(self, message: str, pid: int | None = None, foreign: bool = False) -> None:
        super().__init__(message)
        self.pid = pid
        self.foreign = foreign  # only refused for not being the caller's: --force would kill it


@dataclass(frozen=True)
class Freed:
    pid: int
    command: str
    processes: int  # the listener plus the descendants signalled with it


def kill_port(port: int, spare: dict[int, str], grace_s: float = 1.0,
              mine: Callable[[dict | None, list[int]], bool] | None = None) -> tuple[list[Freed], list[int]]:
    """Kill every process listening on `port`, each with its descendants: TERM, grace, KILL.

    `spare` maps pids that must survive to what they are ("the plugkit runner
    itself"); a listener that is one of them or an ancestor of one is refused.
    `mine(tags, ancestor pids)`, when given, must say yes for every listener (the caller's own).
    Every listener is checked before anything is signalled, so a refusal kills
    nothing. Returns (what was freed, pids still alive after KILL).
    """
    import psutil

    plans: list[tuple[Holder, list]] = []
    seen: set[int | None] = set()
    for holder in listeners(port):
        if holder.pid in seen:  # one process listening on both 0.0.0.0 and ::
            continue
        seen.add(holder.pid)
        if holder.pid is None:
            raise KillRefused(f"port {port} is held by a process plugkit cannot see (another user's?); "
                              "plugkit only kills your own processes")
        try:
            proc = psutil.Process(holder.pid)
            if proc.uids().real != os.getuid():
                raise KillRefused(f"port {port} is held by pid {holder.pid} ({holder.command}) of user "
                                  f"{holder.user or '?'}; plugkit only kills your own processes")
            tree = [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue  # it went away by itself
        members = {p.pid for p in tree}
        for pid, what in spare.items():
            if pid == holder.pid:
                raise KillRefused(f"port {port} is held by {what} (pid {pid})", pid)
            if pid in members:
                raise KillRefused(f"port {port} is held by pid {holder.pid} ({holder.command}), "
                                  f"an ancestor of {what} (pid {pid})", pid)
        if mine is not None and not mine(read_tags(holder.pid), [p.pid for p in _parents(proc)]):
            raise KillRefused(f"port {port} is held by pid {holder.pid} ({' '.join(holder.command.split())[:120]}), which is not "
                              "one of this session's tasks", holder.pid, foreign=True)
        plans.append((holder, tree))
    survivors = end_processes([p for _, tree in plans for p in tree], grace_s)
    return [Freed(h.pid, h.command, len(tree)) for h, tree in plans], survivors  # type: ignore[arg-type]


def _parents(proc) -> list:
    import psutil

    try:
        return proc.parents()
    except psutil.Error:
        return []


def end_processes(procs: list, grace_s: float) -> list[int]:
    """TERM all, wait up to grace_s, KILL the rest, wait again; the pids still alive."""
    import psutil

    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in procs:
            try:
                proc.send_signal(sig)  # psutil checks the pid still names the same process
            except psutil.Error:
                pass
        deadline = time.monotonic() + grace_s
        while True:
            procs = [p for p in procs if not _gone(p)]
            if not procs or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        if not procs:
            return []
    return [p.pid for p in procs]
