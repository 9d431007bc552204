"""A `plugkit work` worker acts on its own item only: the guard for workers run with a
person's --no-sandbox (a sandboxed worker holds a capability instead of the token, and
runner/rpc/scope.py answers it first).

Such a worker holds the runner's home (runner/executors/worker.py: its hooks must reach
this runner), so the token says nothing about who calls: the calling process does.
While workers run, each call that changes a workspace's plan, gates, evidence, approvals
or runs (GUARDED) is traced to its caller (runner.system.peers finds the process holding
the connection; runner.executors.worker.task_of its task, by ancestry tags, then cgroup:
both reached through the work manager).
From a worker's process tree, or a task the worker ran through the runner, such a call is
allowed only inside the worker's own worktree; aimed anywhere else (the person's checkout
with `--cwd`, another workspace) it is refused and logged on the worker's item. Reads
(status, lists, logs) stay open: a worker may look at the run it is part of.

A caller the runner cannot trace is let through (a person's call must not fail because
/proc could not be read); a worker runs as the same user, so its processes are traced.
"""

from typing import Any, Optional

from jsonrpcserver import Error

from plugkit.refusals import Forbidden
from runner.rpc import errors as rpc_errors
from runner.rpc.context import PEER, Context

GUARDED = frozenset({"prd.add", "prd.update", "prd.verify", "evidence.add", "mutable.add", "mutable.resolve",
                     "gate.advance", "gate.retreat", "gate.emit", "gate.verify", "gate.restore", "approval.grant",
                     "work.start", "work.stop", "work.rollback", "work.allow_check", "work.resume"})
_TARGETS = ("id", "item_id", "item", "subject")


async def refusal(ctx: Context, name: str, params: dict[str, Any]) -> Optional[Error]:
    """The error answering a worker's call on what is not its own; None for every other call."""
    manager = ctx.work.peek() if ctx.work is not None else None
    peer = PEER.get()
    if manager is None or not manager.has_workers or not peer:
        return None
    worker = await manager.worker_calling(peer, ctx.runtime.port, ctx.runtime.home)
    if worker is None:
        return None
    run, it = worker
    cwd = params.get("cwd")
    if isinstance(cwd, str) and manager.owner_of(cwd) is it:
        return None  # its own worktree: its own copy of the plan, nothing lands from there but commits
    target = next((str(params[k])[:80] for k in _TARGETS if isinstance(params.get(k), str)), "")
    manager.refused(run, it, f"{name} {target} in {str(cwd)[:200]}".replace("  ", " "))
    exc = rpc_errors.wire(Forbidden(
        f"plugkit work: a worker acts on its own item only ({it.id}, in {it.worktree}); {name} on "
        f"{target or 'this'} in {cwd} is a person's or the runner's to do: say so in your final message"))
    ctx.runtime.errors[exc.code] += 1
    return Error(exc.code, exc.message)
