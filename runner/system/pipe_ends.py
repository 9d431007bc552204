"""A cloned task's pipe ends on the event loop: readers and a writer straight on the fds.

asyncio's connect_read_pipe/connect_write_pipe are coroutines that each take loop passes to set
up a transport (connection_made, add_reader and the waiter each wait for the next pass), and
report an end closed one pass after it closed: on a short task that was three pipes' worth of
passes before the clone and as many after the exit, on the answer's path (issue 31). These set
up and tear down where they are called, and offer the part of a transport the executor uses
(write, close, is_closing, get_write_buffer_size, get_extra_info("pipe")), so asyncio's own
transports (the shell-shim spawn) still fit the same code above.
"""

from __future__ import annotations

import asyncio
import os
from typing import Callable, Optional

READ_BYTES = 256 * 1024  # as asyncio's pipe transport: one read per wake-up, at most this much


class ReadEnd:
    """Our read end of a child's stdout or stderr: data and EOF go to the callbacks as they come."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pipe, on_data: Callable[[bytes], None],
                 on_closed: Callable[[Optional[Exception]], None]) -> None:
        self.loop, self.pipe, self.fd = loop, pipe, pipe.fileno()
        self.on_data, self.on_closed = on_data, on_closed
        self._closing = False
        os.set_blocking(self.fd, False)
        loop.add_reader(self.fd, self.read)

    def read(self) -> bool:
        """One read, as the loop calls it when the fd is readable; False once nothing is waiting
        (so a caller may drain what is already there)."""
        if self._closing:
            return False
        try:
            data = os.read(self.fd, READ_BYTES)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as exc:
            self._close(exc)
            return False
        if not data:
            self._close(None)
            return False
        self.on_data(data)
        return True

    def drain(self) -> None:
        """Everything the pipe holds now, and its EOF if the last writer is gone (the child has
        exited: unless a grandchild holds the pipe, nothing more can come)."""
        while self.read():
            pass

    def get_extra_info(self, name: str, default=None):
        return self.pipe if name == "pipe" else default

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        """Stop reading (the task is over or abandoned); whoever asked is told as for an EOF."""
        self._close(None)

    def _close(self, exc: Optional[Exception]) -> None:
        if self._closing:
            return
        self._closing = True
        self.loop.remove_reader(self.fd)
        self.pipe.close()
        self.on_closed(exc)


class WriteEnd:
    """Our write end of a child's stdin: what the pipe takes now is written at once, the rest
    as it drains; close() closes it once everything is written. A child that closed its stdin
    (EPIPE) loses what was still buffered, as with asyncio's transport."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pipe, on_closed: Callable[[Optional[Exception]], None]) -> None:
        self.loop, self.pipe, self.fd = loop, pipe, pipe.fileno()
        self.on_closed = on_closed
        self._buffer = bytearray()
        self._closing = self._closed = False
        os.set_blocking(self.fd, False)

    def write(self, data: bytes) -> None:
        if self._closing or not data:
            return
        if self._buffer:
            self._buffer += data
            return
        try:
            sent = os.write(self.fd, data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._close(exc)
            return
        if sent < len(data):
            self._buffer += data[sent:]
            self.loop.add_writer(self.fd, self._flush)

    def _flush(self) -> None:
        try:
            sent = os.write(self.fd, self._buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._close(exc)
            return
        del self._buffer[:sent]
        if not self._buffer:
            self.loop.remove_writer(self.fd)
            if self._closing:
                self._close(None)

    def get_extra_info(self, name: str, default=None):
        return self.pipe if name == "pipe" else default

    def get_write_buffer_size(self) -> int:
        """As asyncio's transport: how much is written but not yet taken by the pipe."""
        return len(self._buffer)

    def pending(self) -> bytes:
        """What was written but the pipe has not taken yet (a handover carries it on)."""
        return bytes(self._buffer)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        """EOF for the child once the buffer is written."""
        if self._closing:
            return
        self._closing = True
        if not self._buffer:
            self._close(None)

    def _close(self, exc: Optional[Exception]) -> None:
        if self._closed:
            return
        self._closing = self._closed = True
        if self._buffer:
            self._buffer.clear()
            self.loop.remove_writer(self.fd)
        self.pipe.close()
        self.on_closed(exc)
