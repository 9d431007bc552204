"""This machine's resources that a caller names directly, not through a task: a TCP port to free
(`plugkit kill-port`) and the serial ports there are (`plugkit serial list`). The RPC layer asks
here, never runner/system; both calls block (psutil scans /proc and a kill sleeps through its
grace, pyserial walks sysfs), so both run off the event loop and other sessions keep being served.
"""

import asyncio
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from plugkit.refusals import Forbidden
from runner.system import ports
from runner.system import tags as tagnames

if TYPE_CHECKING:
    from runner.system.serial_devices import PortInfo


@dataclass(frozen=True)
class Owned:
    """A session's running tasks: a listener is theirs when its environment carries this runner's
    and one of these tasks' tags, or one of these task roots is its ancestor (a program that
    cleared its environment is still found by its parentage)."""
    runner_id: str
    task_ids: frozenset[int]
    pids: frozenset[int]

    def holds(self, tags: Optional[dict], ancestors: list[int]) -> bool:
        if tags and tags.get(tagnames.RUNNER_ID) == self.runner_id:
            task = tags.get(tagnames.TASK_ID, "")
            if task.isdigit() and int(task) in self.task_ids:
                return True
        return any(pid in self.pids for pid in ancestors)


async def kill_port(port: int, caller_pid: Optional[int],
                    owned: Optional[Owned] = None) -> tuple[list[ports.Freed], list[int]]:
    """Kill what listens on `port` with its descendants: (what was freed, survivors after KILL).
    Forbidden (nothing killed) when a listener is another user's, cannot be seen, is the runner
    itself, or has the runner or the calling command among its descendants, or, given `owned`,
    is not one of those tasks (a caller's --force passes None)."""
    spare = {os.getpid(): "the plugkit runner itself"}
    if caller_pid and caller_pid != os.getpid():
        spare[caller_pid] = "the plugkit command that asked"
    try:
        return await asyncio.to_thread(ports.kill_port, port, spare, mine=owned.holds if owned else None)
    except ports.KillRefused as exc:
        hint = None
        if exc.pid == os.getpid():
            hint = {"next": f"plugkit kill-port {port} (the client frees the runner's own port "
                            "itself), or plugkit runner restart"}
        elif exc.foreign:
            hint = {"next": f"plugkit kill-port {port} --force, if you mean to kill it"}
        raise Forbidden(f"{exc}; not killing it", hint) from None


async def serial_ports() -> "list[PortInfo]":
    """The serial ports pyserial finds, sorted by device."""
    # pyserial loads on the first serial.list, not with port.kill.
    from runner.system import serial_devices

    return await asyncio.to_thread(serial_devices.list_ports)
