"""A process's end, told by the kernel: a pidfd (pidfd_open(2)) the event loop reads, never a
poll of /proc (a guard that polled once took a zombie owner for alive, and paid a wake-up per
interval for every attempt it held).

A pidfd names one process, not a pid number: a pid reused after the owner exited is not it.
It turns readable when the process exits (a zombie counts as exited), so a watch set on a
process that is already gone fires on the loop's next pass.
"""

import asyncio
import os
from typing import Callable


class Watch:
    """One watched process: cancel() stops the watch (idempotent); the callback then never runs."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self._fd, self._loop = fd, loop

    @property
    def active(self) -> bool:
        return self._fd >= 0

    def cancel(self) -> None:
        if self._fd < 0:
            return
        fd, self._fd = self._fd, -1
        self._loop.remove_reader(fd)
        os.close(fd)


def watch(pid: int, gone: Callable[[], None]) -> Watch:
    """Calls gone() on the running loop once, when process `pid` has ended.
    ProcessLookupError: there is no such process (now)."""
    fd = os.pidfd_open(pid)
    loop = asyncio.get_running_loop()
    w = Watch(fd, loop)

    def ready() -> None:
        if w.active:
            w.cancel()
            gone()

    loop.add_reader(fd, ready)
    return w
