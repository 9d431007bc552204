"""Isolated runner homes for end-to-end tests: the real CLI, the real daemon, one RPC call."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.support.load import stretched

ROOT = Path(__file__).resolve().parents[2]


def bound_socket(port: int) -> socket.socket:
    """A loopback socket bound to port, for conn_guard.serve (which listens on it)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli_argv() -> list[str]:
    script = Path(sys.executable).parent / "plugkit"
    return [str(script)] if script.exists() else [sys.executable, "-m", "client.cli"]


@dataclass
class Home:
    """One isolated PLUGKIT_HOME + port; everything started under it is stopped at teardown."""

    path: Path
    port: int

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ, PLUGKIT_HOME=str(self.path), PLUGKIT_PORT=str(self.port))

    def cli(self, *args: str, input: str | None = None, timeout: float = 60, cwd=None,
            env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(cli_argv() + list(args), env={**self.env, **(env or {})},
                              capture_output=True, text=True, input=input,
                              timeout=timeout, cwd=cwd)

    def start_runner(self) -> subprocess.Popen:
        """The daemon in the foreground as our child; returns once /health answers."""
        proc = subprocess.Popen([sys.executable, "-m", "runner"], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.wait_healthy(proc)
        return proc

    def wait_healthy(self, proc: subprocess.Popen | None = None, timeout: float = 20) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f"runner exited {proc.returncode}: {proc.stderr.read()}")
            info = self.discovery()
            if info:
                return info
            time.sleep(0.02)
        raise AssertionError("runner did not become healthy")

    def discovery(self) -> dict | None:
        try:
            return json.loads((self.path / "port").read_text())
        except (OSError, ValueError):
            return None

    def token(self) -> str:
        return (self.path / "token").read_text().strip()

    def runner_pids(self) -> list[int]:
        """Live `python -m runner` processes serving this home."""
        found = []
        for p in psutil.process_iter(["cmdline"]):
            try:
                cmd = p.info["cmdline"] or []
                if "runner" in cmd and "-m" in cmd and p.environ().get("PLUGKIT_HOME") == str(self.path) \
                        and p.status() != psutil.STATUS_ZOMBIE:
                    found.append(p.pid)
            except psutil.Error:
                continue
        return found

    def stop_all(self) -> None:
        for pid in self.runner_pids():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        # Its own stop (tasks killed after their grace, the ledger closed) is ~1 s of CPU: beside
        # CPU hogs that many times more wall before a KILL would orphan what it was still ending.
        deadline = time.monotonic() + stretched(5)
        while self.runner_pids() and time.monotonic() < deadline:
            time.sleep(0.02)
        for pid in self.runner_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended between the scan and the kill
                continue


def rpc(home: Home, method: str, params: dict | None = None, timeout: float = 30) -> dict:
    """One JSON-RPC call with the real token, through the project's own client."""
    from client.wire.rpc import Client, Connection

    client = Client(Connection(home.port, timeout=timeout), token=home.token())
    try:
        return client.call(method, params or {}, timeout=timeout)
    finally:
        client.close()
