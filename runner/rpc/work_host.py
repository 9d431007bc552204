"""work.run, work.read, work.unhost (work.host, work.beats) — this runner runs an attempt that a
supervisor on another machine placed here (`plugkit work --runtime ray`: a Ray node's runner).

Called by the node side (runner/node/task.py) with this runner's own token;
a worker's capability is refused them (runner/rpc/scope.py's table has no row for them).
Errors: -32602 bad params; -32001 the owner process is gone (work.host, work.run), no worker
run here for the session (work.read); -32006 an endpoint the worker's loopback-only network
cannot relay, no worker sandbox here, the worker program not on PATH (work.host, work.run).
"""

import asyncio
import json
import os

from plugkit.protocol.work_host import (WorkBeats, WorkHosted, WorkHostedRef, WorkHostParams, WorkRead,
                                       WorkReadParams, WorkRelay, WorkRunning, WorkRunParams, WorkUnhosted)
from plugkit.refusals import Invalid, NotFound
from plugkit.vocab import WORKER_LANG
from runner.core.work.hosted import Hosted
from runner.core.tasks.manager import ExecSpec
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


WORKER_TIMEOUT_S = 7 * 24 * 3600.0  # the supervisor's stall watchdog and budget end a worker, not this
READ_MAX_BYTES = 256 << 10  # one work.read's output at most: a NodeEvent Out stays under its 1 MiB


@rpc(WorkRunParams)
async def run(ctx: Context, p: WorkRunParams) -> WorkRunning:
    """work.run {worktree, session_id, run, item, attempt, branch, base, owner_pid, network?=host,
    base_urls?, argv, stdin?, env, sandbox?=true} -> {task_id}

    Hosts the attempt as work.host does (its hook calls answered as a `plugkit work` worker's,
    counted as heartbeats) and starts its worker as a task of this runner, in the worker's
    session, through the worker executor a local worker runs by: its sandbox (fails closed),
    a capability scoped to its item shown at the token's path, its relay under
    network "loopback-model", its own cgroup, the kill of its whole tree. The task is tied to
    owner_pid (a pidfd): when that process ends, the task is killed (reason host_gone) and the
    hosting goes. Read it with work.read; end it with work.unhost.
    Example: {"method":"work.run","params":{"worktree":"/n/tmp/attempt-x/wt","session_id":
              "plugkit-work-ab12cd34-w1-1","run":"ab12cd34","item":"w1","attempt":1,"branch":"plugkit/w1",
              "base":"<40 hex>","owner_pid":4242,"argv":["claude","-p"],"stdin":"the prompt",
              "env":{"PATH":"/usr/bin","HOME":"/n/home"}}}
    """
    assert ctx.hosted is not None
    if not os.path.isdir(p.worktree):
        raise Invalid(f"no worktree at {p.worktree}")
    attempt = Hosted(run=p.run, id=p.item, attempt=p.attempt, session_id=p.session_id, worktree=p.worktree,
                     branch=p.branch, base=p.base, owner=(p.owner_pid, 0.0), network=p.network)
    try:
        h = await ctx.hosted.host(attempt, dict(p.base_urls), ctx.runtime.port, run=True)
    except ProcessLookupError as exc:
        raise NotFound(str(exc)) from None
    code = json.dumps({"argv": p.argv, "sandbox": p.sandbox, "run": p.run, "item": p.item, "network": p.network})
    try:
        task = await ctx.tasks.exec(ExecSpec(session_id=p.session_id, cwd=h.worktree, lang=WORKER_LANG, code=code,
                                             timeout_s=WORKER_TIMEOUT_S, stdin=p.stdin, environ=dict(p.env)))
    except BaseException:
        ctx.hosted.unhost(p.session_id)
        raise
    ctx.hosted.set_task(p.session_id, task, lambda: ctx.tasks.end(task, "killed", "host_gone"))
    log.info("work_attempt_run", run=p.run, item=p.item, attempt=p.attempt, session_id=p.session_id,
             task_id=task.id, owner=p.owner_pid, network=p.network, sandbox=p.sandbox)
    return WorkRunning(task_id=task.id)


@rpc(WorkReadParams)
async def read(ctx: Context, p: WorkReadParams) -> WorkRead:
    """work.read {session_id, cursor?=0, wait_s?=0.0} -> {task_id, data, cursor, dropped, beats,
    refusals, refused, ended, state, reason?, exit_code?, signal?}

    The worker's output from `cursor` (waiting up to wait_s for some, or for its end), with its
    heartbeat (its calls answered here) and, once `ended`, how it ended: its output, beats and
    end in one answer, so the node side has one loop, not a read loop and a beat poll.
    Answered until work.unhost, also after the task ended.
    """
    assert ctx.hosted is not None
    h = ctx.hosted.get(p.session_id)
    if h is None or h.task is None:
        raise NotFound(f"no worker run here for session {p.session_id}")
    task = h.task
    wake = task.changed()
    if p.wait_s > 0 and not task.finished and task.buffer.end <= p.cursor:
        try:
            async with asyncio.timeout(p.wait_s):
                await wake.wait()
        except TimeoutError:
            pass
    ended = task.finished  # read before the output: every byte is in the buffer once it is finished
    got = ctx.tasks.read(task, p.cursor, READ_MAX_BYTES)
    ended = ended and not got.more
    return WorkRead(task_id=task.id, data="".join(text for _, text in got.chunks), cursor=got.cursor,
                    dropped=got.dropped, beats=h.beats, refusals=h.refusals, refused=list(h.refused), ended=ended,
                    state=task.state, reason=task.reason if task.finished else None,
                    exit_code=task.exit_code, signal=task.signal)


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
    meet this runner as any session's again; a worker run here (work.run) is killed with its
    whole tree first, answered once it is gone. unhosted false: it was not hosted (any more).
    """
    assert ctx.hosted is not None
    h = ctx.hosted.get(p.session_id)
    if h is not None and h.task is not None:
        await ctx.tasks.end(h.task)  # before the capability goes: nothing of it runs on unhosted
    done = ctx.hosted.unhost(p.session_id)
    log.info("work_attempt_unhosted", session_id=p.session_id, was_hosted=done)
    return WorkUnhosted(unhosted=done)


METHODS = {"work.host": host, "work.beats": beats, "work.unhost": unhost, "work.run": run, "work.read": read}
