"""Serial tests through the real app: socat pseudo-terminal pairs (the runner opens the near
end, the test plays the device on the far one), far ends opened as a board's firmware would,
and an RPC helper bound to one session and work dir."""

import json
import os
import re
import select
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from runner.http.keys import CONTEXT
from tests.support.inproc import RpcError, call


SOCAT_MISSING = ("socat is missing; the serial tests need real pseudo-terminals: "
                 "apt-get install -y socat")


@dataclass
class PtyPair:
    proc: subprocess.Popen
    near: str  # the runner opens this one
    far: str   # the test plays the device here
    log: Path

    def wait_linked(self, timeout: float = 10.0) -> None:
        """With wait-slave, socat polls for the near end's open before it moves data (and
        before it can notice a close): wait until it says the line is up."""
        deadline = time.monotonic() + timeout
        while "starting data transfer loop" not in self.log.read_text():
            assert time.monotonic() < deadline, f"socat never linked: {self.log.read_text()[-500:]}"
            time.sleep(0.01)


def pty_pairs(tmp_path):
    """start(hangup_on_close=True) -> a live socat pty pair; every socat is killed at teardown."""
    if shutil.which("socat") is None:
        pytest.fail(SOCAT_MISSING)
    started: list[subprocess.Popen] = []

    def start(hangup_on_close: bool = True) -> PtyPair:
        log = tmp_path / f"socat{len(started)}.log"
        near = "pty,raw,echo=0" + (",wait-slave" if hangup_on_close else "")
        with open(log, "w") as err:  # a file, not a pipe: socat never blocks on its own log
            proc = subprocess.Popen(["socat", "-d", "-d", "pty,raw,echo=0", near],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        started.append(proc)
        deadline = time.monotonic() + 10
        while len(paths := re.findall(r"PTY is (\S+)", log.read_text())) < 2:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"socat did not start its ptys: {log.read_text()[-500:]}")
            time.sleep(0.01)
        return PtyPair(proc, near=paths[1], far=paths[0], log=log)

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def far_ends():
    """Open far ends (blocking fds, as a device's firmware would have); closed at teardown."""
    fds: list[int] = []

    def open_far(path: str) -> int:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        fds.append(fd)
        return fd

    yield open_far
    for fd in fds:
        os.close(fd)


async def serial_rpc(make_client, tmp_path):
    client = await make_client()
    work = tmp_path / "work"
    work.mkdir()

    async def do(method: str, session: str = "s1", **params):
        return await call(client, method, session_id=session, cwd=str(work), **params)

    do.client, do.work = client, work
    return do


async def open_serial(rpc, port: str, session: str = "s1", **settings) -> dict:
    res = await rpc("task.exec", session=session, lang="serial", timeout_ms=120_000,
                    code=json.dumps({"port": port, **settings}))
    # The port is open once exec answers; the task turns "running" on the next loop turn.
    assert res["task"]["state"] in ("pending", "running"), res["task"]
    return res["task"]


def text(output: dict, stream: str = "stdout") -> str:
    return "".join(c["text"] for c in output["chunks"] if c["stream"] == stream)


async def read_all(rpc, task_id: int) -> str:
    cursor, got = 0, []
    while True:
        out = await rpc("task.output", task_id=task_id, cursor=cursor, max_bytes=1 << 20)
        got.append(text(out))
        cursor = out["cursor"]
        if not out["more"]:
            return "".join(got)


def held_ports(rpc) -> list:
    manager = rpc.client.server.app[CONTEXT].tasks
    serial_ex = next(e for e in manager.executors if e.name == "serial")
    return serial_ex.snapshot()["ports"]


def runner_fds_on(path: str) -> list[str]:
    """Descriptors of this process (the in-process runner) that point at the device."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == path:
                found.append(fd)
        except OSError:
            continue
    return found


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_far(fd: int, want: bytes | None, timeout: float = 5.0) -> bytes:
    """Read the far end until `want` is seen, EOF/hangup (returns what came), or timeout."""
    got = bytearray()
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([fd], [], [], left)[0]:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the pty's master is gone
            return bytes(got) + b"<EOF>"
        if not chunk:
            return bytes(got) + b"<EOF>"
        got += chunk
        if want is not None and want in got:
            break
    return bytes(got)


async def refused(rpc, code: int, port_or_spec, **extra) -> str:
    spec = port_or_spec if isinstance(port_or_spec, str) else json.dumps(port_or_spec)
    with pytest.raises(RpcError) as err:
        await rpc("task.exec", lang="serial", code=spec, **extra)
    assert err.value.code == code, (err.value.code, str(err.value))
    assert (await rpc("task.list"))["tasks"] == []  # refused before any task existed
    assert held_ports(rpc) == []
    return str(err.value)
