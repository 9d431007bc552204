"""Whether a test's process is alive, read so that an exited child never looks alive.

A child that exited stays in /proc as a zombie until its parent reaps it: `os.kill(pid, 0)`,
`psutil.pid_exists` and a plain /proc read all still find it, and between a check and the
next read it may be reaped (NoSuchProcess). One reading here: a zombie, a gone pid, an
unreadable /proc entry are all "not alive".
"""

import time

from tests.support.load import stretched


def state(pid: int) -> str | None:
    """The state letter of pid (R, S, Z, ...), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2:][:1].decode() or None  # comm may hold ')': the state follows the last


def alive(pid: int) -> bool:
    return state(pid) not in (None, "Z", "X")


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    """True once pid is no longer alive (dead, a zombie, or reaped); False if it still lives at the
    deadline (`timeout` s stretched by the load: a killed process waits its turn for a CPU to exit)."""
    deadline = time.monotonic() + stretched(timeout)
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
