"""A test's own terminal: a process made the session leader of a pseudo-terminal (as a shell in a
terminal window runs), and reading what the terminal shows until a text appears."""

import fcntl
import os
import select
import termios
import time


def _read_until(fd: int, text: bytes, timeout: float = 20) -> bytes:
    seen, deadline = b"", time.monotonic() + timeout
    while text not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen


def _controlling_tty() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
