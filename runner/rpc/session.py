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
    return SessionEnded(killed=await ctx.tasks.end_session(p.session_id, p.cwd))


METHODS = {"session.end": end}
