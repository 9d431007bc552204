"""What a sandboxed worker's capability may call (plugkit/work/capabilities.py): a table.

A worker holds a capability, never the runner's token. With it, every call must name a cwd
inside its own worktree (realpath: a symlink out of it does not count), so the session it
reaches is one rooted there: its own. On top of that, by method:
  IN_WORKTREE  its hooks, its exec: tasks (task.*), and reads of its own worktree's plan,
               evidence and runs: allowed there;
  OWN_ITEM     a change to an item: only its own item (the field named);
  and no detached task (it would outlive the worker);
  anything else (approvals, `gate confirm-config`, phase moves, new items, checks run
  outside the sandbox (gate.verify, prd.verify), work runs,
  port kills, runner shutdown, memory writes, debug): refused, and kept on its item.
A method missing from the table is refused: a new method is closed to workers until a row
says otherwise.
"""

import os
from typing import Any, Optional

from jsonrpcserver import Error

from plugkit.refusals import Forbidden
from runner.rpc import errors as rpc_errors
from runner.rpc.context import Context
from plugkit.work.capabilities import Capability

IN_WORKTREE = frozenset({
    "hook.session_start", "hook.prompt", "hook.pre_tool", "hook.stop", "hook.session_end",
    "task.exec", "task.status", "task.output", "task.wait", "task.input", "task.kill", "task.list",
    "session.end", "gate.status", "gate.check", "gate.stop", "gate.context",
    "prd.list", "prd.ready", "evidence.add", "evidence.list", "evidence.show", "evidence.verify",
    "mutable.list", "memory.list", "memory.show", "memory.search", "search.query", "search.digest",
    "work.status", "work.logs", "work.runs", "work.events",
})
# method -> the field naming the item it changes, which must be the worker's own.
OWN_ITEM = {"prd.update": "id"}
# Not there on purpose: gate.verify and prd.verify run a check the worktree's own files name,
# as a task outside any sandbox; the runner runs the item's check itself, in the sandbox.


def _inside(cwd: Any, worktree: str) -> bool:
    if not isinstance(cwd, str):
        return False
    real = os.path.realpath(cwd)
    return real == worktree or real.startswith(worktree + os.sep)


def why_refused(cap: Capability, name: str, params: dict[str, Any]) -> Optional[str]:
    """Why this capability may not make this call, or None (pure: unit-tested)."""
    if name not in IN_WORKTREE and name not in OWN_ITEM:
        return f"{name} is a person's or the runner's to call, not a worker's"
    field = OWN_ITEM.get(name)
    if not _inside(params.get("cwd"), cap.worktree):  # the item it aimed at, too: the evidence says what was tried
        aimed = f" on {str(params.get(field))[:80]}" if field is not None else ""
        return f"{name}{aimed} outside its worktree ({str(params.get('cwd'))[:200]})"
    if field is not None and params.get(field) != cap.item:
        return f"{name} on {str(params.get(field))[:80]}, not its own item {cap.item}"
    if name == "task.exec" and params.get("detach"):  # a task outliving its session would outlive the worker
        return "task.exec --detach: a worker's tasks end with it"
    return None


def refusal(ctx: Context, cap: Capability, name: str, params: dict[str, Any]) -> Optional[Error]:
    """The error answering a capability's call outside its scope (kept on its item); None if allowed."""
    why = why_refused(cap, name, params)
    if why is None:
        return None
    manager = ctx.work.peek() if ctx.work is not None else None
    found = manager.worker_at(cap.worktree, beat=False) if manager is not None else None
    if found is not None:
        manager.refused(found[0], found[1], why)
    elif ctx.hosted is not None:  # a worker hosted for a supervisor elsewhere: relayed to its item there
        ctx.hosted.refused(cap.session_id, why)
    exc = rpc_errors.wire(Forbidden(
        f"plugkit work: a worker's capability reaches its own item and worktree only ({cap.item}, "
        f"{cap.worktree}); {why}: say so in your final message"))
    ctx.runtime.errors[exc.code] += 1
    return Error(exc.code, exc.message)
