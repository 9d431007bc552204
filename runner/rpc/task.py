"""task.* — run code for a session and follow it. Every method that names a task
answers the same not-found error for an unknown id, another session's id or an
empty session id, so no caller can learn what other sessions run."""

from plugkit.protocol import (Chunk, Output, SessionParams, StreamCut, TaskExecParams, TaskInfo, TaskInputParams,
                              TaskKillParams, TaskLast, TaskLastParams, TaskList, TaskOutputParams, TaskRef, TaskResult,
                              TaskWaitParams, WaitResult)
from plugkit.refusals import Forbidden, Invalid
from plugkit.workspace import root_or_none
from plugkit.vocab import WORKER_LANG
from runner.core.tasks import bound, stdin_watch
from runner.core.tasks.manager import ExecSpec, TaskManager, Waited
from runner.core.tasks.output import OutputBuffer
from runner.rpc import exec_sandbox, shapes
from runner.rpc.context import PEER
from runner.rpc.dispatch import Context, rpc


def _tasks(ctx: Context) -> TaskManager:
    return ctx.tasks


@rpc(TaskExecParams)
async def exec_(ctx: Context, p: TaskExecParams) -> TaskResult:
    """task.exec {session_id, cwd, lang, code, timeout_ms?=300000, stdin?, env?, environ?, detach?, caller_pid?,
    wait_ms?=0, max_bytes?, sandbox?=false, name?}
    -> {task: TaskInfo, output: {chunks, cursor, dropped, more}}

    Starts the task and waits up to wait_ms for it to finish; never longer. The
    output returned counts as read by this session. `stdin`, when given, is
    written and then closed (EOF); without it stdin stays open for task.input. `environ` is the
    caller's environment, the task's base (else the runner's); `env` is set over it. `detach`:
    the task outlives its session (session end, its agent host exiting). `sandbox`: in the worker
    sandbox (also forced by exec_sandbox and for a worker's capability). `caller_pid`: the
    caller's pid; the agent host above it ties the session (runner/core/tasks/hosts.py).
    Errors: -32602 (unknown language, empty code, bad cwd; lang "worker", which only
    `plugkit work` starts), -32006 (interpreter missing), -32003 (task limits).
    Example: {"method":"task.exec","params":{"session_id":"s","cwd":"/w","lang":"python",
              "code":"print(1)","wait_ms":5000}}
    """
    if p.lang.strip().lower() == WORKER_LANG:
        # A worker task is handed the runner's home (where the token is): from the wire it
        # would give any caller's code the token, so only the runner's work engine starts one.
        raise Invalid("worker tasks are started by plugkit work only")
    tasks = _tasks(ctx)
    worker = ctx.worker_at(p.cwd)
    it = worker[1] if worker is not None else ctx.hosted_at(p.cwd)  # hosted: a remote supervisor's worker here
    if it is not None:  # code a `plugkit work` worker runs through exec: meets its policy too
        from runner.core.work.hooks import denied_code

        why = denied_code(it, p.lang, p.code, p.cwd)
        if why is not None:
            raise Forbidden(why)
    workspace = root_or_none(p.cwd)  # once per exec: the sandbox check, the session and the plugins
    task = await tasks.exec(ExecSpec(session_id=p.session_id, cwd=p.cwd, lang=p.lang, code=p.code,
                                     timeout_s=p.timeout_ms / 1000, stdin=p.stdin, env=p.env, environ=p.environ,
                                     detach=p.detach, peer=PEER.get(), caller_pid=p.caller_pid,
                                     sandbox=await exec_sandbox.wanted(ctx, p, workspace),
                                     offline=exec_sandbox.offline(), workspace=workspace, name=p.name,
                                     docker=exec_sandbox.docker()))
    if worker is not None:  # the attempt's trace names every task its worker ran
        journal = ctx.journal_of(worker[1])
        if journal is not None:
            journal.exec(worker[1], task.id, p.lang, p.code)
    await tasks.wait_done(task, p.wait_ms / 1000)
    return TaskResult(task=shapes.task_info(task), output=shapes.output(tasks.read(task, None, p.max_bytes)))


@rpc(TaskRef)
async def status(ctx: Context, p: TaskRef) -> TaskInfo:
    """task.status {session_id, cwd, task_id} -> TaskInfo (state, exit_code, signal, reason, name, command,
    ports its running tree listens on, cpu_s/memory_bytes live where a cgroup measures it, ...)"""
    tasks = _tasks(ctx)
    task = await tasks.lookup(p.session_id, p.cwd, p.task_id)
    return shapes.task_info(task, (await tasks.listening_ports([task])).get(task.id))


@rpc(TaskOutputParams)
async def output(ctx: Context, p: TaskOutputParams) -> Output:
    """task.output {session_id, cwd, task_id, cursor?, max_bytes?, tails?, head_share?, mark_read?}
    -> {chunks, cursor, dropped, more, cuts?}

    Without cursor: what this session has not read yet (and marks it read).
    With cursor: from that absolute offset; `dropped` counts bytes evicted before it.
    With tails: everything from the cursor to the end in at most max_bytes, shared
    by the streams so each keeps its last bytes (and its first, if none were before
    the cursor); `cuts` says per stream how much there was and how much is shown.
    Cuts fall on line ends where the kept bytes hold one; head_share (default 0.5) is
    the part of a stream's budget spent on its first bytes. Marks nothing read, unless
    mark_read: then the session's cursor moves to the end (a poll: the next one shows
    only what is new; what was cut is still there for a read with an explicit cursor).
    """
    tasks = _tasks(ctx)
    task = await tasks.lookup(p.session_id, p.cwd, p.task_id)
    if p.tails:
        got = _tails(task.buffer, task.read_cursor if p.cursor is None else p.cursor, p.max_bytes, p.head_share)
        if p.mark_read:
            tasks.mark_read(task, got.cursor)
        return got
    return shapes.output(tasks.read(task, p.cursor, p.max_bytes))


def _tails(buffer: OutputBuffer, cursor: int, max_bytes: int, head_share: float) -> Output:
    got = bound.digest(buffer, cursor, max_bytes, head_share)
    return Output(chunks=[Chunk(stream=s, text=t) for s, t in got.pieces], cursor=got.end,
                  dropped=max(0, buffer.start - cursor), more=False, start=buffer.start,
                  cuts=[StreamCut(stream=c.stream, total=c.total, shown=c.shown) for c in got.cuts])


@rpc(TaskWaitParams)
async def wait(ctx: Context, p: TaskWaitParams) -> WaitResult:
    """task.wait {session_id, cwd, task_id, timeout_ms?, until_text? | until_regex?, cursor?}
    -> {task, matched, match_cursor, timed_out}

    Returns when the task ends, the text appears after cursor (default: this
    session's read cursor), timeout_ms passes, or the task is seen blocked reading
    its stdin (task.waiting_for_input; neither matched nor timed_out).
    """
    tasks = _tasks(ctx)
    task = await tasks.lookup(p.session_id, p.cwd, p.task_id)
    # Blocked on its stdin: answer now (neither matched nor timed out), task.waiting_for_input says why.
    waited = await stdin_watch.wait(task, tasks.wait(task, p.timeout_ms / 1000, p.until_text, p.until_regex,
                                                     p.cursor), Waited(matched=False, match_cursor=None,
                                                                        timed_out=False))
    return shapes.waited(task, waited)


@rpc(TaskInputParams)
async def input_(ctx: Context, p: TaskInputParams) -> TaskInfo:
    """task.input {session_id, cwd, task_id, data?, eof?} -> TaskInfo

    Writes data to the task's stdin; eof closes it. Errors: -32005 if the task ended
    or its stdin is closed.
    """
    tasks = _tasks(ctx)
    task = await tasks.lookup(p.session_id, p.cwd, p.task_id)
    await tasks.write_input(task, p.data, p.eof)
    return shapes.task_info(task)


@rpc(TaskKillParams)
async def kill(ctx: Context, p: TaskKillParams) -> TaskInfo:
    """task.kill {session_id, cwd, task_id, forget?} -> TaskInfo

    TERM to the task's process group, a grace, KILL, then a sweep of every process
    carrying the task's tag. With forget, the task is dropped from the session.
    """
    tasks = _tasks(ctx)
    task = await tasks.lookup(p.session_id, p.cwd, p.task_id)
    await tasks.kill(task, p.forget)
    return shapes.task_info(task)


@rpc(SessionParams)
async def list_(ctx: Context, p: SessionParams) -> TaskList:
    """task.list {session_id, cwd} -> {tasks: [TaskInfo]} (with ports and live usage, as task.status) (only this session's, in id order;
    the ledger's too, so a restart loses none: those of a runner gone are killed/runner_lost)"""
    tasks = _tasks(ctx)
    listed = await tasks.list_with_history(p.session_id, p.cwd)
    ports = await tasks.listening_ports(listed)
    return TaskList(tasks=[shapes.task_info(t, ports.get(t.id)) for t in listed])


@rpc(TaskLastParams)
async def last(ctx: Context, p: TaskLastParams) -> TaskLast:
    """task.last {session_id, cwd, caller_pid?} -> {task_id}

    The newest finished task of this session, or of a session of the same workspace tied to
    the agent host the caller (caller_pid, checked to hold this connection) runs under; task_id
    is null when there is none. `mutable resolve NAME last` and `evidence add --task last` ask it.
    Example: {"method":"task.last","params":{"session_id":"s","cwd":"/w","caller_pid":4242}}
    """
    return TaskLast(task_id=await _tasks(ctx).last_finished(p.session_id, p.cwd, PEER.get(), p.caller_pid))


METHODS = {
    "task.exec": exec_, "task.status": status, "task.output": output, "task.wait": wait,
    "task.input": input_, "task.kill": kill, "task.list": list_,
    "task.last": last,
}
