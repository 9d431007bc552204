"""port.* — free a TCP port by killing whatever listens on it (`plugkit kill-port`)."""

from plugkit.protocol.port import KilledProcess, PortKillParams, PortKillResult
from runner.core import machine
from runner.core.tasks.sessions import session_key
from runner.rpc.dispatch import Context, rpc


def _owned(ctx: Context, p: PortKillParams) -> machine.Owned | None:
    """What the caller may kill without --force: its session's running tasks (None: anything)."""
    if p.force:
        return None
    key = session_key(p.session_id, p.cwd) if p.session_id and p.cwd else None
    found = [s for s in ctx.tasks.sessions() if key is not None and s.key == key]
    running = [t for s in found for t in s.tasks.values() if t.pid is not None and not t.finished]
    return machine.Owned(ctx.runtime.runner_id, frozenset(t.id for t in running), frozenset(t.pid for t in running))


@rpc(PortKillParams)
async def kill(ctx: Context, p: PortKillParams) -> PortKillResult:
    """port.kill {port, caller_pid?, session_id?, cwd?, force?=false}
    -> {port, killed: [{pid, command, processes}], survivors: [pid]}

    Kills each process listening on the port together with its descendants
    (TERM, 1 s grace, KILL). Nothing listening is not an error: `killed` is empty.
    Errors: -32002 when a listener belongs to another user, cannot be seen, is
    the runner itself, or has the runner or caller_pid among its descendants, or,
    unless `force`, is not one of the session's running tasks or their descendants
    (then nothing is killed). The client frees the runner's own port locally.
    Example: {"method":"port.kill","params":{"port":8000,"session_id":"s","cwd":"/w"}}
    """
    freed, survivors = await machine.kill_port(p.port, p.caller_pid, _owned(ctx, p))
    return PortKillResult(port=p.port, survivors=survivors,
                          killed=[KilledProcess(pid=f.pid, command=f.command, processes=f.processes)
                                  for f in freed])


METHODS = {"port.kill": kill}
