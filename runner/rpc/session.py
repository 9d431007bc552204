"""session.* — a session is (session_id, workspace root of the cwd): runner/core/tasks/sessions.py."""

from plugkit.protocol import SessionEnded, SessionParams
from runner.rpc.dispatch import Context, rpc


@rpc(SessionParams)
async def end(ctx: Context, p: SessionParams) -> SessionEnded:
    """session.end {session_id, cwd} -> {killed: [task ids]}

    Kills every running task of the session (whole trees) and forgets all its tasks, but
    those started with detach, which run on in it. Ending an unknown session is not an
    error: there is simply nothing to kill.
    """
    killed = await ctx.tasks.end_session(p.session_id, p.cwd)
    gates = ctx.gates.peek() if ctx.gates is not None else None  # gates not open yet: nothing to sign
    if gates is not None:
        await gates.seal_ledger("session ended")  # the gate ledger's head signed at each session's end
    return SessionEnded(killed=killed)


METHODS = {"session.end": end}
