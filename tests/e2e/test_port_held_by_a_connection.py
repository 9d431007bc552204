"""The runner's port lies in the ephemeral range: an outgoing connection may hold it for a while
(issue 17.10). The runner waits a few seconds for it, then names the connection."""

import socket
import subprocess
import sys
import threading

import pytest

from tests.support.runner_home import Home, free_port

pytestmark = pytest.mark.e2e


def outgoing_connection_from(port: int) -> tuple[socket.socket, socket.socket, socket.socket]:
    """A client socket whose *local* port is `port`, connected to a listener elsewhere."""
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.socket()
    client.bind(("127.0.0.1", port))
    client.connect(server.getsockname())
    accepted, _ = server.accept()
    return server, client, accepted


def close_all(*socks: socket.socket) -> None:
    for s in socks:
        # No TIME_WAIT left behind on the port: RST instead of FIN.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()


def test_runner_waits_out_a_passing_connection_on_its_port(home: Home):
    socks = outgoing_connection_from(home.port)
    timer = threading.Timer(1.0, close_all, socks)
    timer.start()
    try:
        runner = home.start_runner()  # returns once /health answers: the bind succeeded
        runner.terminate()
        runner.communicate(timeout=10)
        assert runner.returncode == 0
    finally:
        timer.join()


def test_runner_names_the_connection_that_keeps_its_port(home: Home):
    server, client, accepted = socks = outgoing_connection_from(home.port)
    remote = server.getsockname()[1]
    try:
        result = subprocess.run([sys.executable, "-m", "runner"], env=home.env, capture_output=True,
                                text=True, timeout=60)
    finally:
        close_all(*socks)
    assert result.returncode == 4
    assert "outgoing connection" in result.stderr
    assert f"connected to 127.0.0.1:{remote}" in result.stderr
    assert f"net.ipv4.ip_local_reserved_ports={home.port}" in result.stderr
    assert "Traceback" not in result.stderr
