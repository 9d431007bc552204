"""Chromium's DevTools over `--remote-debugging-pipe`: two anonymous pipes, NUL-delimited JSON.

No socket exists, so no other user (and no other process of ours) can reach DevTools: a
listening port on 127.0.0.1 has no owner check, and DevTools has no authentication.
Chromium reads commands from its fd 3 and writes responses and events to its fd 4;
`ChildPipes.setup_child` puts our pipe ends there (and ties the child to our life, see there).

`PipeTransport` is what pyppeteer's Connection needs from a websocket: `async with` yields
something with `recv()`, `send(text)` and `close()`; `recv()` raises ConnectionResetError
once Chromium's end is closed (it exited or crashed), which pyppeteer's reader treats as a
closed connection.
"""

from __future__ import annotations

import asyncio
import ctypes
import fcntl
import os
import signal
from dataclasses import dataclass
from typing import Optional

# Chromium's whole DevTools traffic is one stream: a full-page screenshot arrives as a single
# message of tens of MiB. The limit only bounds one message (a Chromium gone mad), not memory use.
MAX_MESSAGE = 512 * 1024 * 1024
CHILD_IN_FD, CHILD_OUT_FD = 3, 4  # fixed by Chromium's --remote-debugging-pipe
_PR_SET_PDEATHSIG = 1

# Resolved here, in the parent: the child between fork and exec should only call, not load.
_libc = ctypes.CDLL(None, use_errno=True)


class PipeTransport:
    """Our ends of the two pipes, framed into whole messages."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.WriteTransport) -> None:
        self._reader, self._writer = reader, writer

    @classmethod
    async def open(cls, read_fd: int, write_fd: int) -> "PipeTransport":
        """Takes ownership of both fds (closed with the transport)."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_MESSAGE)
        rfile, wfile = os.fdopen(read_fd, "rb", 0), os.fdopen(write_fd, "wb", 0)
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), rfile)
        except BaseException:
            rfile.close()
            wfile.close()
            raise
        try:
            writer, _ = await loop.connect_write_pipe(asyncio.Protocol, wfile)
        except BaseException:
            wfile.close()
            raise
        return cls(reader, writer)

    async def __aenter__(self) -> "PipeTransport":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def recv(self) -> str:
        try:
            frame = await self._reader.readuntil(b"\0")
        except asyncio.IncompleteReadError:
            raise ConnectionResetError("Chromium closed its DevTools pipe") from None
        except asyncio.LimitOverrunError:
            raise ConnectionResetError(f"a DevTools message passed {MAX_MESSAGE} bytes") from None
        return frame[:-1].decode("utf-8")

    async def send(self, message: str) -> None:
        # After Chromium died the write end is closing: drop the message. pyppeteer fails every
        # call still waiting for an answer once recv() reports the closed pipe.
        if not self._writer.is_closing():
            self._writer.write(message.encode("utf-8") + b"\0")

    @property
    def closed(self) -> bool:
        return self._writer.is_closing()

    async def close(self) -> None:
        self._writer.close()
        # The read side has no close on StreamReader: end it through its transport.
        transport = getattr(self._reader, "_transport", None)
        if transport is not None:
            transport.close()


@dataclass
class ChildPipes:
    """The four ends of a fresh pipe pair, before the spawn. After it, `parent_ends()` are ours
    and the child ends are closed here (the child keeps its copies at fds 3 and 4)."""

    child_in: int    # Chromium reads commands here (its fd 3)
    parent_out: int  # we write commands here
    parent_in: int   # we read answers here
    child_out: int   # Chromium writes answers here (its fd 4)
    parent_pid: int = 0

    @classmethod
    def create(cls) -> "ChildPipes":
        child_in, parent_out = os.pipe()
        try:
            parent_in, child_out = os.pipe()
        except OSError:
            os.close(child_in)
            os.close(parent_out)
            raise
        return cls(child_in, parent_out, parent_in, child_out, os.getpid())

    def setup_child(self) -> None:
        """preexec_fn, in the child between fork and exec (spawn with close_fds=False):

        - Our ends move to fds 3 and 4, through fds >= 10 first, so that one end already
          sitting on 3 or 4 is not overwritten by the other's dup2. Not Popen's pass_fds: its
          fds keep their numbers, and 3 or 4 may be Popen's own pipe ends in the child.
        - Then every other inheritable fd is closed, which is what close_fds would have done
          (after preexec_fn, so it would close 3 and 4 too). The runner's own fds are
          close-on-exec already; this catches those inherited from whoever started the runner,
          and the two high copies.
        - PR_SET_PDEATHSIG: the kernel sends SIGKILL to Chromium when the thread that forked
          it (the runner's event loop thread, alive as long as the runner) dies, kill -9
          included. Chromium's helpers (zygote, renderers, GPU) exit when their browser's IPC
          channel closes. It survives the exec of the (non-setuid) chromium wrapper script.
          If the runner died before the prctl, the signal would never come: exit instead.
        """
        high_in = fcntl.fcntl(self.child_in, fcntl.F_DUPFD, 10)
        high_out = fcntl.fcntl(self.child_out, fcntl.F_DUPFD, 10)
        os.dup2(high_in, CHILD_IN_FD)
        os.dup2(high_out, CHILD_OUT_FD)
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            try:
                if fd > CHILD_OUT_FD and os.get_inheritable(fd):
                    os.close(fd)
            except OSError:  # the listing's own fd, closed by now
                pass
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != self.parent_pid:
            os._exit(1)

    def close_child_ends(self) -> None:
        for fd in (self.child_in, self.child_out):
            _close(fd)

    def close_all(self) -> None:
        for fd in (self.child_in, self.child_out, self.parent_in, self.parent_out):
            _close(fd)


def _close(fd: Optional[int]) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
