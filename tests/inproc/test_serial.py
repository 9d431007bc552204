"""exec:serial through the real app: real pseudo-terminal pairs from socat, and pyserial's loop://.

The runner opens the "near" pty; the test plays the device on the "far" one.
socat holds the far slave open but not the near one (wait-slave), so when the
runner closes the near end socat sees it, exits, and the far end reads EOF —
just as a board's console would see the host hang up.
"""

import asyncio
import json
import os
import subprocess
import sys

import pytest

from tests.support.inproc import RpcError, call
from tests.support.serial_ptys import (far_ends, held_ports, open_serial, pty_pairs, read_all, read_far, refused,
                                      runner_fds_on, serial_rpc, text, write_all)


@pytest.fixture
def ptys(tmp_path):
    yield from pty_pairs(tmp_path)


@pytest.fixture
def far_fds():
    yield from far_ends()


@pytest.fixture
async def rpc(make_client, tmp_path):
    return await serial_rpc(make_client, tmp_path)


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
