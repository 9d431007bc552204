"""exec:serial through the real app: real pseudo-terminal pairs from socat, and pyserial's loop://.

The runner opens the "near" pty; the test plays the device on the "far" one.
socat holds the far slave open but not the near one (wait-slave), so when the
runner closes the near end socat sees it, exits, and the far end reads EOF —
just as a board's console would see the host hang up.
"""

import asyncio
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from runner.http.keys import CONTEXT
from runner.system import serial_devices as serial_ports
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


@pytest.fixture
def ptys(tmp_path):
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


@pytest.fixture
def far_fds():
    """Open far ends (blocking fds, as a device's firmware would have); closed at teardown."""
    fds: list[int] = []

    def open_far(path: str) -> int:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        fds.append(fd)
        return fd

    yield open_far
    for fd in fds:
        os.close(fd)


@pytest.fixture
async def rpc(make_client, tmp_path):
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


# --- reading and writing ---------------------------------------------------------

async def test_far_end_lines_arrive_in_order_and_complete_including_a_1mib_burst(rpc, ptys, far_fds):
    pair = ptys()
    task = await open_serial(rpc, pair.near)
    far = far_fds(pair.far)
    await asyncio.to_thread(write_all, far, b"boot 1\nboot 2\n")
    first = await rpc("task.wait", task_id=task["task_id"], until_text="boot 2\n", timeout_ms=10_000)
    assert first["matched"]
    burst = b"".join(b"line %07d %s\n" % (i, b"x" * 40) for i in range(20_000)) + b"END\n"
    assert len(burst) > 1 << 20
    await asyncio.to_thread(write_all, far, burst)
    done = await rpc("task.wait", task_id=task["task_id"], until_text="END\n", timeout_ms=30_000)
    assert done["matched"], done
    assert await read_all(rpc, task["task_id"]) == "boot 1\nboot 2\n" + burst.decode()
    out = await rpc("task.output", task_id=task["task_id"], cursor=0, max_bytes=200)
    assert f"{pair.near} open at 115200 8N1" in text(out, "info")


async def test_input_reaches_the_far_end_byte_for_byte(rpc, ptys, far_fds):
    pair = ptys()
    res = await rpc("task.exec", lang="serial", code=json.dumps({"port": pair.near, "baud": 9600}),
                    stdin="hello\r\n", timeout_ms=60_000)
    far = far_fds(pair.far)
    assert await asyncio.to_thread(read_far, far, b"hello\r\n") == b"hello\r\n"
    await rpc("task.input", task_id=res["task"]["task_id"], data="AT+GMR\r\n")
    await rpc("task.input", task_id=res["task"]["task_id"], data="é")  # no eol added by the runner
    assert await asyncio.to_thread(read_far, far, "AT+GMR\r\né".encode()) == "AT+GMR\r\né".encode()


async def test_wait_until_text_matches_a_prompt(rpc, ptys, far_fds):
    pair = ptys()
    task = await open_serial(rpc, pair.near)
    far = far_fds(pair.far)

    async def device_boots():
        await asyncio.to_thread(write_all, far, b"booting...\n")
        await asyncio.sleep(0.2)
        await asyncio.to_thread(write_all, far, b"READY> ")

    booting = asyncio.create_task(device_boots())
    waited = await rpc("task.wait", task_id=task["task_id"], until_text="READY>", timeout_ms=10_000)
    await booting
    assert waited["matched"] and not waited["timed_out"] and waited["task"]["state"] == "running"
    nothing = await rpc("task.wait", task_id=task["task_id"], until_text="never", timeout_ms=100,
                        cursor=waited["match_cursor"])
    assert nothing["timed_out"] and not nothing["matched"]


async def test_bare_device_path_is_shorthand_for_the_default_settings(rpc, ptys):
    pair = ptys()
    res = await rpc("task.exec", lang="serial", code=pair.near + "\n", wait_ms=100)
    assert res["task"]["state"] == "running" and res["task"]["lang"] == "serial"
    assert "115200 8N1" in text(res["output"], "info")


async def test_loopback_echoes_what_is_typed(rpc):
    task = await open_serial(rpc, "loop://")
    await rpc("task.input", task_id=task["task_id"], data="ping 1\n")
    waited = await rpc("task.wait", task_id=task["task_id"], until_text="ping 1\n", timeout_ms=5_000)
    assert waited["matched"]
    assert await read_all(rpc, task["task_id"]) == "ping 1\n"


async def test_hex_mode_dumps_bytes_and_takes_hex_input(rpc):
    task = await open_serial(rpc, "loop://", hex=True)
    await rpc("task.input", task_id=task["task_id"], data="00 ff 41 0d 0a")
    await rpc("task.wait", task_id=task["task_id"], until_text="0a", timeout_ms=5_000)
    assert (await read_all(rpc, task["task_id"])).split() == ["00", "ff", "41", "0d", "0a"]
    with pytest.raises(RpcError) as err:
        await rpc("task.input", task_id=task["task_id"], data="hello")
    assert err.value.code == -32602 and "hex" in str(err.value)


# --- ending ----------------------------------------------------------------------

async def test_close_ends_the_task_completed_and_frees_the_device(rpc, ptys):
    pair = ptys(hangup_on_close=False)  # socat keeps the pty alive: it can be opened again
    task = await open_serial(rpc, pair.near)
    closed = await rpc("task.kill", task_id=task["task_id"])
    assert (closed["state"], closed["reason"]) == ("completed", "closed"), closed
    assert held_ports(rpc) == [] and runner_fds_on(pair.near) == []
    again = await open_serial(rpc, pair.near)  # flock released and ownership dropped
    await rpc("task.kill", task_id=again["task_id"])


async def test_far_end_gone_ends_the_task_device_lost_and_the_runner_serves_on(rpc, ptys):
    pair = ptys()
    task = await open_serial(rpc, pair.near)
    pair.proc.kill()  # the other end of the line disappears, like an unplugged adapter
    pair.proc.wait()
    done = await rpc("task.wait", task_id=task["task_id"], timeout_ms=10_000)
    info = done["task"]
    assert (info["state"], info["reason"]) == ("failed", "device_lost"), info
    assert pair.near in info["message"] and "unplugged" in info["message"]
    assert (await call(rpc.client, "runner.info"))["pid"] == os.getpid()
    assert held_ports(rpc) == [] and runner_fds_on(pair.near) == []
    other = await open_serial(rpc, "loop://")  # and still opens ports
    await rpc("task.kill", task_id=other["task_id"])


async def test_timeout_closes_the_port(rpc):
    res = await rpc("task.exec", lang="serial", code='{"port": "loop://"}', timeout_ms=200, wait_ms=5_000)
    assert (res["task"]["state"], res["task"]["reason"]) == ("timed_out", "timeout")
    assert held_ports(rpc) == []


async def test_session_end_closes_the_port_and_the_far_end_sees_the_hangup(rpc, ptys, far_fds):
    pair = ptys()
    task = await open_serial(rpc, pair.near)
    far = far_fds(pair.far)
    await asyncio.to_thread(pair.wait_linked)
    ended = await rpc("session.end")
    assert ended["killed"] == [task["task_id"]]
    assert await asyncio.to_thread(read_far, far, None) == b"<EOF>"
    assert pair.proc.wait(5) == 0  # socat saw our end close and shut the line down
    assert held_ports(rpc) == [] and runner_fds_on(pair.near) == []


async def test_runner_shutdown_closes_every_port(rpc, ptys, far_fds):
    pair = ptys()
    await open_serial(rpc, pair.near, session="a")
    await open_serial(rpc, "loop://", session="b")
    far = far_fds(pair.far)
    await asyncio.to_thread(pair.wait_linked)
    await rpc.client.close()  # the app's cleanup chain: manager.shutdown -> executor.close
    assert await asyncio.to_thread(read_far, far, None) == b"<EOF>"
    assert runner_fds_on(pair.near) == []


# --- ownership ---------------------------------------------------------------------

async def test_second_open_is_refused_naming_the_owner_task(rpc, ptys):
    pair = ptys()
    task = await open_serial(rpc, pair.near)
    mine = await refused_while_held(rpc, pair.near, "s1")
    assert f"task_{task['task_id']} of this session" in mine and f"exec:close {task['task_id']}" in mine
    theirs = await refused_while_held(rpc, pair.near, "s2")
    assert f"task_{task['task_id']} of another session" in theirs
    via_symlink = rpc.work / "board"  # another name for the same device is the same device
    via_symlink.symlink_to(pair.near)
    assert f"task_{task['task_id']}" in await refused_while_held(rpc, str(via_symlink), "s1")
    assert len(runner_fds_on(pair.near)) == 1
    snap = (await call(rpc.client, "debug.snapshot"))["snapshot"]
    assert snap["executors"]["serial"]["ports"] == [
        {"device": pair.near, "task_id": task["task_id"], "session_id": "s1", "settings": "115200 8N1"}]


async def refused_while_held(rpc, port: str, session: str) -> str:
    with pytest.raises(RpcError) as err:
        await rpc("task.exec", session=session, lang="serial", code=json.dumps({"port": port}))
    assert err.value.code == -32005
    return str(err.value)


async def test_racing_opens_of_one_device_let_exactly_one_through(rpc, ptys):
    pair = ptys()
    results = await asyncio.gather(*(rpc("task.exec", session=f"s{i}", lang="serial", code=pair.near)
                                     for i in range(4)), return_exceptions=True)
    winners = [r for r in results if isinstance(r, dict)]
    losers = [r for r in results if isinstance(r, RpcError)]
    assert len(winners) == 1 and len(losers) == 3 and all(e.code == -32005 for e in losers), results
    assert len(runner_fds_on(pair.near)) == 1


async def test_a_port_the_manager_never_claims_is_closed(monkeypatch, tmp_path):
    """prepare() opens before the task exists; if no run() follows (a limit, a ledger
    error), the executor closes the port by itself."""
    from runner.executors.base import ExecSpec
    from runner.executors.serial import executor as serial_ex

    monkeypatch.setattr(serial_ex, "ADOPT_S", 0.05)
    executor = serial_ex.make(None)
    prepared = await executor.prepare(ExecSpec(session_id="s", cwd=str(tmp_path), lang="serial",
                                               code='{"port": "loop://"}'))
    assert executor.snapshot()["ports"] and prepared.payload.serial.is_open
    await asyncio.sleep(0.2)
    assert executor.snapshot()["ports"] == [] and not prepared.payload.serial.is_open


async def test_device_locked_by_another_process_is_refused_naming_its_pid(rpc, ptys):
    pair = ptys()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)\n", pair.near],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        message = await refused(rpc, -32005, {"port": pair.near})
        assert f"pid {holder.pid} (python" in message and "in use by another process" in message
        assert runner_fds_on(pair.near) == []  # the failed open left nothing behind
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


# --- refusals, each by the attack it stops ---------------------------------------------

async def test_refuses_files_outside_dev_however_they_are_named(rpc, tmp_path):
    link = tmp_path / "innocent-tty"
    link.symlink_to("/etc/passwd")
    for port in ("/etc/passwd", "/dev/../etc/passwd", "/dev/pts/../../etc/shadow", str(link)):
        message = await refused(rpc, -32602, {"port": port})
        assert "not under /dev" in message, message
    assert "absolute device path" in await refused(rpc, -32602, {"port": "ttyUSB0"})


async def test_refuses_what_is_planted_in_world_writable_dev_shm(rpc):
    planted = Path("/dev/shm") / f"plugkit-test-{os.getpid()}"
    link = Path("/dev/shm") / f"plugkit-test-link-{os.getpid()}"
    planted.write_text("not a device")
    link.symlink_to("/etc/passwd")
    try:
        assert "regular file, not a character device" in await refused(rpc, -32602, {"port": str(planted)})
        assert "not under /dev" in await refused(rpc, -32602, {"port": str(link)})
    finally:
        planted.unlink()
        link.unlink()


async def test_refuses_directories(rpc):
    assert "a directory, not a character device" in await refused(rpc, -32602, {"port": "/dev/pts"})


async def test_refuses_character_devices_that_are_not_serial_lines(rpc):
    # Opening some of them acts by itself (/dev/watchdog arms a reboot): only ttys are opened.
    assert "not a tty" in await refused(rpc, -32602, {"port": "/dev/null"})
    for port, what in (("/dev/tty", "controlling terminal"), ("/dev/console", "console"),
                       ("/dev/ptmx", "pty multiplexer")):
        assert what in await refused(rpc, -32602, {"port": port})
    if os.path.exists("/dev/tty1"):
        assert "virtual console" in await refused(rpc, -32602, {"port": "/dev/tty1"})


async def test_refuses_network_urls_without_connecting(rpc, tmp_path):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        for url in (f"socket://127.0.0.1:{port}", f"rfc2217://127.0.0.1:{port}",
                    f"SOCKET://127.0.0.1:{port}", f"spy://socket://127.0.0.1:{port}"):
            message = await refused(rpc, -32602, {"port": url})
            assert "refused" in message and "/dev" in message
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
    # hwgrep:// would open whatever port a regex matches, past every path check.
    await refused(rpc, -32602, {"port": "hwgrep://.*"})
    # spy:// writes its log wherever ?file= says.
    target = tmp_path / "spied"
    await refused(rpc, -32602, {"port": f"spy://loop://?file={target}"})
    assert not target.exists()
    # loop:// is for tests, bare: its options (logging) are not an open door either.
    await refused(rpc, -32602, {"port": "loop://?logging=debug"})


async def test_missing_device_is_unavailable(rpc):
    message = await refused(rpc, -32006, {"port": "/dev/ttyUSB-plugkit-missing"})
    assert "no such device" in message and "plugged in" in message


@pytest.mark.parametrize("bad", [
    {"baud": 0}, {"baud": -9600}, {"baud": "fast"}, {"baud": 10**9}, {"baud": 9600.5},
    {"bytesize": 9}, {"parity": "X"}, {"stopbits": 3}, {"eol": "lf"}, {"rtscts": "sometimes"},
])
async def test_bad_settings_are_refused_before_anything_opens(rpc, ptys, bad):
    pair = ptys(hangup_on_close=False)
    message = await refused(rpc, -32602, {"port": pair.near, **bad})
    assert "invalid serial settings" in message and next(iter(bad)) in message
    assert runner_fds_on(pair.near) == []


async def test_malformed_code_and_env_are_refused(rpc):
    assert "invalid serial settings" in await refused(rpc, -32602, '{"port": "loop://",')
    assert "env" in await refused(rpc, -32602, {"port": "loop://"}, env={"A": "1"})
    assert "hex" in await refused(rpc, -32602, {"port": "loop://", "hex": True}, stdin="zz")


def test_permission_message_names_the_group_to_join():
    import grp

    dialout = grp.getgrnam("dialout").gr_gid if _has_group("dialout") else 20
    st = os.stat_result((0o20660, 0, 0, 1, 0, dialout, 0, 0, 0, 0))
    message = serial_ports.permission_message("/dev/ttyUSB0", st)
    name = grp.getgrgid(dialout).gr_name if _has_gid(dialout) else str(dialout)
    assert f"group {name}" in message and f"usermod -aG {name}" in message
    root_only = os.stat_result((0o20600, 0, 0, 1, 0, 0, 0, 0, 0, 0))
    assert "udev rule" in serial_ports.permission_message("/dev/ttyS0", root_only)


def _has_group(name: str) -> bool:
    import grp

    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def _has_gid(gid: int) -> bool:
    import grp

    try:
        grp.getgrgid(gid)
        return True
    except KeyError:
        return False


# --- serial.list -------------------------------------------------------------------

async def test_serial_list_answers_even_when_empty(rpc):
    res = await call(rpc.client, "serial.list")
    assert isinstance(res["ports"], list)
    for port in res["ports"]:
        assert port["device"].startswith("/dev/") and {"description", "hwid"} <= port.keys()
