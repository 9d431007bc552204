"""The owner of a loopback peer's socket, by both of the kernel's answers (sock_diag, and the
/proc/net/tcp fallback), on real sockets: ours is our uid, a peer that left is nobody."""

import os
import socket

from runner.http import conn_guard
from runner.system import socket_owner


def _pair():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    client = socket.create_connection(server.getsockname())
    accepted, peer = server.accept()
    return server, client, accepted, peer


def test_both_lookups_name_our_uid_and_nobody_once_the_peer_left():
    server, client, accepted, peer = _pair()
    local = accepted.getsockname()
    try:
        assert socket_owner.owner_uid(peer, local) == os.getuid()
        assert socket_owner._diag(peer, local, socket.AF_INET) == os.getuid()
        assert socket_owner._table(peer, local, socket.AF_INET) == os.getuid()
        assert socket_owner.owner_uid(("127.0.0.1", 1), local) is None  # no such connection
        client.close()
        accepted.close()
        assert socket_owner.owner_uid(peer, local) is None
    finally:
        for s in (server, client, accepted):
            s.close()


def test_a_kernel_that_cannot_be_asked_is_unknowable_not_nobody(monkeypatch):
    server, client, accepted, peer = _pair()
    try:
        monkeypatch.setattr(socket_owner, "NETLINK_SOCK_DIAG", 31337)  # no such netlink family
        monkeypatch.setattr(socket_owner, "TABLES", {socket.AF_INET: "/nonexistent/net/tcp"})
        assert socket_owner.owner_uid(peer, accepted.getsockname()) == socket_owner.UNKNOWABLE
        assert socket_owner.UNKNOWABLE == conn_guard.UNKNOWABLE  # the guard's port speaks the same value
    finally:
        for s in (server, client, accepted):
            s.close()
