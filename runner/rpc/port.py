"""port.* — free a TCP port by killing whatever listens on it (`plugkit kill-port`)."""

from plugkit.protocol.port import KilledProcess, PortKillParams, PortKillResult
from runner.core import machine
from runner.rpc.dispatch import Context, rpc


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
    freed, survivors = await machine.kill_port(p.port, p.caller_pid)
    return PortKillResult(port=p.port, survivors=survivors,
                          killed=[KilledProcess(pid=f.pid, command=f.command, processes=f.processes)
                                  for f in freed])


METHODS = {"port.kill": kill}
