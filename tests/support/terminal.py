"""A test's own terminal: a process made the session leader of a pseudo-terminal (as a shell in a
terminal window runs), and reading what the terminal shows until a text appears."""

import fcntl
import os
import pty
import select
import subprocess
import termios
import time

from tests.support.runner_home import cli_argv


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


def at_terminal(home, repo, *args: str) -> str:
    """A plugkit verb's output as a terminal receives it (stdout a pseudo-terminal)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(cli_argv() + list(args), stdin=subprocess.DEVNULL, stdout=follower,
                                stderr=subprocess.DEVNULL, env=home.env, cwd=str(repo))
        os.close(follower)
        follower = -1
        seen = _read_until(leader, b"\0never\0", timeout=20) if proc.wait(60) is not None else b""
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    return seen.decode("utf-8", "replace")
