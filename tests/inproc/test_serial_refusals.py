"""exec:serial refusals, each by the attack it stops, and serial.list (the real app; socat ptys)."""

import os
import socket
from pathlib import Path

import pytest

from runner.system import serial_devices as serial_ports
from tests.support.inproc import call
from tests.support.serial_ptys import pty_pairs, refused, runner_fds_on, serial_rpc


@pytest.fixture
def ptys(tmp_path):
    yield from pty_pairs(tmp_path)


@pytest.fixture
async def rpc(make_client, tmp_path):
    return await serial_rpc(make_client, tmp_path)


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
