"""exec:serial — a serial device as a task: bytes received stream into its output, task.input writes to the line.

Wire contract (task.exec with lang "serial"; the other TaskExecParams keep their meaning):
  code  a JSON object validated by plugkit.protocol.SerialOpenSpec; only "port" is required:
        {"port": "/dev/ttyUSB0", "baud": 115200, "bytesize": 8, "parity": "N",
         "stopbits": 1, "rtscts": false, "xonxoff": false, "hex": false}
        baud 50..12000000, bytesize 5|6|7|8, parity N|E|O|M|S, stopbits 1|1.5|2; unknown
        keys are refused. A bare device path ("/dev/ttyUSB0") is shorthand for {"port": ...}.
  port  a character device that is a tty, under /dev after realpath (symlinks such as
        /dev/serial/by-id/... are fine), or "loop://" (pyserial's loopback, for tests).
        Every other pyserial URL (socket://, rfc2217://, hwgrep://, spy://, alt://, ...) is refused.
  stdin written to the port once it is open (it does not close anything: a line has no EOF).
  env   refused: it has no meaning for a port.
  timeout_ms  how long the port stays open; past it the task ends timed_out (clients
        pass a long one: the wire default is 5 minutes).
Output: bytes received go to "stdout" as they arrive (the buffer decodes UTF-8
incrementally); with "hex": true they go as a hex dump instead ("48 65 6c 6c 6f 0a",
16 bytes a line). Notes from plugkit ("[plugkit] ... open at 115200 8N1") go to "info".
Input: task.input data reaches the line byte for byte (UTF-8), with no line ending added:
the eol is the writer's business (the exec:type client verb appends lf, crlf or nothing).
With "hex": true, data is hex digits ("41 54 0d 0a"; whitespace ignored).
Ending: task.kill (exec:close) closes the port; the task ends completed, reason "closed".
Unplug / the far end of a pty closing: failed, reason "device_lost". Session end and
runner shutdown close the session's ports (the task ends killed, as any task would).
Errors before any task exists: -32602 (bad settings, not a serial device, a URL),
-32006 (missing device, permission denied: names the group to join), -32005 (the
device is open in another task, named, or locked by another process, named by pid).
"""

import asyncio
from dataclasses import dataclass, field
from typing import Optional

import serial_asyncio
from serial import SerialBase, SerialException

from plugkit.protocol.serial import SerialOpenSpec
from plugkit.refusals import Conflict, Invalid
from runner.system import logs
from runner.system import serial_devices as serial_ports
from runner.executors.base import ExecSpec, Outcome, Prepared, SessionKey, TaskIO
from runner.executors.serial.io import Feed, describe, make_transport, parse_hex, parse_spec
from runner.system.serial_devices import Target

log = logs.get("plugkit.serial")

LANG = "serial"
# Typed bytes the transport may hold for a line that does not drain (flow control
# held off) before task.input says so instead of queueing without end.
MAX_QUEUED = 1 << 20
# How long exec:close waits for bytes just typed to leave before it discards the rest.
CLOSE_DRAIN_S = 0.25
CLOSE_WAIT_S = 2.0
# A port is opened in prepare(), before the task exists, so that every refusal is an
# RPC error; if the manager then fails to start the task (a limit, a ledger error,
# a cancelled request) run() never comes. Unclaimed after this long, it is closed.
ADOPT_S = 10.0


@dataclass(eq=False)
class OpenPort:
    """One device this executor holds, from prepare() on; `serial` is None while opening."""

    target: Target
    spec: SerialOpenSpec
    session: SessionKey
    serial: Optional[SerialBase] = None
    task_id: Optional[int] = None
    transport: Optional[serial_asyncio.SerialTransport] = None
    feed: Optional[Feed] = field(default=None, repr=False)
    adopt_timer: Optional[asyncio.TimerHandle] = field(default=None, repr=False)
    abandoned: bool = False


class SerialRun:
    """The Execution of one serial task: typing into the line, and closing it."""

    pid = None
    # The manager ends a task.kill'ed task this way instead of "killed": closing a
    # port is how a serial task is meant to finish (exec:close).
    kill_ends_as = ("completed", "closed")

    def __init__(self, executor: "SerialExecutor", port: OpenPort) -> None:
        self.executor, self.port = executor, port
        self.transport, self.feed = port.transport, port.feed
        self.closing = False
        self._input_closed = False

    def input_open(self) -> bool:
        return not self._input_closed and not self.transport.is_closing()

    def write(self, data: bytes) -> None:
        if self.port.spec.hex:
            data = parse_hex(data.decode("utf-8", "replace"))
        queued = self.transport.get_write_buffer_size()
        if queued > MAX_QUEUED:
            raise Conflict(f"{self.port.target.path} is not taking data "
                           f"({queued} bytes still queued; flow control held off?)")
        self.transport.write(data)

    def close_input(self) -> None:
        self._input_closed = True  # no EOF on a serial line: later writes are refused

    async def kill(self) -> None:
        if not self.closing:
            self.closing = True
            loop = asyncio.get_running_loop()
            deadline = loop.time() + CLOSE_DRAIN_S
            while self._unsent() and loop.time() < deadline:
                await asyncio.sleep(0.01)
            self.executor.release(self.port)
        await asyncio.wait([self.feed.lost], timeout=CLOSE_WAIT_S)

    def _unsent(self) -> int:
        try:
            return self.transport.get_write_buffer_size() + (self.port.serial.out_waiting if self.port.serial else 0)
        except (OSError, SerialException):
            return 0  # the device is gone: nothing more will leave


class SerialExecutor:
    name = LANG

    def __init__(self) -> None:
        self._ports: dict[str, OpenPort] = {}  # Target.key -> the one port record holding it

    def claims(self, lang: str) -> bool:
        return lang == LANG

    async def prepare(self, p: ExecSpec) -> Prepared:
        if p.env:
            raise Invalid("env has no meaning for a serial port; leave it out")
        spec = parse_spec(p.code)
        if spec.hex and p.stdin:
            parse_hex(p.stdin)
        target = serial_ports.resolve(spec.port)  # a few stat calls on /dev: cheap enough here
        session = p.session  # the manager hands executors the session's realpath
        self._check_free(target, session)
        # Reserved before the first await, so a concurrent open of the same device
        # sees it taken rather than racing this one to the flock.
        port = self._ports[target.key] = OpenPort(target, spec, session)
        opening = asyncio.ensure_future(asyncio.to_thread(serial_ports.open_port, target, spec))
        try:
            port.serial = await asyncio.shield(opening)
        except asyncio.CancelledError:
            # The caller went away mid-open; the thread still finishes: close what it opens.
            opening.add_done_callback(_close_opened)
            self._forget(port)
            raise
        except BaseException:
            self._forget(port)
            raise
        port.adopt_timer = asyncio.get_running_loop().call_later(ADOPT_S, self._abandon, port)
        return Prepared(LANG, port)

    def _abandon(self, port: OpenPort) -> None:
        if port.task_id is None:
            log.warning("serial_port_unclaimed", device=port.target.path, after_s=ADOPT_S)
            port.abandoned = True
            self.release(port)

    def _check_free(self, target: Target, session: SessionKey) -> None:
        held = self._ports.get(target.key)
        if held is None:
            return
        path = target.path
        if held.task_id is None:
            message = f"{path} is being opened by another request right now"
        elif held.session == session:
            message = (f"{path} is already open in task_{held.task_id} of this session; "
                       f"close it first: plugkit exec:close {held.task_id}")
        else:
            message = (f"{path} is already open in task_{held.task_id} of another session; "
                       "it must close it (or end) first")
        raise Conflict(message, {"owner_task": held.task_id})

    async def run(self, io: TaskIO, prepared: Prepared, p: ExecSpec) -> Outcome:
        port: OpenPort = prepared.payload
        port.task_id = io.id
        if port.adopt_timer is not None:
            port.adopt_timer.cancel()
        path = port.target.path
        if port.abandoned:
            return Outcome("failed", "spawn_failed", message=f"task_{io.id} started too late: {path} was "
                           f"opened but not claimed within {ADOPT_S:.0f} s, so it was closed; try again")
        try:
            port.feed = Feed(io, port.spec.hex)
            port.transport = make_transport(port.feed, port.serial, polled=port.target.loop)
            run = SerialRun(self, port)
            io.started(run)
            io.write_text("info", f"[plugkit] {path} open at {describe(port.spec)}; "
                                  f"exec:type {io.id} TEXT writes to it, exec:close {io.id} closes it\n")
            if p.stdin:
                run.write(p.stdin.encode())
            exc = await port.feed.lost
        finally:
            self.release(port)
        if run.closing:
            io.write_text("info", f"[plugkit] {path} closed\n")
            return Outcome("completed", "closed", message=f"task_{io.id} closed {path}")
        why = str(exc) if exc else "the port closed"
        io.write_text("info", f"\n[plugkit] {path} was lost: {why}\n")
        log.info("serial_device_lost", task_id=io.id, device=path, detail=why)
        return Outcome("failed", "device_lost", message=f"task_{io.id}: {path} went away ({why}); "
                       "the device was unplugged or the other end of the line closed")

    def release(self, port: OpenPort) -> None:
        """Close a port now (idempotent): unsent output is discarded, not drained, so a
        line held off by flow control cannot stall the runner (tcdrain, or a tty's
        close waiting up to 30 s for output)."""
        self._forget(port)
        if port.adopt_timer is not None:
            port.adopt_timer.cancel()
        transport, ser = port.transport, port.serial
        if transport is None:
            if ser is not None and ser.is_open:
                ser.close()
            return
        if transport.is_closing():
            return  # closing already (the device went away): connection_lost is on its way
        try:
            ser.reset_output_buffer()
        except (OSError, SerialException):
            pass  # a lost device has nothing left to discard
        transport.abort()

    def _forget(self, port: OpenPort) -> None:
        if self._ports.get(port.target.key) is port:
            del self._ports[port.target.key]

    async def end_session(self, key: SessionKey) -> None:
        await self._release_all([p for p in self._ports.values() if p.session == key])

    async def close(self) -> None:
        await self._release_all(list(self._ports.values()))

    async def _release_all(self, ports: list[OpenPort]) -> None:
        for port in ports:
            self.release(port)
        lost = [p.feed.lost for p in ports if p.feed is not None]
        if lost:
            await asyncio.wait(lost, timeout=CLOSE_WAIT_S)

    def snapshot(self) -> dict:
        return {"ports": [{"device": p.target.path, "task_id": p.task_id, "session_id": p.session.session_id,
                           "settings": describe(p.spec)} for p in self._ports.values()]}


def _close_opened(opening: asyncio.Future) -> None:
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()


def make(ctx) -> SerialExecutor:
    return SerialExecutor()
