"""A runner that took a call and does not answer it in time is not a runner lost: the CLI said
"lost the runner during search.query (TimeoutError)" of a live runner whose search thread was
stuck (tests/e2e/test_attack_git_admin_files.py), sending the person to look for a crash. Real
loopback sockets: one peer that reads the request and stays silent, one that hangs up."""

import socket
import threading

import pytest

from client.wire.rpc import Client, RunnerUnavailable
from plugkit.wire import Connection


def _peer(answer_with_close: bool):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    held = []

    def serve():
        conn, _ = server.accept()
        held.append(conn)
        conn.recv(65536)
        if answer_with_close:
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread, held


@pytest.mark.parametrize("hangs_up", [False, True])
def test_a_silent_runner_is_said_to_be_silent_and_a_closed_one_lost(hangs_up):
    server, thread, held = _peer(hangs_up)
    client = Client(Connection(server.getsockname()[1]), token="t")
    try:
        with pytest.raises(RunnerUnavailable) as got:
            client.call("search.query", {"query": "x"}, timeout=0.5)
        said = str(got.value)
        if hangs_up:
            assert said.startswith("lost the runner during search.query"), said
        else:
            assert "did not answer search.query within 0.5 s" in said and "lost" not in said, said
    finally:
        client.close()
        thread.join(10)
        for conn in held:
            conn.close()
        server.close()
