"""work.run, work.read, work.unhost — this runner runs an attempt that a supervisor on another
machine placed here (`plugkit work --runtime ray`: a Ray node's runner).

Called by the node side (runner/node/task.py) with this runner's own token;
a worker's capability is refused them (runner/rpc/scope.py's table has no row for them).
Errors: -32602 bad params; -32001 the owner process is gone (work.run), no worker run here for
the session (work.read); -32006 an endpoint the worker's loopback-only network cannot relay, no
worker sandbox here, the worker program not on PATH (work.run).
"""

import asyncio
import json
import os

from plugkit.protocol.work_host import (WorkHostedRef, WorkRead, WorkReadParams, WorkRunning, WorkRunParams,
                                       WorkUnhosted)
from plugkit.refusals import Invalid, NotFound
from plugkit.vocab import WORKER_LANG
from runner.core.work.hosted import Hosted
from runner.core.tasks.manager import ExecSpec
from runner.rpc.dispatch import Context, rpc
from runner.system import logs

log = logs.get("plugkit.work")


WORKER_TIMEOUT_S = 7 * 24 * 3600.0  # the supervisor's stall watchdog and budget end a worker, not this
READ_MAX_BYTES = 256 << 10  # one work.read's output at most: a NodeEvent Out stays under its 1 MiB


@rpc(WorkRunParams)
async def run(ctx: Context, p: WorkRunParams) -> WorkRunning:
    """work.run {worktree, session_id, run, item, attempt, branch, base, owner_pid, network?=host,
    argv, stdin?, env, sandbox?=true} -> {task_id}

    From now until work.unhost (or until the owner process is gone), a hook call carrying
    worker_session = session_id from inside the worktree is answered as a `plugkit work`
    worker's: the destructive-command policy at PreToolUse (and on its exec: code), Stop turned
    back once while nothing is committed past `base`, context lines naming the item; each one
    counted (the heartbeat work.read reports). Its worker is started as a task of this runner,
    in the worker's session, through the worker executor a local worker runs by: its sandbox (fails closed),
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
                     branch=p.branch, base=p.base, owner=p.owner_pid, network=p.network)
    try:
        h = ctx.hosted.host(attempt)
    except ProcessLookupError as exc:
        raise NotFound(str(exc)) from None
    code = json.dumps({"argv": p.argv, "sandbox": p.sandbox, "run": p.run, "item": p.item, "network": p.network})
    try:
        task = await ctx.tasks.exec(ExecSpec(session_id=p.session_id, cwd=h.worktree, lang=WORKER_LANG, code=code,
                                             timeout_s=WORKER_TIMEOUT_S, stdin=p.stdin, environ=dict(p.env)))
    except BaseException:
        ctx.hosted.unhost(p.session_id)
        raise
    ctx.hosted.set_task(h, task, lambda: ctx.tasks.end(task, "killed", "host_gone"))
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


METHODS = {"work.run": run, "work.read": read, "work.unhost": unhost}
