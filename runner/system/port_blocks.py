"""Blocks of free TCP ports leased to `plugkit work` workers (work_ports): a lease holds an
flock on one file per port in a per-user directory for as long as it lives.

Why locks on files and not a table in the runner: two workers of one run, of two runs, or of
two runners (two PLUGKIT_HOMEs of one user) must never get the same port, and a crashed runner
must not keep its ports: flock is per open file description (a second open in the same process
conflicts too) and the kernel drops it with the process. A port is leased only when nothing
listens on it and it can be bound right now; ports under the ephemeral range (where Linux does
not hand out outgoing connections' local ports) are preferred.
Blocking (binds, opens): call it in a thread.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
from dataclasses import dataclass, field
from plugkit import locks

LOW, HIGH = 20000, 32000  # below Linux's default ephemeral range (32768-60999)
TRIES = 400  # candidate blocks tried before giving up


class NoPorts(Exception):
    """No block of that many free ports was found; the message is one line."""


@dataclass
class Lease:
    first: int
    count: int
    _fds: list[int] = field(default_factory=list, repr=False)

    @property
    def last(self) -> int:
        return self.first + self.count - 1

    @property
    def ports(self) -> range:
        return range(self.first, self.first + self.count)

    @property
    def text(self) -> str:
        return f"{self.first}-{self.last}"

    def env(self) -> dict[str, str]:
        return {"PORT": str(self.first), "PLUGKIT_PORTS": self.text}

    def release(self) -> None:
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)  # the lock goes with the last descriptor

    @property
    def held(self) -> bool:
        return bool(self._fds)


def lock_dir() -> str:
    """Per user, shared by every runner of that user; 0700 so no one else can hold our ports."""
    path = os.path.join(tempfile.gettempdir(), f"plugkit-ports-{os.getuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not os.path.isdir(path) or os.path.islink(path) or st.st_uid != os.getuid():
        raise NoPorts(f"{path} is not a directory of this user's: remove it, then retry")
    return path


def _lock(folder: str, port: int) -> int | None:
    return locks.try_exclusive(os.path.join(folder, str(port)))


def free(port: int) -> bool:
    """Nothing is bound to it on any address, IPv4 or IPv6 (where this machine has IPv6)."""
    for family, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            s = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue  # no IPv6 here
        try:
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            s.bind((host, port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def lease(count: int, low: int = LOW, high: int = HIGH) -> Lease:
    """A block of `count` consecutive free ports, locked for this lease; NoPorts when none is found."""
    folder = lock_dir()
    blocks = (high - low + 1) // count
    if blocks < 1:
        raise NoPorts(f"no room for {count} ports between {low} and {high}")
    start = random.randrange(blocks)  # from a random block on, each once: runners do not all race for the first
    for k in range(min(TRIES, blocks)):
        first = low + (start + k) % blocks * count  # aligned blocks: two leases never overlap halfway
        got = Lease(first, count)
        try:
            for port in got.ports:
                fd = _lock(folder, port)
                if fd is None:
                    break
                got._fds.append(fd)
                if not free(port):
                    break
            else:
                return got
        except OSError:
            got.release()
            raise
        got.release()
    raise NoPorts(f"no block of {count} free TCP ports between {low} and {high} (many taken or leased); "
                  "lower work_ports, or end what holds them")
