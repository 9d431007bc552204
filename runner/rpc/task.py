"""task.* — run code for a session and follow it. Every method that names a task
answers the same not-found error for an unknown id, another session's id or an
empty session id, so no caller can learn what other sessions run."""

from plugkit.protocol import (Output, SessionParams, TaskExecParams, TaskInfo, TaskInputParams,
                              TaskKillParams, TaskList, TaskOutputParams, TaskRef, TaskResult,
                              TaskWaitParams, WaitResult)
from runner.core.tasks.manager import TaskManager
from runner.rpc.dispatch import Context, rpc


def _tasks(ctx: Context) -> TaskManager:
    return ctx.tasks


@rpc(TaskExecParams)
async def exec_(ctx: Context, p: TaskExecParams) -> TaskResult:
    """task.exec {session_id, cwd, lang, code, timeout_ms?=300000, stdin?, env?, wait_ms?=0, max_bytes?}
    -> {task: TaskInfo, output: {chunks, cursor, dropped, more}}

    Starts the task and waits up to wait_ms for it to finish; never longer. The
    output returned counts as read by this session. `stdin`, when given, is
    written and then closed (EOF); without it stdin stays open for task.input.
    Errors: -32602 (unknown language, empty code, bad cwd), -32006 (interpreter
    missing), -32003 (task limits).
    Example: {"method":"task.exec","params":{"session_id":"s","cwd":"/w","lang":"python",
              "code":"print(1)","wait_ms":5000}}
    """
    return await _tasks(ctx).exec(p)


@rpc(TaskRef)
async def status(ctx: Context, p: TaskRef) -> TaskInfo:
    """task.status {session_id, cwd, task_id} -> TaskInfo (state, exit_code, signal, reason, ...)"""
    return (await _tasks(ctx).lookup(p.session_id, p.cwd, p.task_id)).info()


@rpc(TaskOutputParams)
async def output(ctx: Context, p: TaskOutputParams) -> Output:
    """task.output {session_id, cwd, task_id, cursor?, max_bytes?} -> {chunks, cursor, dropped, more}

    Without cursor: what this session has not read yet (and marks it read).
    With cursor: from that absolute offset; `dropped` counts bytes evicted before it.
    """
    tasks = _tasks(ctx)
    return tasks.output(await tasks.lookup(p.session_id, p.cwd, p.task_id), p.cursor, p.max_bytes)


@rpc(TaskWaitParams)
async def wait(ctx: Context, p: TaskWaitParams) -> WaitResult:
    """task.wait {session_id, cwd, task_id, timeout_ms?, until_text? | until_regex?, cursor?}
    -> {task, matched, match_cursor, timed_out}

    Returns when the task ends, the text appears after cursor (default: this
    session's read cursor), or timeout_ms passes.
    """
    tasks = _tasks(ctx)
    task = await tasks.lookup(p.session_id, p.cwd, p.task_id)
    return await tasks.wait(task, p.timeout_ms, p.until_text, p.until_regex, p.cursor)


@rpc(TaskInputParams)
async def input_(ctx: Context, p: TaskInputParams) -> TaskInfo:
    """task.input {session_id, cwd, task_id, data?, eof?} -> TaskInfo

    Writes data to the task's stdin; eof closes it. Errors: -32005 if the task ended
    or its stdin is closed.
    """
    tasks = _tasks(ctx)
    return tasks.write_input(await tasks.lookup(p.session_id, p.cwd, p.task_id), p.data, p.eof)


@rpc(TaskKillParams)
async def kill(ctx: Context, p: TaskKillParams) -> TaskInfo:
    """task.kill {session_id, cwd, task_id, forget?} -> TaskInfo

    TERM to the task's process group, a grace, KILL, then a sweep of every process
    carrying the task's tag. With forget, the task is dropped from the session.
    """
    tasks = _tasks(ctx)
    return await tasks.kill(await tasks.lookup(p.session_id, p.cwd, p.task_id), p.forget)


@rpc(SessionParams)
async def list_(ctx: Context, p: SessionParams) -> TaskList:
    """task.list {session_id, cwd} -> {tasks: [TaskInfo]} (only this session's)"""
    return _tasks(ctx).list_tasks(p.session_id, p.cwd)


METHODS = {
    "task.exec": exec_, "task.status": status, "task.output": output, "task.wait": wait,
    "task.input": input_, "task.kill": kill, "task.list": list_,
}
