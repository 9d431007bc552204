"""The uid owning the client end of a loopback TCP connection, without reading a byte from it.

The kernel records each socket's owner (the uid that created it) beside its 4-tuple. One
sock_diag netlink request for that exact tuple answers in microseconds whatever the number
of sockets (what `ss` uses); /proc/net/tcp holds the same column but is a text dump of every
socket, ~9 ms per read at 2,000 sockets, so a flood would make each accept slower than the
last: it is only the fallback for a kernel without sock_diag. Finding the owning *process*
would take a walk over every /proc/PID/fd (runner/system/peers.py does that for the rare
approval, never per connection). Standard library only.
"""

import socket
import struct
from typing import Optional

NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, NLMSG_ERROR = 4, 20, 1, 2
NO_COOKIE = 0xFFFFFFFF  # INET_DIAG_NOCOOKIE: match the tuple, whatever the socket's cookie
UID_AT = 16 + 64  # nlmsghdr, then inet_diag_msg's family..inode: uid after the sockid and 3 counters
TABLES = {socket.AF_INET: "/proc/net/tcp", socket.AF_INET6: "/proc/net/tcp6"}
# The client end's states that still have an owner: ESTABLISHED, and FIN_WAIT1/2 (it sent its
# request and shut its side). TIME_WAIT is a kernel remnant that reports uid 0: nobody.
ALIVE = frozenset({1, 4, 5})


def _diag(peer: tuple, local: tuple, family: int) -> Optional[int]:
    src = socket.inet_pton(family, peer[0]).ljust(16, b"\0")
    dst = socket.inet_pton(family, local[0]).ljust(16, b"\0")
    # struct inet_diag_req_v2 with its inet_diag_sockid (ports and addresses big-endian)
    req = (struct.pack("=BBBxI", family, socket.IPPROTO_TCP, 0, 0xFFFFFFFF)
           + struct.pack(">HH", peer[1], local[1]) + src + dst + struct.pack("=III", 0, NO_COOKIE, NO_COOKIE))
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
        nl.settimeout(1.0)
        nl.sendall(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0) + req)
        data = nl.recv(8192)
    if len(data) < UID_AT + 4 or struct.unpack_from("=H", data, 4)[0] == NLMSG_ERROR:
        return None  # ENOENT: no such connection (the peer already left)
    if data[16 + 1] not in ALIVE:  # inet_diag_msg.idiag_state
        return None
    return struct.unpack_from("=I", data, UID_AT)[0]


def _hex(host: str, family: int) -> str:
    """An address as /proc/net/tcp spells it: each 32-bit word in host (little-endian) order."""
    packed = socket.inet_pton(family, host)
    return "".join(f"{struct.unpack('<I', packed[i:i + 4])[0]:08X}" for i in range(0, len(packed), 4))


def _table(peer: tuple, local: tuple, family: int) -> Optional[int]:
    needle = f"{_hex(peer[0], family)}:{peer[1]:04X} {_hex(local[0], family)}:{local[1]:04X} ".encode()
    with open(TABLES[family], "rb") as fh:
        data = fh.read()
    at = data.find(needle)
    if at < 0:
        return None
    fields = data[at:data.find(b"\n", at)].split()  # local rem st tx:rx tr:tm retrnsmt uid ...
    return int(fields[6]) if int(fields[2], 16) in ALIVE else None


UNKNOWABLE = -1  # neither lookup could be asked (no sock_diag, no /proc/net): not "nobody"


def owner_uid(peer: tuple, local: tuple, family: int = socket.AF_INET) -> Optional[int]:
    """The uid of the socket at `peer` connected to our `local`; None when the kernel says
    there is no such live connection (the peer already left); UNKNOWABLE when it cannot be
    asked at all (a sandbox without sock_diag or /proc/net)."""
    try:
        return _diag(peer, local, family)
    except (OSError, ValueError, struct.error):
        pass
    try:
        return _table(peer, local, family)
    except (ValueError, KeyError, IndexError):
        return None
    except OSError:
        return UNKNOWABLE
