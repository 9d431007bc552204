"""The asyncio side of exec:serial: the open spec, the protocol feeding a task's output,
and the transport (pyserial-asyncio's, or a polled one for loop://)."""

import asyncio
from typing import Optional

import serial_asyncio
from pydantic import ValidationError
from serial import SerialBase

from plugkit.protocol.serial import SerialOpenSpec
from plugkit.refusals import Invalid
from runner.executors.base import TaskIO

# pyserial-asyncio reads 1 KiB per wake-up; a pty hands over ~4 KiB and a fast USB
# adapter more, so a bigger read keeps bursts from costing one loop turn per KiB.
READ_CHUNK = 64 << 10
LOOP_POLL_S = 0.005  # loop:// has no fd to wait on (tests only)


def parse_spec(code: str) -> SerialOpenSpec:
    text = code.strip()
    try:
        if text.startswith("{"):
            return SerialOpenSpec.model_validate_json(text)
        return SerialOpenSpec(port=text)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'code'}: {e['msg']}"
                             for e in exc.errors(include_url=False, include_input=False)[:5])
        raise Invalid(f"invalid serial settings: {problems}",
                      {"next": 'code is JSON like {"port": "/dev/ttyUSB0", "baud": 115200}'}) from None


def parse_hex(text: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise Invalid("this port is in hex mode: send hex digits, e.g. '41 54 0d 0a' for AT and CR LF") from None


def hex_rows(data: bytes, col: int) -> tuple[str, int]:
    """Hex dump continuing at column `col` (0-15) of the current 16-byte row."""
    out, i = [], 0
    while i < len(data):
        take = min(16 - col, len(data) - i)
        col += take
        out.append(data[i:i + take].hex(" ") + ("\n" if col == 16 else " "))
        col %= 16
        i += take
    return "".join(out), col


def describe(spec: SerialOpenSpec) -> str:
    stop = {1: "1", 1.5: "1.5", 2: "2"}[spec.stopbits]
    extras = [name for name, on in (("rtscts", spec.rtscts), ("xonxoff", spec.xonxoff), ("hex", spec.hex)) if on]
    return f"{spec.baud} {spec.bytesize}{spec.parity}{stop}" + (f" ({', '.join(extras)})" if extras else "")


class Feed(asyncio.Protocol):
    """Bytes from the line into the task's output; `lost` resolves when the port closes."""

    def __init__(self, io: TaskIO, hex_mode: bool) -> None:
        self.io, self.hex_mode, self.col = io, hex_mode, 0
        self.lost: asyncio.Future = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        if self.hex_mode:
            text, self.col = hex_rows(data, self.col)
            self.io.write_text("stdout", text)
        else:
            self.io.write("stdout", data)

    def connection_lost(self, exc: Optional[Exception]) -> None:
        if not self.lost.done():
            self.lost.set_result(exc)


class PolledTransport(serial_asyncio.SerialTransport):
    """loop:// has no file descriptor to wait on: poll it, as pyserial-asyncio does on Windows."""

    def _ensure_reader(self) -> None:
        if not self._has_reader and not self._closing:
            self._has_reader = self._loop.call_later(LOOP_POLL_S, self._poll_read)

    def _poll_read(self) -> None:
        self._has_reader = False
        if self._closing:
            return
        if self._serial.in_waiting:
            self._read_ready()
        self._ensure_reader()

    def _remove_reader(self) -> None:
        if self._has_reader:
            self._has_reader.cancel()
        self._has_reader = False

    def _ensure_writer(self) -> None:
        if not self._has_writer and not self._closing:
            self._has_writer = self._loop.call_soon(self._poll_write)

    def _poll_write(self) -> None:
        # Re-armed first: _write_ready cancels it once the buffer is empty.
        self._has_writer = self._loop.call_later(LOOP_POLL_S, self._poll_write)
        self._write_ready()

    def _remove_writer(self) -> None:
        if self._has_writer:
            self._has_writer.cancel()
        self._has_writer = False


def make_transport(feed: "Feed", ser: SerialBase, polled: bool) -> serial_asyncio.SerialTransport:
    kind = PolledTransport if polled else serial_asyncio.SerialTransport
    transport = kind(asyncio.get_running_loop(), feed, ser)
    transport._max_read_size = READ_CHUNK  # pyserial-asyncio has no public knob for it
    return transport
