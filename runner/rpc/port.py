"""port.* — free a TCP port by killing whatever listens on it (`plugkit kill-port`)."""

import asyncio
import os

from plugkit import errors
from plugkit.protocol.port import KilledProcess, PortKillParams, PortKillResult
from runner.rpc.dispatch import Context, rpc
from runner.system import ports


@rpc(PortKillParams)
async def kill(ctx: Context, p: PortKillParams) -> PortKillResult:
    """port.kill {port, caller_pid?} -> {port, killed: [{pid, command, processes}], survivors: [pid]}

    Kills each process listening on the port together with its descendants
    (TERM, 1 s grace, KILL). Nothing listening is not an error: `killed` is empty.
    Errors: -32002 when a listener belongs to another user, cannot be seen, is
    the runner itself, or has the runner or caller_pid among its descendants
    (then nothing is killed). The client frees the runner's own port locally.
    Example: {"method":"port.kill","params":{"port":8000}}
    """
    spare = {os.getpid(): "the plugkit runner itself"}
    if p.caller_pid and p.caller_pid != os.getpid():
        spare[p.caller_pid] = "the plugkit command that asked"
    try:
        # psutil scans /proc and the kill sleeps through a grace: off the event loop.
        freed, survivors = await asyncio.to_thread(ports.kill_port, p.port, spare)
    except ports.KillRefused as exc:
        hint = None
        if exc.pid == os.getpid():
            hint = {"next": f"plugkit kill-port {p.port} (the client frees the runner's own port "
                            "itself), or plugkit runner restart"}
        raise errors.RpcError(errors.FORBIDDEN, f"{exc}; not killing it", hint) from None
    return PortKillResult(port=p.port, survivors=survivors,
                          killed=[KilledProcess(pid=f.pid, command=f.command, processes=f.processes)
                                  for f in freed])


METHODS = {"port.kill": kill}
