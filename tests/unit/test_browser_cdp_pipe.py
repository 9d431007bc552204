"""The DevTools pipe on its own: NUL framing over real os.pipe()s, fd placement in a real child,
and pyppeteer's Connection driven through it by a scripted "Chromium" on the other ends."""

import asyncio
import json
import os
import subprocess
import sys

import pytest

from runner.system.cdp_pipe import ChildPipes, PipeTransport


class Peer:
    """The far ends, as Chromium holds them: it reads commands and writes answers (blocking fds,
    written from a thread so a write larger than the pipe buffer cannot stall the loop)."""

    def __init__(self, pipes: ChildPipes) -> None:
        self.commands, self.answers = pipes.child_in, pipes.child_out

    async def write(self, data: bytes) -> None:
        def all_of_it():
            view = memoryview(data)
            while view:
                view = view[os.write(self.answers, view):]
        await asyncio.to_thread(all_of_it)

    async def read_until_nul(self, count: int = 1) -> list[bytes]:
        def read():
            buf = b""
            while buf.count(b"\0") < count:
                chunk = os.read(self.commands, 1 << 16)
                if not chunk:
                    break
                buf += chunk
            return buf
        return (await asyncio.to_thread(read)).split(b"\0")[:count]

    def close_answers(self) -> None:
        os.close(self.answers)


@pytest.fixture
async def pair():
    pipes = ChildPipes.create()
    transport = await PipeTransport.open(pipes.parent_in, pipes.parent_out)
    peer = Peer(pipes)
    yield transport, peer
    await transport.close()
    for fd in (pipes.child_in, pipes.child_out):
        try:
            os.close(fd)
        except OSError:
            pass


async def test_a_message_split_across_reads_arrives_whole(pair):
    transport, peer = pair
    receiving = asyncio.ensure_future(transport.recv())
    await peer.write(b'{"id": 1, "res')
    await asyncio.sleep(0.05)
    assert not receiving.done()  # half a message is not a message
    await peer.write(b'ult": {}}\0')
    assert json.loads(await receiving) == {"id": 1, "result": {}}


async def test_several_messages_in_one_read_come_out_one_by_one(pair):
    transport, peer = pair
    await peer.write(b'{"id":1}\0{"id":2}\0{"method":"Target.targetCreated"}\0{"id":')
    assert [json.loads(await transport.recv()) for _ in range(3)] == [
        {"id": 1}, {"id": 2}, {"method": "Target.targetCreated"}]
    await peer.write(b"3}\0")
    assert json.loads(await transport.recv()) == {"id": 3}


async def test_messages_larger_than_the_pipe_buffer_go_both_ways(pair):
    transport, peer = pair
    big = json.dumps({"id": 7, "result": {"data": "x" * (4 << 20)}})  # 4 MiB: a screenshot's size
    writing = asyncio.ensure_future(peer.write(big.encode() + b"\0"))
    assert await transport.recv() == big
    await writing
    sent = json.dumps({"id": 8, "method": "Runtime.evaluate", "params": {"expression": "y" * (2 << 20)}})
    await transport.send(sent)  # queued by the write transport: never blocks the loop
    (got,) = await peer.read_until_nul()
    assert got.decode() == sent


async def test_text_is_utf8_both_ways(pair):
    transport, peer = pair
    await transport.send('{"expression": "\'héllo ✓\'"}')
    (got,) = await peer.read_until_nul()
    assert got.decode("utf-8") == '{"expression": "\'héllo ✓\'"}'
    await peer.write('{"value": "✓"}\0'.encode())
    assert await transport.recv() == '{"value": "✓"}'


async def test_eof_when_chromium_dies_is_a_closed_connection_and_later_sends_are_dropped(pair):
    transport, peer = pair
    await peer.write(b'{"id":1}\0{"id":')  # the last message was cut off by the crash
    peer.close_answers()
    os.close(peer.commands)
    assert await transport.recv() == '{"id":1}'
    with pytest.raises(ConnectionResetError, match="closed its DevTools pipe"):
        await transport.recv()
    for _ in range(3):  # EPIPE on the command pipe: no exception into pyppeteer's sender task
        await transport.send('{"id": 2, "method": "Browser.close"}')
        await asyncio.sleep(0.01)


async def test_child_finds_the_pipes_on_fds_3_and_4_and_inherits_nothing_else():
    """A real child spawned the way Chromium is: it reads a command on fd 3, answers on fd 4 with
    the fds it holds. An inheritable fd of ours (as a runner started from a shell has) stays out."""
    echo = ("import os\nbuf = b''\nwhile not buf.endswith(b'\\0'):\n    buf += os.read(3, 65536)\n"
            "fds = sorted(int(f) for f in os.listdir('/proc/self/fd'))[:-1]\n"  # minus the listing's own
            "os.write(4, b'{\"echo\": ' + buf[:-1] + b', \"fds\": ' + repr(fds).encode() + b'}\\0')\n")
    stray_r, stray_w = os.pipe()
    os.set_inheritable(stray_w, True)
    pipes = ChildPipes.create()
    try:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", echo, close_fds=False,
                                                    preexec_fn=pipes.setup_child, stdin=subprocess.DEVNULL)
    finally:
        os.close(stray_w)
    pipes.close_child_ends()
    transport = await PipeTransport.open(pipes.parent_in, pipes.parent_out)
    try:
        await transport.send('{"id": 1}')
        assert json.loads(await transport.recv()) == {"echo": {"id": 1}, "fds": [0, 1, 2, 3, 4]}
        assert await proc.wait() == 0
        with pytest.raises(ConnectionResetError):  # its exit closed the pipe: EOF, not a hang
            await transport.recv()
        assert os.read(stray_r, 1) == b""  # the child never held the stray pipe's write end
    finally:
        await transport.close()
        os.close(stray_r)


async def test_pyppeteer_connection_over_the_pipe_answers_and_fails_pending_calls_at_eof(pair):
    from runner.executors.browser.cdp import PIPE_URL, PipeConnection

    transport, peer = pair
    conn = PipeConnection(transport, asyncio.get_running_loop())
    assert conn.url == PIPE_URL
    calling = conn.send("Browser.getVersion")
    (command,) = await peer.read_until_nul()
    msg = json.loads(command)
    assert msg["method"] == "Browser.getVersion"
    events = []
    conn.on("Target.targetCreated", events.append)
    await peer.write(json.dumps({"method": "Target.targetCreated", "params": {"targetInfo": {}}}).encode() + b"\0"
                     + json.dumps({"id": msg["id"], "result": {"product": "Chrome/1"}}).encode() + b"\0")
    assert await calling == {"product": "Chrome/1"}
    assert events == [{"targetInfo": {}}]
    pending = conn.send("Target.getTargets")
    await peer.read_until_nul()
    peer.close_answers()  # Chromium crashed before answering
    with pytest.raises(Exception, match="Target closed"):
        await pending
    await asyncio.wait_for(conn._recv_fut, 5)  # the reader ended instead of hanging
    with pytest.raises(ConnectionError):
        conn.send("Target.getTargets")
