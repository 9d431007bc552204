"""work.host, work.beats, work.unhost — this runner hosts an attempt that a supervisor on
another machine placed here (`plugkit work --runtime ray`: a Ray node's runner).

Called by the node side (runner/node/task.py) with this runner's own token;
a worker's capability is refused them (runner/rpc/scope.py's table has no row for them).
Errors: -32602 bad params; -32001 the owner process is gone (work.host); -32006 an endpoint
the worker's loopback-only network cannot relay (work.host).
"""

import os

from plugkit.protocol.work_host import (WorkBeats, WorkHosted, WorkHostedRef, WorkHostParams, WorkRelay,
                                       WorkUnhosted)
from plugkit.refusals import Invalid, NotFound
from runner.core.work.hosted import Hosted
from runner.rpc.dispatch import Context, rpc
from runner.system import logs

log = logs.get("plugkit.work")


@rpc(WorkHostParams)
async def host(ctx: Context, p: WorkHostParams) -> WorkHosted:
    """work.host {worktree, session_id, run, item, attempt, branch, base, owner_pid, network?=host, base_urls?}
    -> {capability, relay?: {folder, ports}}

    From now until work.unhost (or until the owner process is gone), a hook call carrying
    worker_session = session_id from inside the worktree is answered as a `plugkit work`
    worker's: the destructive-command policy at PreToolUse (and on its exec: code), Stop turned
    back once while nothing is committed past `base`, context lines naming the item; each one
    counted (work.beats). `capability`: a 0600 file holding a capability scoped to the worktree,
    session and item, for the worker's sandbox to show at the token's path. network
    "loopback-model": this runner starts the worker's relay to the endpoints base_urls name and to
    itself, and `relay` says where its sockets are and which ports the inside half listens on.
    Hosting the same session again replaces the earlier one (its capability revoked).
    Example: {"method":"work.host","params":{"worktree":"/n/tmp/attempt-x/wt","session_id":
              "plugkit-work-ab12cd34-w1-1","run":"ab12cd34","item":"w1","attempt":1,
              "branch":"plugkit/w1","base":"<40 hex>","owner_pid":4242}}
    """
    assert ctx.hosted is not None
    if not os.path.isdir(p.worktree):
        raise Invalid(f"no worktree at {p.worktree}")
    attempt = Hosted(run=p.run, id=p.item, attempt=p.attempt, session_id=p.session_id, worktree=p.worktree,
                     branch=p.branch, base=p.base, owner=(p.owner_pid, 0.0), network=p.network)
    try:
        h = await ctx.hosted.host(attempt, dict(p.base_urls), ctx.runtime.port)
    except ProcessLookupError as exc:
        raise NotFound(str(exc)) from None
    log.info("work_attempt_hosted", run=p.run, item=p.item, attempt=p.attempt, session_id=p.session_id,
             network=p.network)
    relay = None if h.relay is None else WorkRelay(folder=h.relay.folder, ports=sorted(h.relay.targets))
    return WorkHosted(capability=h.capability, relay=relay)


@rpc(WorkHostedRef)
async def beats(ctx: Context, p: WorkHostedRef) -> WorkBeats:
    """work.beats {session_id} -> {beats, hosted, refusals, refused}

    How many of the hosted worker's calls this runner has answered (hooks, exec:); hosted false
    once it is not hosted here (never was, unhosted, its owner gone, this runner restarted).
    refusals: how many of its calls its capability was refused; refused: the last 20 of them.
    """
    assert ctx.hosted is not None
    h = ctx.hosted.get(p.session_id)
    if h is None:
        return WorkBeats()
    return WorkBeats(beats=h.beats, hosted=True, refusals=h.refusals, refused=list(h.refused))


@rpc(WorkHostedRef)
async def unhost(ctx: Context, p: WorkHostedRef) -> WorkUnhosted:
    """work.unhost {session_id} -> {unhosted}

    Ends the hosting: the worker's capability is revoked and its file removed; its hook calls
    meet this runner as any session's again. unhosted false: it was not hosted (any more).
    """
    assert ctx.hosted is not None
    done = ctx.hosted.unhost(p.session_id)
    log.info("work_attempt_unhosted", session_id=p.session_id, was_hosted=done)
    return WorkUnhosted(unhosted=done)


METHODS = {"work.host": host, "work.beats": beats, "work.unhost": unhost}
