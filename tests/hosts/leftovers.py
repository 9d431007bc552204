"""A task an agent leaves running in the background, found by its own `sleep` duration: for the
tests that a host's session-end hook has the runner kill it when the host exits."""

import os
import signal
import time


def marker_for(name: str) -> str:
    """A `sleep` duration no other sleep on the machine has (the host's name, this process)."""
    return f"{117 + len(name)}.{os.getpid() % 1000:03d}"


def sleepers(marker: str) -> list[int]:
    """Pids of the `sleep <marker>` processes alive now (a zombie's cmdline is empty: not counted)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    argv = fh.read().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", marker.encode()]:
                found.append(int(entry))
    return found


def outlived(marker: str, limit_s: float = 20.0) -> list[int]:
    """The sleepers still alive after up to limit_s (the hook's RPC returns before the kill's grace ends)."""
    deadline = time.monotonic() + limit_s
    while sleepers(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    return sleepers(marker)


def kill_sleepers(marker: str) -> None:
    for pid in sleepers(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
