"""The runner's port held as the local end of an outgoing connection (Linux's ephemeral range).

The attack: a client socket bound to 127.0.0.1:PORT and connected somewhere, exactly what the
kernel does when it picks PORT for an outgoing connection. No process listens there. No
SO_REUSEADDR on it: the kernel's own pick has none, and with it Linux would let the runner
listen beside the connection (nothing to test).
"""

import contextlib
import os
import socket
import subprocess
import sys
import time

import pytest

from runner.system import ports
from tests.support.runner_home import Home

pytestmark = pytest.mark.e2e


@contextlib.contextmanager
def outgoing_connection_from(port: int):
    """An established connection whose local end is 127.0.0.1:port; yields (client, server_port)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client = socket.socket()
        client.bind(("127.0.0.1", port))
        client.connect(server.getsockname())
        accepted, _ = server.accept()
        try:
            yield accepted, client, server.getsockname()[1]
        finally:
            accepted.close()
            client.close()


def hang_up(accepted: socket.socket, client: socket.socket) -> None:
    """The far end closes first: the client's end then leaves no TIME_WAIT on the port
    (closing it first would hold the port for a minute, as it does in the wild)."""
    accepted.close()
    assert client.recv(1) == b""
    client.close()


def wait_for_log(home: Home, proc: subprocess.Popen, needle: str, seconds: float = 20) -> None:
    log = home.path / "runner.log"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if log.exists() and needle in log.read_text():
            return
        assert proc.poll() is None, f"runner exited {proc.returncode}: {proc.stderr.read()}"
        time.sleep(0.02)
    raise AssertionError(f"{needle} never logged")


def test_runner_waits_out_a_connection_that_holds_its_port(home):
    with outgoing_connection_from(home.port) as (accepted, client, server_port):
        proc = subprocess.Popen([sys.executable, "-m", "runner"], env=home.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_log(home, proc, "port_held_retrying")
            log = (home.path / "runner.log").read_text()
            assert f"127.0.0.1:{home.port} -> 127.0.0.1:{server_port}" in log
            hang_up(accepted, client)  # the connection ends inside the retry window
            info = home.wait_healthy(proc)
            assert info["port"] == home.port and info["pid"] == proc.pid
        finally:
            proc.terminate()
            proc.communicate(timeout=30)


def test_a_connection_that_stays_names_itself(home):
    with outgoing_connection_from(home.port) as (_, _, server_port):
        result = subprocess.run([sys.executable, "-m", "runner"], env=home.env,
                                capture_output=True, text=True, timeout=60)
    assert result.returncode == 4, result.stderr
    assert f"127.0.0.1:{home.port} -> 127.0.0.1:{server_port}" in result.stderr
    assert f"pid {os.getpid()}" in result.stderr
    assert "plugkit doctor" in result.stderr and "PLUGKIT_PORT" in result.stderr
    assert "cannot see" not in result.stderr
    assert f"after {ports.HELD_RETRY_S:g} s" in result.stderr


def test_a_connection_closed_from_our_end_is_named_with_its_time_wait(home):
    # Closed by the local end first, the port stays in TIME_WAIT for a minute: longer than the retry.
    with outgoing_connection_from(home.port) as (accepted, client, server_port):
        client.close()
        assert accepted.recv(1) == b""
        accepted.close()  # the far end's FIN: our end goes from FIN_WAIT2 to TIME_WAIT
        result = subprocess.run([sys.executable, "-m", "runner"], env=home.env,
                                capture_output=True, text=True, timeout=60)
    assert result.returncode == 4, result.stderr
    assert f"127.0.0.1:{home.port} -> 127.0.0.1:{server_port} (TIME_WAIT" in result.stderr
    assert "ends within a minute" in result.stderr
