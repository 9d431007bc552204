"""This machine's resources that a caller names directly, not through a task: a TCP port to free
(`plugkit kill-port`) and the serial ports there are (`plugkit serial list`). The RPC layer asks
here, never runner/system; both calls block (psutil scans /proc and a kill sleeps through its
grace, pyserial walks sysfs), so both run off the event loop and other sessions keep being served.
"""

import asyncio
import os
from typing import TYPE_CHECKING, Optional

from plugkit.refusals import Forbidden
from runner.system import ports

if TYPE_CHECKING:
    from runner.system.serial_devices import PortInfo


async def kill_port(port: int, caller_pid: Optional[int]) -> tuple[list[ports.Freed], list[int]]:
    """Kill what listens on `port` with its descendants: (what was freed, survivors after KILL).
    Forbidden (nothing killed) when a listener is another user's, cannot be seen, is the runner
    itself, or has the runner or the calling command among its descendants."""
    spare = {os.getpid(): "the plugkit runner itself"}
    if caller_pid and caller_pid != os.getpid():
        spare[caller_pid] = "the plugkit command that asked"
    try:
        return await asyncio.to_thread(ports.kill_port, port, spare)
    except ports.KillRefused as exc:
        hint = None
        if exc.pid == os.getpid():
            hint = {"next": f"plugkit kill-port {port} (the client frees the runner's own port "
                            "itself), or plugkit runner restart"}
        raise Forbidden(f"{exc}; not killing it", hint) from None


async def serial_ports() -> "list[PortInfo]":
    """The serial ports pyserial finds, sorted by device."""
    # pyserial loads on the first serial.list, not with port.kill.
    from runner.system import serial_devices

    return await asyncio.to_thread(serial_devices.list_ports)
